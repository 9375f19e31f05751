"""Write the exported directory all at once: a staging sibling renamed into place.

Nothing is left behind on failure: the staging directory is removed, and so is
every parent of ``out_dir`` this call created.
"""

import os
import pathlib
import shutil
import tempfile

from ._errors import InvalidArgumentError


def check_target(target):
    if target.exists() or target.is_symlink():
        raise InvalidArgumentError(
            f"{str(target)!r} already exists; choose another output directory or remove it first"
        )


def write_directory(out_dir, name, fill):
    """Create ``out_dir/name`` with ``fill(staging_directory)``; returns its path."""
    target = out_dir / name
    check_target(target)
    created = []
    staging = None
    try:
        _make_directories(out_dir, created)
        staging = pathlib.Path(tempfile.mkdtemp(prefix=f".{name}.staging-", dir=out_dir))
        staging.chmod(0o755)  # mkdtemp makes it private; the result is an ordinary directory
        fill(staging)
        check_target(target)
        os.rename(staging, target)
    except BaseException:
        if staging is not None:
            shutil.rmtree(staging, ignore_errors=True)
        for directory in reversed(created):
            try:
                directory.rmdir()
            except OSError:
                break
        raise
    return target


def _make_directories(directory, created):
    """``mkdir -p`` that appends each directory it creates to ``created`` (outermost first) as it goes."""
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
