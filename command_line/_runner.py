"""The frame every ``mlflow-triton`` command runs in: a command is its arguments plus its body.

:func:`run_command` runs a command's body with SIGTERM raised as :class:`~.signals.StopRequested` (so every
``finally`` and ``with`` block cleans up as on Ctrl-C), MLflow's download bars on terminals only
(:mod:`~.download_bars`), and status lines going to a :class:`~.progress.Progress` (stderr unless the caller
gives another). It turns the outcome into the exit status:

* the body's own status: 0 success (``check`` returns 1 for a FAIL);
* 1 after an error, said in one line on stderr, ``mlflow-triton <command>: error: <message>``, with no traceback:
  an ``MlflowTritonError`` says its message, a store that cannot be reached or opened (a tracking server, its
  database or its driver, an S3 endpoint: :func:`~._urls.unreachable`) says which, an ``OSError`` its reason and
  file, and the command may word these and others itself (``explain``); an error nobody explains (a bug) goes
  through with its traceback;
* 130 after Ctrl-C and 143 after SIGTERM, said as ``mlflow-triton <command>: interrupted (Ctrl-C)`` or
  ``mlflow-triton <command>: stopped by SIGTERM``, followed by what the command guarantees then (``stopped``).

A Ctrl-C before the body's frame is entered (while the command line imports the command's modules: MLflow, torch)
is :func:`interrupted_while_starting`'s one line and 130, not a traceback.

Whatever it says leaves out the user info (``user:password@``) of the URLs in it (:mod:`~.urls`).
"""

from __future__ import annotations

import sys
from collections.abc import Callable

from mlflow_triton.shared_contract import MlflowTritonError

from ._download_bars import download_bars_on_terminals_only
from ._progress import Progress, ProgressLike, as_progress
from ._signals import StopRequested, stop_on_sigterm
from ._urls import unreachable, without_user_info

__all__ = [
    "FAILED",
    "INTERRUPTED",
    "TERMINATED",
    "interrupted_while_starting",
    "os_error_text",
    "run_command",
    "stop_behind",
]

#: An error stopped the command.
FAILED = 1
#: Ctrl-C: 128 + SIGINT, what a shell reports for a program Ctrl-C ended.
INTERRUPTED = 130
#: SIGTERM: 128 + SIGTERM, likewise.
TERMINATED = 143


def run_command(
    command: str,
    body: Callable[[Progress], int],
    *,
    progress: ProgressLike = None,
    stopped: str | Callable[[], str] = "",
    explain: Callable[[Exception], str | None] | None = None,
) -> int:
    """Run ``body(progress)`` as ``mlflow-triton <command>``; return its exit status (see the module).

    ``progress``: where status lines go; ``None`` means stderr (rewriting one line in place on a terminal), not
    quiet. ``stopped``: what holds after Ctrl-C or SIGTERM (``nothing was written``), said after the stop; a
    function is asked at the stop (what holds may change as the body goes on).
    ``explain(error)``: the command's own words for an error (after ``error:``), or ``None`` to leave the error
    to the rule above.
    """
    say = as_progress(progress) if progress is not None else Progress()
    try:
        with stop_on_sigterm(), download_bars_on_terminals_only():
            return body(say)
    except (KeyboardInterrupt, Exception) as error:  # a StopRequested is a KeyboardInterrupt
        stop = stop_behind(error)
        if isinstance(stop, StopRequested):
            _say(f"mlflow-triton {command}: stopped by {stop}", _what_holds(stopped))
            return TERMINATED
        if stop is not None:
            _say(f"mlflow-triton {command}: interrupted (Ctrl-C)", _what_holds(stopped))
            return INTERRUPTED
        if not isinstance(error, Exception):
            raise
        message = explain(error) if explain is not None else None
        if message is None:
            message = _said(error)
        if message is None:
            raise
        _say(f"mlflow-triton {command}: error: {message}")
        return FAILED


def stop_behind(error: BaseException | None) -> KeyboardInterrupt | None:
    """The Ctrl-C or SIGTERM (a ``KeyboardInterrupt``) that ``error`` is, or that an ``ImportError`` came from: a
    module interrupted while it is imported can fail its importer with an ``ImportError`` raised from the stop
    (numpy's ``_multiarray_umath failed to import``), which is still the stop. ``None`` for any other error: one
    raised while a stop was being handled (a failed clean-up) is that error, said as one."""
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        if isinstance(error, KeyboardInterrupt):  # a StopRequested too
            return error
        if not isinstance(error, ImportError):
            return None
        seen.add(id(error))
        error = error.__cause__ or error.__context__
    return None


def interrupted_while_starting(command: str) -> int:
    """Say that Ctrl-C stopped ``mlflow-triton <command>`` before its body began (nothing was done); return 130."""
    name = f"mlflow-triton {command}" if command else "mlflow-triton"
    _say(f"{name}: interrupted (Ctrl-C) while starting; nothing was done")
    return INTERRUPTED


def os_error_text(error: OSError) -> str:
    """``Is a directory: /tmp/report.json`` rather than ``[Errno 21] Is a directory: '/tmp/report.json'``."""
    if error.strerror and error.filename is not None:
        return f"{error.strerror}: {error.filename}"
    return str(error) or type(error).__name__


def _said(error: Exception) -> str | None:
    if isinstance(error, MlflowTritonError):
        return str(error)
    store = unreachable(error)  # a tracking server, database or S3 endpoint; a database driver not installed
    if store is not None:
        return store
    if isinstance(error, OSError):  # a work directory, report or output that cannot be written
        return os_error_text(error)
    return None


def _what_holds(stopped: str | Callable[[], str]) -> str:
    return stopped() if callable(stopped) else stopped


def _say(line: str, after: str = "") -> None:
    text = f"{line}; {after}" if after else line
    print(without_user_info(text), file=sys.stderr, flush=True)
