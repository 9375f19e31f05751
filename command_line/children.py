"""Child processes that do not outlive this one.

Servers and pip run in their own process group, so that they can be stopped as a whole and a
terminal's Ctrl-C reaches only this process, which then stops them in order. If this process is
killed without a chance to clean up (``kill -9``, the OOM killer), Linux's parent-death signal
still sends them SIGTERM.

``prctl`` is looked up here, at import time in the parent: the ``preexec_fn`` runs in the forked
child, where loading a library (``dlopen``) of a threaded process can deadlock; it only calls the
function found before the fork.

A Ctrl-C or SIGTERM that arrives while Python forks is raised inside an at-fork hook, where Python
reports and drops it: the caller would go on as if nothing happened. ``stop_signals_deferred``
records such a signal while ``Popen`` forks and raises it once the caller holds the child to stop.

Linux delivers the parent-death signal when the *thread* that started the child exits, not when
the whole process does: start servers and pip from a thread that lives as long as they should
(the main thread, as ``check`` and ``serve`` do).
"""

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from typing import Any

__all__ = ["die_with_parent", "kill_group", "stop_signals_deferred", "wait_or_kill_group"]

_PR_SET_PDEATHSIG = 1


def _find_prctl() -> Any:
    """libc's ``prctl``, or None where there is none (non-Linux, a libc without it)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


_prctl = _find_prctl()


def _set_parent_death_signal() -> None:
    _prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM))


#: ``preexec_fn`` for ``subprocess.Popen``: SIGTERM to the child when this process dies (Linux only).
die_with_parent = _set_parent_death_signal if _prctl is not None else None


_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


@contextlib.contextmanager
def stop_signals_deferred() -> Iterator[None]:
    """Ctrl-C and SIGTERM that arrive in the block are raised on leaving it, by the handlers of before.

    Start the child inside the block and assign it to a name the caller's ``finally`` stops. (Blocking
    the signals with a thread mask would not do: the kernel hands a process's signal to any thread
    that does not block it, and Python then raises it in the main thread all the same.) Only the
    main thread can set handlers; elsewhere the block defers nothing.
    """
    arrived: list[int] = []
    previous: dict[signal.Signals, Any] = {}
    if threading.current_thread() is threading.main_thread():
        for signum in _STOP_SIGNALS:
            handler = signal.getsignal(signum)
            if callable(handler) or handler == signal.SIG_DFL:  # not SIG_IGN, not a handler set outside Python
                previous[signum] = signal.signal(signum, lambda number, frame: arrived.append(number))
    try:
        yield
    finally:
        for stop_signal, handler in previous.items():
            signal.signal(stop_signal, handler)
        if arrived:
            signal.raise_signal(arrived[0])  # the handler of before acts on it now


def wait_or_kill_group(proc: subprocess.Popen[Any], timeout: float | None) -> None:
    """Wait ``timeout`` seconds for ``proc``; then, or on a second Ctrl-C while waiting, SIGKILL its
    process group and wait for it. The interrupt propagates once the process is gone."""
    try:
        proc.wait(timeout)
    except BaseException as exc:
        kill_group(proc)
        proc.wait()
        if not isinstance(exc, subprocess.TimeoutExpired):
            raise


def kill_group(proc: subprocess.Popen[Any]) -> None:
    """SIGKILL ``proc``'s process group (its children too); nothing if it is gone already."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
