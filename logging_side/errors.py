"""The mlflow-triton error family: every exception and warning class the package raises, in one module.

Every error derives from ``MlflowTritonError``, so ``except MlflowTritonError`` catches all of them (the command
line prints their messages as they are: each says what went wrong, naming the field and the allowed values, and what
to do). Each also derives from the standard class it stands for (``ValueError`` for a wrong argument or request,
``RuntimeError`` for a step that failed, ``ImportError`` for a missing extra), so code written against those catches
them too. The two warnings derive from ``UserWarning``. The parts import their classes from here
(``mlflow_triton.local.errors``, ``mlflow_triton.deploy.errors`` and ``mlflow_triton.export`` name their own again);
the root and ``ContractError`` are defined in the stdlib-only contract and the runtime's classes in
``runtime/errors.py``, because both are vendored into every generated ``1/model.py``, where this package is not
installed.

The tree (``[...]``: a class's other bases; ``tests/unit/logging_side/test_error_tree.py`` checks it against the
classes and against docs/errors.md)::

    MlflowTritonError [Exception]
      ContractError [ValueError]
      InvalidArgumentError [ValueError]
        ExampleFormError
      UnsupportedSchemaError [ValueError]
      ValidationError [RuntimeError]
        ExamplePredictionError
      BatchingRefusedError [ValueError]
      MissingExtraError [ImportError]
      TensorMappingError [ValueError]
      RowCountError [ValueError]
      RequestError [ValueError]
      PredictionError [RuntimeError]
      OutputError [RuntimeError]
      ModelLoadError [RuntimeError]
      ExportError [RuntimeError]
        UnsupportedModelError [ValueError]
        ParityError
      LocalTritonError [RuntimeError]
        TritonInstallError
          BundledTritonUnavailableError
        InterpreterError [ValueError]
        ModelSourceError [ValueError]
        OraclePredictionError
        InputFileError [ValueError]
        RepositoryAssemblyError [ValueError]
        PortInUseError
        HostAddressError [ValueError]
        ServingEnvError
        TritonStartError
        InferenceError
      DeployError [RuntimeError]
        OutputPathError [ValueError]
        PackError
          PackOutputError [OutputPathError]
          PackTargetError [ValueError]
          PackRequirementsError
        StoreLocationError [ValueError]
          StorePathError
          StoreAccessError
          NotATritonModelError
        KServeManifestError [ValueError]
    CustomCodeWarning [UserWarning]
    BatchingWarning [UserWarning]

Two classes stand outside the family on purpose: ``RequestError`` of ``export/_python_backend_model.py`` and
``TextRequestError`` of ``export/_text_pipeline.py`` derive from ``ValueError`` only: they stand in files an ONNX
export copies verbatim into its repository, which Triton runs without mlflow-triton; the exported ``model.py`` turns
each into a Triton error. ``PackToolMissingError`` (``mlflow_triton.deploy.errors``) is another name of
``MissingExtraError``.
"""

import importlib
import os
from collections.abc import Iterable
from types import ModuleType

from mlflow_triton.runtime.errors import (
    ModelLoadError,
    OutputError,
    PredictionError,
    RequestError,
    RowCountError,
    TensorMappingError,
)
from mlflow_triton.shared_contract import ContractError, MlflowTritonError

__all__ = [
    "BatchingRefusedError",
    "BatchingWarning",
    "BundledTritonUnavailableError",
    "ContractError",
    "CustomCodeWarning",
    "DeployError",
    "ExampleFormError",
    "ExamplePredictionError",
    "ExportError",
    "HostAddressError",
    "InferenceError",
    "InputFileError",
    "InterpreterError",
    "InvalidArgumentError",
    "KServeManifestError",
    "LocalTritonError",
    "MissingExtraError",
    "MlflowTritonError",
    "ModelLoadError",
    "ModelSourceError",
    "NotATritonModelError",
    "OraclePredictionError",
    "OutputError",
    "OutputPathError",
    "PackError",
    "PackOutputError",
    "PackRequirementsError",
    "PackTargetError",
    "ParityError",
    "PortInUseError",
    "PredictionError",
    "RepositoryAssemblyError",
    "RequestError",
    "RowCountError",
    "ServingEnvError",
    "StoreAccessError",
    "StoreLocationError",
    "StorePathError",
    "TensorMappingError",
    "TritonInstallError",
    "TritonStartError",
    "UnsupportedModelError",
    "UnsupportedSchemaError",
    "ValidationError",
    "install_command",
    "missing_extra_message",
    "require_extra",
]


