"""The runtime's errors: what the code inside Triton raises, members of the one mlflow-triton family.

Vendored into every ``1/model.py`` right after the contract (which defines ``MlflowTritonError``), so it imports
nothing else; ``mlflow_triton.errors`` re-exports every class, and draws the whole tree. ``triton_model.py`` turns
each into a Triton error once, per request: ``RequestError`` (the client's) into ``INVALID_ARG``,
``PredictionError`` and ``OutputError`` (the model's) into ``INTERNAL``; the two the codecs and the batching raise
(``TensorMappingError``, ``RowCountError``) are turned into one of those where it is known whose fault they are.
"""

# <mlflow-triton package imports: removed when composing model.py>
from ..shared_contract.contract import MlflowTritonError

# </mlflow-triton package imports>


class TensorMappingError(MlflowTritonError, ValueError):
    """A tensor or value does not fit the configured mapping; the message names it."""


class RowCountError(MlflowTritonError, ValueError):
    """Row counts that do not line up; the message names the tensors and their counts."""


class RequestError(MlflowTritonError, ValueError):
    """The request does not fit the model's inputs or its params schema, or holds no body MLflow's serving protocol
    can read: the client's error (``INVALID_ARG``)."""


class PredictionError(MlflowTritonError, RuntimeError):
    """The model's own ``predict`` raised (``INTERNAL``): its type for the client, its text in Triton's log."""


class OutputError(MlflowTritonError, RuntimeError):
    """The prediction does not fit the configured output tensors (``INTERNAL``); the message names it."""


class ModelLoadError(MlflowTritonError, RuntimeError):
    """``initialize`` could not load the MLflow model under ``<version>/artifact/``."""
