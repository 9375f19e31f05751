"""Warnings pointed at the caller's own line, however deep inside this package they are raised."""

import sys
import types
import warnings

_PACKAGE = "mlflow_triton"


def warn(message: str, category: type[Warning]) -> None:
    """``warnings.warn`` attributed to the first frame outside ``mlflow_triton``: the line that called the public
    function, wherever the flow that warns sits in the call stack (``skip_file_prefixes`` needs Python 3.12)."""
    warnings.warn(message, category, stacklevel=_first_frame_outside_package())


def _first_frame_outside_package() -> int:
    """The ``stacklevel`` of the first frame outside ``mlflow_triton``, counted from ``warn``'s call of
    ``warnings.warn`` (1: ``warn`` itself)."""
    frame: types.FrameType | None = sys._getframe(1)  # warn's frame
    level = 1
    while frame is not None and _inside_package(frame.f_globals.get("__name__", "")):
        frame = frame.f_back
        level += 1
    return level


def _inside_package(module: str) -> bool:
    return module == _PACKAGE or module.startswith(f"{_PACKAGE}.")