# --- logging a model -----------------------------------------------------------------------------------------


class InvalidArgumentError(MlflowTritonError, ValueError):
    """An argument of a logging call is missing, malformed or unsupported."""


class ExampleFormError(InvalidArgumentError):
    """The input example's form gives no rows the typed mapping can frame as MLflow's schema enforcement frames them
    (a list of lists for one Array column, a dict of lists made one row); ``protocol="auto"`` then asks MLflow's
    serving protocol, whose own parsing may take it (a type-hinted model)."""


class UnsupportedSchemaError(MlflowTritonError, ValueError):
    """The MLflow signature cannot be mapped onto Triton tensors without an adapter."""


class ValidationError(MlflowTritonError, RuntimeError):
    """The example prediction or its tensor mapping failed before anything was logged."""


class ExamplePredictionError(ValidationError):
    """The model's own ``predict`` failed on the input example (its error is the cause)."""


class BatchingRefusedError(MlflowTritonError, ValueError):
    """``max_batch_size=N`` cannot be honoured: a tensor has no row axis, or rows are not predicted independently."""


class CustomCodeWarning(UserWarning):
    """Custom code the logged model refers to will not import where Triton loads it (also in validation.json)."""


class BatchingWarning(UserWarning):
    """A batched repository (``max_batch_size=N``) has a limit on the server its clients must respect."""


# --- an optional dependency --------------------------------------------------------------------------------------


class MissingExtraError(MlflowTritonError, ImportError):
    """An optional dependency is not installed; the message names the extra that installs it
    (:func:`require_extra`)."""


def install_command(extra: str) -> str:
    """The command that installs one extra of mlflow-triton, as every message quotes it."""
    return f"pip install 'mlflow-triton[{extra}]'"


def missing_extra_message(needs: str, extra: str, note: str = "") -> str:
    """``<needs>: pip install 'mlflow-triton[<extra>]' (<note>)``: the one wording of "install the extra".

    ``needs`` says who needs what (``mlflow_triton.pytorch needs PyTorch``), ``note`` what else will do.
    """
    return f"{needs}: {install_command(extra)}" + (f" ({note})" if note else "")


def require_extra(module_name: str, extra: str, needs: str, note: str = "") -> ModuleType:
    """Import ``module_name`` on first use, or raise :class:`MissingExtraError` naming ``extra``."""
    try:
        return importlib.import_module(module_name)
    except ImportError as error:
        raise MissingExtraError(missing_extra_message(needs, extra, note)) from error


# --- exporting to ONNX ----------------------------------------------------------------------------------------


class ExportError(MlflowTritonError, RuntimeError):
    """The model could not be exported; nothing was written."""


class UnsupportedModelError(ExportError, ValueError):
    """A converter cannot express the model; the message names the step or op and what to do instead."""


class ParityError(ExportError):
    """onnxruntime and ``pyfunc.predict`` disagree; the message names the output, the difference and the input."""


# --- a local Triton (check, serve) -----------------------------------------------------------------------------


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


# --- deployment (pack, locate, check|serve --from-store, kserve) ------------------------------------------------


class DeployError(MlflowTritonError, RuntimeError):
    """Root of the errors raised while packing, locating or describing a repository for deployment."""


class OutputPathError(DeployError, ValueError):
    """``--out`` cannot be written: a symbolic link, below a file, an existing file or a non-empty directory."""


class PackError(DeployError):
    """Root of the errors of ``mlflow-triton pack``; ``pack``'s are raised before anything is written to
    ``--out``."""


class PackOutputError(PackError, OutputPathError):
    """``--out`` cannot receive the packed repository (it exists and is not empty, it is a file or a symbolic
    link, it lies inside a model it packs)."""


class PackTargetError(PackError, ValueError):
    """The target cannot be packed for here: unknown name, a ``--python`` that contradicts it, no interpreter."""


class PackRequirementsError(PackError):
    """A model's requirements cannot install on the target: a pin without a release for its Python (pip's own
    words are quoted), or a wheel that needs a newer glibc than the target has."""


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
