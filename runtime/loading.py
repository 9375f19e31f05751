"""Loading the MLflow package under ``1/artifact/`` on the device Triton assigned.

MLflow reads the prediction device and the Hugging Face offline switches from
environment variables, so loading temporarily sets them. ``load_predictor``
serializes loads behind one lock and restores every variable it touched, also
when loading fails. The lock does not protect other code that changes
``os.environ`` at the same time, direct MLflow loads, or another imported copy
of this runtime (each generated model.py has its own); use separate processes
for those. Predictions are not serialized by this lock.
"""

import contextlib
import os
import threading

_LOAD_LOCK = threading.Lock()

#: Inside the version folder (``<model>/1/``): the full copy of the MLflow package that model.py loads. Defined
#: here, where the package can import it outside Triton too (``repository.layout`` names every path from it).
ARTIFACT_DIRECTORY = "artifact"

# No model hub or network access while loading: everything must be in the artifact.
OFFLINE_ENVIRONMENT = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "HF_HUB_DISABLE_TELEMETRY": "1",
    "MLFLOW_HUGGINGFACE_USE_DEVICE_MAP": "false",
}
DEVICE_VARIABLE = "MLFLOW_DEFAULT_PREDICTION_DEVICE"


def device_for_instance(kind, device_id):
    """The torch device for Triton's ``model_instance_kind`` / ``model_instance_device_id``."""
    if str(kind or "CPU").upper() in ("GPU", "KIND_GPU"):
        return f"cuda:{int(device_id or 0)}"
    return "cpu"


def device_setting(flavor, device):
    """The value of MLFLOW_DEFAULT_PREDICTION_DEVICE that selects ``device`` for ``flavor``.

    MLflow's PyTorch flavor takes a torch device string; its Transformers flavor
    takes a device index, -1 meaning CPU.
    """
    if flavor == "transformers":
        return "-1" if device == "cpu" else device.split(":", 1)[1]
    return device


@contextlib.contextmanager
def temporary_environment(values):
    """Set ``values`` in ``os.environ`` (a value ``None`` unsets its variable) and restore each touched variable
    afterwards."""
    previous = {name: os.environ.get(name) for name in values}
    try:
        _set_environment(values)
        yield
    finally:
        _set_environment(previous)


def _set_environment(values):
    for name, value in values.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


def load_predictor(artifact_path, flavor, device):
    """``mlflow.pyfunc.load_model`` on ``device``, with offline settings, under the lock."""
    import mlflow.pyfunc  # imported lazily: heavy, and only needed once per instance

    settings = dict(OFFLINE_ENVIRONMENT)
    settings[DEVICE_VARIABLE] = device_setting(flavor, device)
    with _LOAD_LOCK, temporary_environment(settings):
        return mlflow.pyfunc.load_model(str(artifact_path))
