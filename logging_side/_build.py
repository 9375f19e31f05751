"""The package written in a staging directory, then renamed into place: the native MLflow package, the Triton
repository beside it (``_repository_files``) and the triton flavor in its MLmodel.

On failure nothing is left: neither the staging directory nor the parents created for the destination.
"""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import tempfile
from typing import TYPE_CHECKING

from . import _repository_files, _validation
from ._repository_files import ARTIFACT_DIRECTORY, REPOSITORY_DIRECTORY, VERSION_DIRECTORY

if TYPE_CHECKING:
    from ._packaging import Plan


def build(plan: Plan, path: pathlib.Path) -> None:
    """Write the package ``plan`` describes into a staging sibling of ``path``, then rename it.

    On failure nothing is left: neither the staging directory nor the parents created for ``path``.
    """
    created = [parent for parent in (path.parent, *path.parent.parents) if not parent.exists()]
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        staging = pathlib.Path(tempfile.mkdtemp(prefix=f".{path.name}.staging-", dir=path.parent))
    except BaseException:
        _remove_empty(created)
        raise
    try:
        staging.rmdir()  # the native flavor insists on creating the directory itself
        plan.framework.save_native(plan.model, staging, plan.signature, plan.input_example, plan.options)
        architecture = plan.framework.architecture(plan.model, staging, plan.declared_init_kwargs)
        if architecture is not None:
            (staging / "architecture.json").write_text(json.dumps(architecture, indent=1) + "\n")
        repository = staging / REPOSITORY_DIRECTORY / plan.triton_model_name
        artifact = repository / VERSION_DIRECTORY / ARTIFACT_DIRECTORY
        _repository_files.copy_native_package(staging, artifact)
        validation = plan.validation or _validation.validate_saved_artifact(plan.layout, plan.tensors, artifact)
        _repository_files.write_repository(repository, plan, validation)
        _repository_files.add_triton_flavor(staging, plan.triton_model_name, plan.layout.contract.version)
        os.rename(staging, path)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        _remove_empty(created)
        raise


def _remove_empty(directories: list[pathlib.Path]) -> None:
    """Remove the directories this call created, deepest first, where they are still empty."""
    for directory in directories:
        try:
            directory.rmdir()
        except OSError:
            return
