"""``mlflow_triton.deploy``: taking a generated repository off this machine.

* :mod:`~mlflow_triton.deploy.errors` -- the errors of this part (one family with the rest).
* :mod:`~mlflow_triton.deploy.pack` -- ``mlflow-triton pack``: model directories that carry their environment
  (``env.tar.gz`` + ``EXECUTION_ENV_PATH``) for a named target (:mod:`~mlflow_triton.deploy.targets`), packed by
  venv-pack2 (:mod:`~mlflow_triton.deploy.archive`, the ``deploy`` extra).

Boundary: this part may use ``mlflow_triton.local`` (its serving-environment builder and server),
the logging side (``triton.load_model``), the runtime's codecs and the contract; none of those
import it. Heavy or optional dependencies are imported lazily with an error naming the extra.
"""

from .errors import DeployError
from .pack import PackedModel, pack_command, pack_models
from .pack_errors import PackError, PackOutputError, PackRequirementsError, PackTargetError, PackToolMissingError
from .targets import TARGETS, PackPlan, Target, resolve_target

__all__ = ["DeployError"]
__all__ += ["PackError", "PackOutputError", "PackPlan", "PackRequirementsError", "PackTargetError",
            "PackToolMissingError", "PackedModel", "TARGETS", "Target", "pack_command", "pack_models",
            "resolve_target"]
