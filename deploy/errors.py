"""Errors of the deployment tools (``pack``, ``locate``, ``check|serve --from-store``, ``kserve``); all derive
from ``MlflowTritonError`` through :class:`DeployError`, except a missing packer or S3 client:
:class:`~mlflow_triton.errors.MissingExtraError`, the family's one missing-extra error (``PackToolMissingError`` is
its old name here).

Defined in :mod:`mlflow_triton.errors` with the rest of the family (its docstring draws the tree) and named here,
where this part's callers have always imported them. Each message says what went wrong and what to do, so the
command line prints it as it is; ``pack``'s are raised before anything is written to ``--out``.
"""

from mlflow_triton.errors import (
    DeployError,
    KServeManifestError,
    MissingExtraError,
    NotATritonModelError,
    OutputPathError,
    PackError,
    PackOutputError,
    PackRequirementsError,
    PackTargetError,
    StoreAccessError,
    StoreLocationError,
    StorePathError,
)

#: The old name of the missing packer's error (``venv-pack2``, the ``deploy`` extra).
PackToolMissingError = MissingExtraError

__all__ = [
    "DeployError",
    "KServeManifestError",
    "MissingExtraError",
    "NotATritonModelError",
    "OutputPathError",
    "PackError",
    "PackOutputError",
    "PackRequirementsError",
    "PackTargetError",
    "PackToolMissingError",
    "StoreAccessError",
    "StoreLocationError",
    "StorePathError",
]
