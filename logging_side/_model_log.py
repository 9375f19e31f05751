"""The last stage: the prepared package handed to ``mlflow.models.Model.log``.

The package is built in a temporary workspace, then moved into the directory ``Model.log`` uploads, under the
LoggedModel it creates. A failure inside ``Model.log`` deletes that LoggedModel (``_undo``), so nothing reaches
the tracking store or the Registry.
"""

from __future__ import annotations

import os
import pathlib
import shutil
import tempfile
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import mlflow
from mlflow.models import Model

from mlflow_triton.repository.layout import REPOSITORY_DIRECTORY

from . import _build, _undo, mlflow_private

if TYPE_CHECKING:
    from ._options import Destination
    from ._plan import Plan


def log_prepared(plan: Plan, destination: Destination, on_built: Callable[[pathlib.Path], object] | None = None) -> Any:
    """Build the package ``plan`` describes, then log it with ``Model.log`` at ``destination``; returns ``ModelInfo``.

    ``destination.experiment_id`` places the LoggedModel in that experiment instead of the active one.
    ``on_built(directory)`` is called with the built repository's model directory before it is logged.
    """
    with tempfile.TemporaryDirectory(prefix="mlflow-triton-") as workspace:
        package = pathlib.Path(workspace) / "model"
        _build.build(plan, package)
        if on_built is not None:
            on_built(package / REPOSITORY_DIRECTORY / plan.triton_model_name)
        adopter = _AdoptPreparedPackage(plan.framework.flavor, package)
        created: list[str] = []
        registered_model_name = destination.registered_model_name
        with _undo.undone_on_failure(registered_model_name, lambda: adopter.model_id or next(iter(created), None)):
            if destination.experiment_id is not None:
                created.append(_logged_model_in(destination, adopter.__name__))
            return Model.log(
                artifact_path=None,
                name=destination.name,
                flavor=adopter,
                registered_model_name=registered_model_name,
                await_registration_for=destination.await_registration_for,
                run_id=destination.run_id,
                metadata=destination.metadata,
                tags=destination.tags,
                params=destination.params,
                model_id=next(iter(created), None),
                validate_serving_input=False,
            )


def _logged_model_in(destination, flavor):
    """Create the LoggedModel in ``destination.experiment_id`` (``Model.log`` alone would use the active
    experiment)."""
    run_id = destination.run_id
    run_params = mlflow.MlflowClient().get_run(run_id).data.params if run_id else {}
    return mlflow_private.create_logged_model(
        name=destination.name,
        source_run_id=run_id,
        experiment_id=destination.experiment_id,
        params={key: str(value) for key, value in {**(destination.params or {}), **run_params}.items()},
        tags={key: str(value) for key, value in (destination.tags or {}).items()},
        flavor=flavor,
    ).model_id


class _AdoptPreparedPackage:
    """The ``flavor`` handed to ``Model.log``: moves the prepared package into place.

    ``Model.log`` supplies the ``Model`` that carries the LoggedModel's ids; the
    prepared MLmodel's flavors, signature and example are carried over to it.
    """

    def __init__(self, flavor, package):
        self.__name__ = f"mlflow_triton.{flavor}"
        self._package = package
        self._model_id = None

    def save_model(self, path, mlflow_model, validate_serving_input=False):
        self._model_id = mlflow_model.model_id
        prepared = Model.load(str(self._package / "MLmodel"))
        shutil.move(str(self._package), path)
        for attribute in ("flavors", "signature", "saved_input_example_info", "mlflow_version"):
            setattr(mlflow_model, attribute, getattr(prepared, attribute))
        mlflow_model.save(os.path.join(path, "MLmodel"))

    @property
    def model_id(self):
        """The id of the LoggedModel ``Model.log`` created, once it called ``save_model``."""
        return self._model_id
