"""mlflow-triton: MLflow models plus a portable Triton Python-backend repository.

Use the framework modules instead of ``mlflow.<framework>.log_model``::

    from mlflow_triton import sklearn, triton
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
