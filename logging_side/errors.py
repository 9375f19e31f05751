"""The mlflow-triton error family.

Every error derives from ``MlflowTritonError`` (defined in the stdlib-only
contract so the runtime shares it). Messages name the offending field and the
allowed values.
"""

from mlflow_triton.shared_contract import ContractError, MlflowTritonError


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


__all__ = [
    "BatchingRefusedError",
    "BatchingWarning",
    "ContractError",
    "CustomCodeWarning",
    "ExampleFormError",
    "ExamplePredictionError",
    "InvalidArgumentError",
    "MlflowTritonError",
    "UnsupportedSchemaError",
    "ValidationError",
]
