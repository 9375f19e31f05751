"""Errors of the deployment tools; all derive from ``MlflowTritonError``.

Each message says what went wrong and what to do, so the command line prints it as it is.
"""

from mlflow_triton.errors import MlflowTritonError

__all__ = ["DeployError", "OutputPathError"]


class DeployError(MlflowTritonError, RuntimeError):
    """Root of the errors raised while packing, locating or describing a repository for deployment."""


class OutputPathError(DeployError, ValueError):
    """``--out`` cannot be written: a symbolic link, below a file, an existing file or a non-empty directory."""
