"""``mlflow_triton.deploy``: taking a generated repository off this machine.

* [errors][mlflow_triton.errors] -- the errors of this part (one family with the rest), to catch by class.
* ``_store`` -- where a logged model's repository sits in MLflow's artifact store, as an address Triton reads
  (``s3://…``), checked against Triton's path rules and the credentials it will use; ``_store_commands`` --
  ``locate`` and ``check|serve --from-store``.
* ``_kserve`` -- a KServe ``InferenceService`` for that address.
* ``_pack`` -- ``mlflow-triton pack``: model directories that carry their environment (``env.tar.gz`` +
  ``EXECUTION_ENV_PATH``) for a named target (``_targets``, ``_wheels``), packed by venv-pack2 (``_archive``, the
  ``deploy`` extra).

The package offers the commands and the pieces a program composes them from (``__all__``) and its errors in
``errors``. Boundary: this part may use ``mlflow_triton.local`` (its serving-environment builder and server), the
repository format and the command frame; none of those import it. Heavy or optional dependencies are imported
lazily with an error naming the extra.
"""

from ._kserve import inference_service, kserve_command
from ._pack import PackedModel, pack_command, pack_models
from ._store import StoreLocation, locate_repository
from ._store_commands import check_from_store_command, locate_command, serve_from_store_command
from ._targets import TARGETS, resolve_target
from .errors import DeployError

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
