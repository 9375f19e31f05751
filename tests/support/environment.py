"""Keep MLflow's process-wide settings from leaking between tests."""

import contextlib
import os

MLFLOW_VARIABLES = ("MLFLOW_TRACKING_URI", "MLFLOW_REGISTRY_URI", "MLFLOW_EXPERIMENT_ID", "MLFLOW_EXPERIMENT_NAME")


@contextlib.contextmanager
def preserved_environment(names=MLFLOW_VARIABLES):
    """Restore each variable in ``names`` to its value (or absence) on exit."""
    saved = {name: os.environ.get(name) for name in names}
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
