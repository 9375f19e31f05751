"""What ``--out`` may be, for every command of this part that writes (``pack``: a directory, ``kserve``: a file).

Checked before any work starts; each refusal is one line naming the path and what to give instead:

* never a symbolic link (a dangling one included): the command would write where the link points, outside the
  folder it names;
* never below a file (a path whose folder is a file);
* a directory: new or empty; a file: new, or existing only when the caller asked to replace it.

Missing folders above ``--out`` are created (:func:`missing_ancestors` lists them, to remove after a failure).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from .errors import OutputPathError

__all__ = ["checked_out", "missing_ancestors"]


def checked_out(
    out: str | os.PathLike[str],
    *,
    kind: Literal["directory", "file"],
    replace_flag: str | None = None,
    replace: bool = False,
    error: type[OutputPathError] = OutputPathError,
) -> Path:
    """``out`` as an absolute path, or ``error`` saying why it cannot be written.

    ``replace_flag``: the option that allows replacing an existing file (``--overwrite``); ``replace``: given.
    """
    path = Path(out).expanduser().absolute()
    if path.is_symlink():
        raise error(
            f"--out {path}: a symbolic link (to {os.readlink(path)}); give the real path of a new {_new(kind)} "
            "(links are not followed)"
        )
    folder = next(parent for parent in path.parents if parent.exists() or parent.is_symlink())
    if not folder.is_dir():
        raise error(f"--out {path}: {folder} is not a folder; give a path in an existing or new folder")
    if kind == "directory":
        if path.exists() and not path.is_dir():
            raise error(f"--out {path}: a file; give a new or empty directory")
        if path.is_dir() and any(path.iterdir()):
            raise error(
                f"--out {path}: exists and is not empty ({', '.join(sorted(p.name for p in path.iterdir())[:5])}); "
                "give a new or empty directory (it is never written over)"
            )
        return path
    if path.is_dir():
        raise error(f"--out {path}: a directory; give the path of the file to write in it (e.g. {path / 'out.yaml'})")
    if path.exists() and not replace:
        remedy = f", or pass {replace_flag} to replace it" if replace_flag else ""
        raise error(f"--out {path}: exists; give a new path{remedy}")
    return path


def missing_ancestors(folder: Path) -> list[Path]:
    """The folders of ``folder``'s path that do not exist yet, outermost first (removed again on failure)."""
    missing = []
    while not folder.exists():
        missing.append(folder)
        folder = folder.parent
    return list(reversed(missing))


def _new(kind: str) -> str:
    return "or empty directory" if kind == "directory" else "file"
