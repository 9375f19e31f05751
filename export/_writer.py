"""Write the exported directory all at once: a staging sibling renamed into place.

Nothing is left behind on failure: the staging directory is removed, and so is
every parent of ``out_dir`` this call created
(:func:`~mlflow_triton.repository.staging.staged_directory`).
"""

from mlflow_triton.repository.staging import staged_directory

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
    with staged_directory(target) as staging:
        fill(staging)
        check_target(target)  # another process may have written it meanwhile: refused, never replaced
    return target
