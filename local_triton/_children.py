"""Child processes that do not outlive this one.

Servers and pip run in their own process group, so that they can be stopped as a whole and a
terminal's Ctrl-C reaches only this process, which then stops them in order. If this process is
killed without a chance to clean up (``kill -9``, the OOM killer), Linux's parent-death signal
still sends them SIGTERM.

``prctl`` is looked up here, at import time in the parent: the ``preexec_fn`` runs in the forked
child, where loading a library (``dlopen``) of a threaded process can deadlock; it only calls the
function found before the fork.

Linux delivers the parent-death signal when the *thread* that started the child exits, not when
the whole process does: start servers and pip from a thread that lives as long as they should
(the main thread, as ``check`` and ``serve`` do).
"""

import ctypes
import os
import signal
import subprocess
import sys

__all__ = ["die_with_parent", "kill_group", "wait_or_kill_group"]

_PR_SET_PDEATHSIG = 1


def _find_prctl():
    """libc's ``prctl``, or None where there is none (non-Linux, a libc without it)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


_prctl = _find_prctl()


def _set_parent_death_signal():
    _prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM))


#: ``preexec_fn`` for ``subprocess.Popen``: SIGTERM to the child when this process dies (Linux only).
die_with_parent = _set_parent_death_signal if _prctl is not None else None


def wait_or_kill_group(proc, timeout):
    """Wait ``timeout`` seconds for ``proc``; then, or on a second Ctrl-C while waiting, SIGKILL its
    process group and wait for it. The interrupt propagates once the process is gone."""
    try:
        proc.wait(timeout)
    except BaseException as exc:
        kill_group(proc)
        proc.wait()
        if not isinstance(exc, subprocess.TimeoutExpired):
            raise


def kill_group(proc):
    """SIGKILL ``proc``'s process group (its children too); nothing if it is gone already."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
