"""Where a command may write: never into what it reads."""

from __future__ import annotations

import os
import pathlib

__all__ = ["lies_inside"]


def lies_inside(path: str | os.PathLike[str], folder: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is ``folder`` or lies below it, both resolved (links followed).

    A destination there would be copied into itself by a command that reads ``folder`` (``triton.save_model``,
    ``export-onnx``, ``pack``), or change what it reads.
    """
    inner, outer = (pathlib.Path(p).expanduser().resolve() for p in (path, folder))
    return inner == outer or inner.is_relative_to(outer)
