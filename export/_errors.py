"""The export's errors, defined in :mod:`mlflow_triton.errors` with the rest of the one mlflow-triton family."""

from mlflow_triton.errors import ExportError, InvalidArgumentError, ParityError, UnsupportedModelError

__all__ = ["ExportError", "InvalidArgumentError", "ParityError", "UnsupportedModelError"]
