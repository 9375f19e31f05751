"""Errors of the deployment tools (``pack``, ``locate``, ``check|serve --from-store``, ``kserve``); all derive
from ``MlflowTritonError`` through :class:`DeployError`.

Each message says what went wrong and what to do, so the command line prints it as it is; ``pack``'s are raised
before anything is written to ``--out``.
"""

from mlflow_triton.errors import MlflowTritonError

__all__ = [
    "DeployError",
    "KServeManifestError",
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


class DeployError(MlflowTritonError, RuntimeError):
    """Root of the errors raised while packing, locating or describing a repository for deployment."""


class OutputPathError(DeployError, ValueError):
    """``--out`` cannot be written: a symbolic link, below a file, an existing file or a non-empty directory."""


class PackError(DeployError):
    """Root of the errors of ``mlflow-triton pack``."""


class PackOutputError(PackError, OutputPathError):
    """``--out`` cannot receive the packed repository (it exists and is not empty, it is a file or a symbolic
    link, it lies inside a model it packs)."""


class PackTargetError(PackError, ValueError):
    """The target cannot be packed for here: unknown name, a ``--python`` that contradicts it, no interpreter."""


class PackRequirementsError(PackError):
    """A model's requirements cannot install on the target: a pin without a release for its Python (pip's own
    words are quoted), or a wheel that needs a newer glibc than the target has."""


class PackToolMissingError(PackError, ImportError):
    """The packer (``venv-pack2``, the ``deploy`` extra) is not installed."""


class StoreLocationError(DeployError, ValueError):
    """A model's repository cannot be located in the artifact store, or cannot be read there by Triton."""


class StorePathError(StoreLocationError):
    """The repository's address breaks Triton's object-storage path rules."""


class StoreAccessError(StoreLocationError):
    """The store cannot be read with the credentials and endpoint Triton would use."""


class NotATritonModelError(StoreLocationError):
    """The MLflow model has no ``triton`` flavor: it holds no repository Triton could read."""


class KServeManifestError(DeployError, ValueError):
    """An argument of ``mlflow-triton kserve`` cannot make a valid InferenceService."""
