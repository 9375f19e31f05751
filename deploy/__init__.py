"""``mlflow_triton.deploy``: taking a generated repository off this machine.

* :mod:`~mlflow_triton.deploy.errors` -- the errors of this part (one family with the rest).
* :mod:`~mlflow_triton.deploy.store` -- where a logged model's repository sits in MLflow's artifact store, as an
  address Triton reads (``s3://…``), checked against Triton's path rules and the credentials it will use;
  :mod:`~mlflow_triton.deploy.store_commands` -- ``locate`` and ``check|serve --from-store``.
* :mod:`~mlflow_triton.deploy.kserve` -- a KServe ``InferenceService`` for that address.
* :mod:`~mlflow_triton.deploy.pack` -- ``mlflow-triton pack``: model directories that carry their environment
  (``env.tar.gz`` + ``EXECUTION_ENV_PATH``) for a named target (:mod:`~mlflow_triton.deploy.targets`), packed by
  venv-pack2 (:mod:`~mlflow_triton.deploy.archive`, the ``deploy`` extra).

The package offers the commands and the pieces a program composes them from (``__all__``); the errors are
in ``errors``, ``pack_errors``, ``store`` and ``kserve``. Boundary: this part may use ``mlflow_triton.local`` (its
serving-environment builder and server), the repository format and the command frame; none of those import it.
Heavy or optional dependencies are imported lazily with an error naming the extra.
"""

from .errors import DeployError
from .kserve import inference_service, kserve_command
from .pack import PackedModel, pack_command, pack_models
from .store import StoreLocation, locate_repository
from .store_commands import check_from_store_command, locate_command, serve_from_store_command
from .targets import TARGETS, resolve_target

__all__ = [
    "TARGETS",
    "DeployError",
    "PackedModel",
    "StoreLocation",
    "check_from_store_command",
    "inference_service",
    "kserve_command",
    "locate_command",
    "locate_repository",
    "pack_command",
    "pack_models",
    "resolve_target",
    "serve_from_store_command",
]
