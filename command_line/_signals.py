"""SIGTERM handled like Ctrl-C, so that every ``finally`` and ``with`` block unwinds.

Inside :func:`stop_on_sigterm`, SIGTERM raises :class:`StopRequested`, a ``KeyboardInterrupt``: the code that
stops a server or removes a half-built environment on Ctrl-C does the same on SIGTERM.

:func:`sigterm_raises` is the one place a SIGTERM handler is installed and put back. ``TritonServer`` uses it
with ``SystemExit`` and ``unless_handled``: inside a command the command's handler stays, and a program that
set its own policy keeps it.

:func:`ignore_stops` is for the ``mlflow-triton`` program once its command has said its last line.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable, Iterator
from types import FrameType

__all__ = ["StopRequested", "ignore_stops", "sigterm_raises", "stop_on_sigterm"]


class StopRequested(KeyboardInterrupt):
    """SIGTERM arrived; ``str()`` is the signal's name (``SIGTERM``)."""


@contextlib.contextmanager
def sigterm_raises(exception: Callable[[int], BaseException], *, unless_handled: bool = False) -> Iterator[None]:
    """In the block, SIGTERM raises ``exception(signal number)``; the handler of before is back on leaving it.

    Only the main thread can set handlers (Python runs them there): elsewhere the block runs unchanged, as it
    does with ``unless_handled`` when a handler other than the default is set (one ignoring SIGTERM included).
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGTERM)
    if unless_handled and previous not in (signal.SIG_DFL, None):
        yield
        return

    def on_sigterm(signum: int, frame: FrameType | None) -> None:
        raise exception(signum)

    signal.signal(signal.SIGTERM, on_sigterm)
    try:
        yield
    finally:
        # None: a handler set outside Python, which cannot be put back from here; the default is the nearest
        signal.signal(signal.SIGTERM, previous if previous is not None else signal.SIG_DFL)


def stop_on_sigterm() -> contextlib.AbstractContextManager[None]:
    """In the block, SIGTERM raises :class:`StopRequested`."""
    return sigterm_raises(lambda signum: StopRequested(signal.Signals(signum).name))


def ignore_stops() -> None:
    """From now on this process ignores Ctrl-C and SIGTERM: for the ``mlflow-triton`` program after its command
    returned, never for a library's caller.

    The command has said its outcome (``prove it: …``, a PASS line). The interpreter's shutdown that follows takes
    seconds once MLflow, torch or scikit-learn are loaded, and Python puts the default handlers back part-way
    through it: a stop there ended the process with 130 or 143 and no word, contradicting the last line. An
    ignored signal stays ignored through the shutdown; the exit status stays the command's.
    """
    if threading.current_thread() is not threading.main_thread():
        return
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
