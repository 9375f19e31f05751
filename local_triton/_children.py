"""Child processes that do not outlive this one.

Servers and pip run in their own process group, so that they can be stopped as a whole and a
terminal's Ctrl-C reaches only this process, which then stops them in order. If this process is
killed without a chance to clean up (``kill -9``, the OOM killer), Linux's parent-death signal
still sends them SIGTERM.
"""

import ctypes
import signal
import sys

__all__ = ["die_with_parent"]

_PR_SET_PDEATHSIG = 1


def _set_parent_death_signal():
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM))
    except (OSError, AttributeError):
        pass


#: ``preexec_fn`` for ``subprocess.Popen``: SIGTERM to the child when this process dies (Linux only).
die_with_parent = _set_parent_death_signal if sys.platform.startswith("linux") else None
