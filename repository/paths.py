"""Where a command may write: never into what it reads, never through a symbolic link.

:func:`checked_out` is the one rule for every destination a command writes (``export-onnx --out``, ``pack --out``,
``kserve --out``), checked before any work starts; each refusal is one line naming the path and what to give
instead:

* never a symbolic link (a dangling one included): the command would write where the link points, outside the
  folder it names;
* never below a file (a path whose folder is a file);
* ``"directory"`` (the directory to write, ``pack``): new or empty; ``"folder"`` (a folder that receives a new
  directory, ``export-onnx``): new or an existing directory; ``"file"`` (``kserve``): new, or existing only when the
  caller asked to replace it.

Missing folders above the destination are created by the command (:func:`missing_ancestors` lists them, to remove
after a failure).
"""

from __future__ import annotations

import os
import pathlib
from typing import Literal

__all__ = ["checked_out", "lies_inside", "missing_ancestors"]

Destination = Literal["directory", "folder", "file"]


def lies_inside(path: str | os.PathLike[str], folder: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is ``folder`` or lies below it, both resolved (links followed).

    A destination there would be copied into itself by a command that reads ``folder`` (``triton.save_model``,
    ``export-onnx``, ``pack``), or change what it reads.
    """
    inner, outer = (pathlib.Path(p).expanduser().resolve() for p in (path, folder))
    return inner == outer or inner.is_relative_to(outer)


def checked_out(
    out: str | os.PathLike[str],
    *,
    kind: Destination,
    error: type[Exception],
    label: str = "--out",
    replace_flag: str | None = None,
    replace: bool = False,
) -> pathlib.Path:
    """``out`` as an absolute path (links not resolved), or ``error`` saying why it cannot be written.

    ``label`` names the destination in the message (the option or the parameter); ``replace_flag``: the option
    that allows replacing an existing file (``--overwrite``); ``replace``: given.
    """
    path = pathlib.Path(out).expanduser().absolute()
    if path.is_symlink():
        raise error(
            f"{label} {path}: a symbolic link (to {os.readlink(path)}); give the real path of {_wanted(kind)} "
            "(links are not followed)"
        )
    folder = next(parent for parent in path.parents if parent.exists() or parent.is_symlink())
    if not folder.is_dir():
        raise error(f"{label} {path}: {folder} is not a folder; give a path in an existing or new folder")
    if kind == "file":
        if path.is_dir():
            raise error(
                f"{label} {path}: a directory; give the path of the file to write in it (e.g. {path / 'out.yaml'})"
            )
        if path.exists() and not replace:
            remedy = f", or pass {replace_flag} to replace it" if replace_flag else ""
            raise error(f"{label} {path}: exists; give a new path{remedy}")
        return path
    if path.exists() and not path.is_dir():
        raise error(f"{label} {path}: a file; give {_wanted(kind)}")
    if kind == "directory" and path.is_dir() and any(path.iterdir()):
        raise error(
            f"{label} {path}: exists and is not empty ({', '.join(sorted(p.name for p in path.iterdir())[:5])}); "
            "give a new or empty directory (it is never written over)"
        )
    return path


def missing_ancestors(folder: pathlib.Path) -> list[pathlib.Path]:
    """The folders of ``folder``'s path that do not exist yet, outermost first (removed again on failure)."""
    missing = []
    while not folder.exists():
        missing.append(folder)
        folder = folder.parent
    return list(reversed(missing))


def _wanted(kind: Destination) -> str:
    return {"directory": "a new or empty directory", "folder": "a new or existing directory", "file": "a new file"}[
        kind
    ]
