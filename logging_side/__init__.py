"""mlflow-triton: MLflow models plus a portable Triton Python-backend repository.

Use the framework modules instead of ``mlflow.<framework>.log_model``:

    from mlflow_triton import sklearn, triton

and ``mlflow_triton.add_repository(model_uri)`` for a model already in MLflow.
"""

from __future__ import annotations

import importlib

TYPE_CHECKING = False  # not typing's: the program's entry point imports this package first (mlflow_triton._console)
if TYPE_CHECKING:
    from typing import Any

    from mlflow.models.model import ModelInfo

__version__ = "0.1.0"

__all__ = ["__version__", "add_repository"]


# Reachable as attributes after a bare ``import mlflow_triton`` (``mlflow_triton.sklearn.log_model(...)``, as
# ``mlflow.sklearn`` is), each imported on first use: ``import mlflow_triton`` stays light.
def _submodules() -> tuple[str, ...]:
    # not at import time: importing any part (command_line, ...) loads this package first, and must stay light
    flavors = importlib.import_module(f"{__name__}.flavors")
    return ("errors", "triton", *flavors.wrapper_names())


def __getattr__(name: str) -> Any:
    if name in _submodules():
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_submodules()})


def add_repository(model_uri: str, **options: Any) -> ModelInfo:
    """Log a new MLflow model: ``model_uri`` unchanged plus its Triton repository.

    Imports the logging side on first call, so ``import mlflow_triton`` stays light.

    Args:
        model_uri: The model already in MLflow: a local directory, ``runs:/``, ``models:/`` or ``models:/m-<id>``.
        **options: ``input_example``, ``registered_model_name``, ``name``, ``triton_model_name``, ``max_batch_size``,
            ``max_queue_delay_microseconds``, ``zero_row_guard``, ``await_registration_for``, ``protocol``: each
            described under [the options of add_repository][mlflow_triton._existing.add_repository].

    Returns:
        MLflow's ``ModelInfo`` of the new model.
    """
    from ._existing import add_repository as add

    return add(model_uri, **options)
