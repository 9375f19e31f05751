"""SIGTERM handled like Ctrl-C, so that every ``finally`` and ``with`` block unwinds.

Inside :func:`stop_on_sigterm`, SIGTERM raises :class:`StopRequested`, a ``KeyboardInterrupt``:
the code that stops a server or removes a half-built environment on Ctrl-C does the same on
SIGTERM. (``TritonServer`` sees the handler and keeps it.)
"""

import contextlib
import signal
import threading
from collections.abc import Iterator

__all__ = ["StopRequested", "stop_on_sigterm"]


class StopRequested(KeyboardInterrupt):
    """SIGTERM arrived."""


@contextlib.contextmanager
def stop_on_sigterm() -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def _on_sigterm(signum, frame):
        raise StopRequested(f"signal {signal.Signals(signum).name}")

    previous = signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
