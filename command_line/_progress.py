"""Status lines for long work: what is happening now and for how long.

A :class:`Progress` prints two kinds of lines:

* ``say(message)`` -- a line that stays (a stage began or ended);
* ``step(message, elapsed=seconds)`` -- the current detail of a long stage (pip's "Collecting
  torch==2.13.0") with the time spent so far. On a terminal it rewrites one line in place;
  elsewhere (CI logs, pipes) it prints a line when the detail changes, at most every
  ``interval`` seconds, and a heartbeat every ``heartbeat`` seconds even when nothing changes --
  never long silence, never a flood.

The functions of ``mlflow_triton.local`` and ``mlflow_triton.deploy`` take ``progress=`` as a
:class:`Progress`, any callable taking one string (``print``, ``list.append``) or ``None`` (quiet);
:func:`as_progress` accepts all three. A command given no ``progress`` writes to stderr
(:func:`~mlflow_triton.command_line._runner.run_command`).
"""

from __future__ import annotations

import shutil
import sys
import time
from collections.abc import Callable
from typing import TextIO, TypeAlias

from ._urls import without_user_info

__all__ = ["Progress", "ProgressLike", "as_progress"]

#: What ``progress=`` takes: a :class:`Progress`, a callable taking one line, or ``None`` (quiet).
ProgressLike: TypeAlias = "Progress | Callable[[str], object] | None"


class Progress:
    def __init__(
        self,
        write: Callable[[str], object] | None = None,
        *,
        prefix: str = "",
        live: bool | None = None,
        interval: float = 5.0,
        heartbeat: float = 30.0,
        stream: TextIO | None = None,
    ) -> None:
        self._stream = stream if stream is not None else sys.stderr
        self._write = write
        self.prefix = prefix
        self.live = bool(live) if live is not None else (write is None and _is_terminal(self._stream))
        self.interval = interval
        self.heartbeat = heartbeat
        self._last_step: str | None = None
        self._last_step_at = float("-inf")
        self._pending_clear = False

    def with_prefix(self, prefix: str) -> Progress:
        """The same destination, each line starting with ``prefix``."""
        return Progress(
            self._write,
            prefix=prefix,
            live=self.live,
            interval=self.interval,
            heartbeat=self.heartbeat,
            stream=self._stream,
        )

    def say(self, message: str) -> None:
        """A line that stays. Every line leaves out the user info (``user:password@``) of the URLs it names: a model
        URI or an endpoint may carry credentials (``s3://KEY:SECRET@bucket/...``)."""
        self._clear_live_line()
        self._emit(f"{self.prefix}{message}")
        self._last_step = None

    def step(self, message: str, elapsed: float | None = None) -> None:
        now = time.monotonic()
        line = f"{self.prefix}  {elapsed:5.0f}s  {message}" if elapsed is not None else f"{self.prefix}{message}"
        if self.live:
            width = shutil.get_terminal_size().columns - 1
            self._stream.write(f"\r\x1b[K{without_user_info(line)[:width]}")
            self._stream.flush()
            self._pending_clear = True
            return
        changed = message != self._last_step
        if now - self._last_step_at >= (self.interval if changed else self.heartbeat):
            self._emit(line)
            self._last_step, self._last_step_at = message, now

    def _clear_live_line(self) -> None:
        if self._pending_clear:
            self._stream.write("\r\x1b[K")
            self._pending_clear = False

    def _emit(self, line: str) -> None:
        line = without_user_info(line)
        if self._write is not None:
            self._write(line)
        else:
            print(line, file=self._stream, flush=True)


class _Quiet(Progress):
    def __init__(self) -> None:
        super().__init__(write=lambda _line: None, live=False)

    def with_prefix(self, prefix: str) -> Progress:
        return self


def as_progress(progress: ProgressLike) -> Progress:
    """A :class:`Progress` for ``progress``: itself, a wrapped callable, or quiet for ``None``."""
    if isinstance(progress, Progress):
        return progress
    if progress is None:
        return _Quiet()
    return Progress(progress, live=False)


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
