"""Write a directory all at once: build it in a hidden sibling, then rename it into place.

The sibling lies beside the destination, on the same filesystem, so the rename is atomic: a
present destination is always a complete one. Its name is unique per call (``tempfile.mkdtemp``):
a stale sibling left by a process killed outright is neither reused nor removed here.

On any exception -- Ctrl-C's ``KeyboardInterrupt`` and SIGTERM turned into an exception included --
the sibling is removed, and so are the destination's parents this call created, where still
empty; the destination is left as it was. Whether an existing destination is refused or replaced
is the caller's rule: check it before entering, and again at the end of the ``with`` body when it
must still hold at the rename (``os.rename`` replaces an empty directory and fails on any other).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path

__all__ = ["staged_directory"]


@contextlib.contextmanager
def staged_directory(
    destination: str | os.PathLike[str],
    *,
    prefix: str | None = None,
    create: bool = True,
    product: str | None = None,
    keep_parents: bool = False,
    equal_build_marker: str | os.PathLike[str] | None = None,
) -> Iterator[Path]:
    """Yield a new hidden directory beside ``destination``; rename it to ``destination`` when the body succeeds.

    ``prefix`` starts the directory's name (default ``.<destination name>.staging-``); a random suffix follows.

    ``create=False`` only reserves the unique name: the body creates the directory itself (a native flavor or
    ``shutil.copytree`` insists on doing so, with the umask's permissions). Otherwise the directory exists,
    with mode 0755 (``mkdtemp`` makes it private; the result is an ordinary directory).

    ``product`` names what the body builds inside it: ``<staging>/<product>`` is renamed into place and the rest
    (downloads, reports) removed after. The staging directory is then a work folder and stays private (0700).

    ``keep_parents`` keeps the parents created for ``destination`` after a failure: a shared cache whose folder
    another process may be about to build in.

    ``equal_build_marker`` lets processes build the same destination at once, each its own equal copy: the path,
    relative to ``destination``, of a file every complete build holds. When the rename fails and that file is
    there, another process finished first; this build is discarded and the destination used as it is. Without
    it, a failing rename raises.
    """
    destination = Path(destination)
    created: list[Path] = []
    staging: Path | None = None
    try:
        _make_parents(destination.parent, created)
        staging = Path(tempfile.mkdtemp(prefix=prefix or f".{destination.name}.staging-", dir=destination.parent))
        if not create:
            staging.rmdir()
        elif product is None:
            staging.chmod(0o755)
        yield staging
        built = staging if product is None else staging / product
        try:
            os.rename(built, destination)
        except OSError:
            if equal_build_marker is None or not (destination / equal_build_marker).is_file():
                raise
        # The body's leftovers beside a product, or this build when another process's equal one came first.
        shutil.rmtree(staging, ignore_errors=True)
    except BaseException:
        if staging is not None:
            shutil.rmtree(staging, ignore_errors=True)
        if not keep_parents:
            _remove_empty(reversed(created))
        raise


def _make_parents(directory: Path, created: list[Path]) -> None:
    """``mkdir -p`` that appends each directory it creates to ``created`` (outermost first) as it goes.

    A directory another process creates meanwhile is not this call's to remove.
    """
    missing = []
    while not directory.exists():
        missing.append(directory)
        directory = directory.parent
    for path in reversed(missing):
        try:
            path.mkdir()
        except FileExistsError:
            continue
        created.append(path)


def _remove_empty(directories: Iterable[Path]) -> None:
    """Remove ``directories`` (deepest first) while they are empty; the first one that is not ends it."""
    for directory in directories:
        try:
            directory.rmdir()
        except OSError:
            return
