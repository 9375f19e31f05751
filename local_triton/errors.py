"""Errors of the local Triton tools; all derive from ``MlflowTritonError``.

Each message says what went wrong and what to do, so the command line prints it as it is.
"""

import os
from collections.abc import Iterable

from mlflow_triton.errors import MlflowTritonError

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


class LocalTritonError(MlflowTritonError, RuntimeError):
    """Root of the errors raised while checking or serving models on a local Triton server."""


class TritonInstallError(LocalTritonError):
    """The Triton installation could not be used or is incomplete."""


class BundledTritonUnavailableError(TritonInstallError):
    """The bundled server is not installed, or does not exist for this platform."""


class InterpreterError(LocalTritonError, ValueError):
    """``--python`` names no interpreter that can build a serving environment for a Triton stub."""


class ModelSourceError(LocalTritonError, ValueError):
    """A model URI or directory cannot be resolved to a Triton repository this package generated."""


class OraclePredictionError(LocalTritonError):
    """``mlflow.pyfunc`` could not load the model or predict the input the answer is compared with."""


class InputFileError(LocalTritonError, ValueError):
    """``--input FILE`` cannot be read as the model's input."""


class RepositoryAssemblyError(LocalTritonError, ValueError):
    """Several models cannot be served together (same Triton name, ...)."""


class PortInUseError(LocalTritonError):
    """A port the server must listen on is taken."""


class HostAddressError(LocalTritonError, ValueError):
    """``--host`` names an address this machine cannot resolve or listen on."""


class ServingEnvError(LocalTritonError):
    """pip could not build the serving environment.

    ``pip_lines`` holds pip's explanation (the resolver's ``ERROR:`` / "The conflict is caused
    by:" lines for a conflict, else the tail of its output); ``conflict`` is ``True`` when pip's
    resolver found the requirements and constraints impossible to satisfy together.
    """

    def __init__(self, message: str, pip_lines: Iterable[str] = (), conflict: bool = False) -> None:
        super().__init__(message)
        self.pip_lines = list(pip_lines)
        self.conflict = conflict


class TritonStartError(LocalTritonError):
    """``tritonserver`` did not become ready with the model(s) loaded.

    ``reason`` is Triton's own explanation when it gave one (the model's ``reason`` from the
    repository index); ``log_tail`` holds the last lines of the server log.
    """

    def __init__(self, message: str, reason: str | None, log_tail: str, log_path: str | os.PathLike[str]) -> None:
        full = message
        if reason:
            full += f"\nTriton says: {reason}"
        full += f"\n--- last lines of {log_path} ---\n{log_tail}"
        super().__init__(full)
        self.reason = reason
        self.log_tail = log_tail
        self.log_path = log_path


class InferenceError(LocalTritonError):
    """The server answered an inference request with an HTTP error.

    ``status`` is the HTTP status, ``triton_error`` Triton's ``{"error": ...}`` text (or the raw
    body when it was not JSON).
    """

    def __init__(self, status: int, triton_error: str, url: str) -> None:
        super().__init__(f"POST {url} -> HTTP {status}: {triton_error}")
        self.status = status
        self.triton_error = triton_error
        self.url = url
