"""For every test folder: the commands the tests start see Ctrl-C as they would in a terminal.

A shell starts a background job (``make test &``, ``nohup``) with SIGINT ignored, and every process it starts
inherits that: the tests that send Ctrl-C to a process of their own (a pip build, ``mlflow-triton serve``) would
see it ignored, as the commands rightly do. The test session takes Python's own handler back, so its children
start with the default, as under a terminal.
"""

import signal

if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)
