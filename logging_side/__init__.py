"""mlflow-triton: MLflow models plus a portable Triton Python-backend repository.

Use the framework modules instead of ``mlflow.<framework>.log_model``::

    from mlflow_triton import sklearn, triton

and ``mlflow_triton.add_repository(model_uri)`` for a model already in MLflow.
"""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mlflow.models.model import ModelInfo

__version__ = "0.1.0"

__all__ = ["__version__", "add_repository"]


def add_repository(model_uri: str, **options: Any) -> "ModelInfo":
    """Log a new MLflow model: ``model_uri`` unchanged plus its Triton repository (``_existing.add_repository``)."""
    from ._existing import add_repository as add

    return add(model_uri, **options)
