"""Errors of the local Triton tools; all derive from ``MlflowTritonError`` through :class:`LocalTritonError`.

Defined in :mod:`mlflow_triton.errors` with the rest of the family (its docstring draws the tree) and named here,
where this part's callers have always imported them. Each message says what went wrong and what to do, so the
command line prints it as it is.
"""

from mlflow_triton.errors import (
    BundledTritonUnavailableError,
    HostAddressError,
    InferenceError,
    InputFileError,
    InterpreterError,
    LocalTritonError,
    ModelSourceError,
    OraclePredictionError,
    PortInUseError,
    RepositoryAssemblyError,
    ServingEnvError,
    TritonInstallError,
    TritonStartError,
)

__all__ = [
    "BundledTritonUnavailableError",
    "HostAddressError",
    "InferenceError",
    "InputFileError",
    "InterpreterError",
    "LocalTritonError",
    "ModelSourceError",
    "OraclePredictionError",
    "PortInUseError",
    "RepositoryAssemblyError",
    "ServingEnvError",
    "TritonInstallError",
    "TritonStartError",
]
