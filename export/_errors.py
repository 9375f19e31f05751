"""The export's errors: members of the one mlflow-triton error family."""

from mlflow_triton.errors import InvalidArgumentError, MlflowTritonError


class ExportError(MlflowTritonError, RuntimeError):
    """The model could not be exported; nothing was written."""


class UnsupportedModelError(ExportError, ValueError):
    """A converter cannot express the model; the message names the step or op and what to do instead."""


class ParityError(ExportError):
    """onnxruntime and ``pyfunc.predict`` disagree; the message names the output, the difference and the input."""


__all__ = ["ExportError", "InvalidArgumentError", "ParityError", "UnsupportedModelError"]
