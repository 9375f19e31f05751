"""The package written in a staging directory, then renamed into place: the native MLflow package, the Triton repository
beside it (``_repository_files``) and the triton flavor in its MLmodel.

On failure nothing is left: neither the staging directory nor the parents created for the destination
(``mlflow_triton.repository.staging``).
"""

from __future__ import annotations

import json
import pathlib
from typing import TYPE_CHECKING

from mlflow_triton.repository.layout import (
    ARCHITECTURE_FILE,
    ARTIFACT_DIRECTORY,
    REPOSITORY_DIRECTORY,
    VERSION_DIRECTORY,
)
from mlflow_triton.repository.staging import staged_directory

from . import _repository_files, _validation

if TYPE_CHECKING:
    from ._plan import Plan


def build(plan: Plan, path: pathlib.Path) -> None:
    """Write the package ``plan`` describes into a staging sibling of ``path``, then rename it."""
    # create=False: the native flavor insists on creating the directory itself
    with staged_directory(path, create=False) as staging:
        plan.framework.save_native(plan.model, staging, plan.signature, plan.input_example, plan.options)
        architecture = plan.framework.architecture(plan.model, staging, plan.declared_init_kwargs)
        if architecture is not None:
            (staging / ARCHITECTURE_FILE).write_text(json.dumps(architecture, indent=1) + "\n")
        repository = staging / REPOSITORY_DIRECTORY / plan.triton_model_name
        artifact = repository / VERSION_DIRECTORY / ARTIFACT_DIRECTORY
        _repository_files.copy_native_package(staging, artifact)
        validation = plan.validation or _validation.validate_saved_artifact(plan.layout, plan.tensors, artifact)
        _repository_files.write_repository(repository, plan, validation)
        _repository_files.add_triton_flavor(staging, plan.triton_model_name, plan.layout.contract.version)
