"""The example runner: log each example model, then prove it with ``mlflow_triton.local``.

The real-Triton harness itself lives in the installed package (``mlflow_triton.local``,
``mlflow-triton check|serve``); its public names are re-exported here for existing callers::

    from examples.runner import TritonInstallation, TritonServer, ensure_serving_env, send_shipped_request
"""

from mlflow_triton.local import (
    TritonInstallation,
    TritonServer,
    ensure_serving_env,
    send_shipped_request,
    validate_repository,
)
from mlflow_triton.local.check import ValidationReport, expected_outputs, validate_model, write_report
from mlflow_triton.local.errors import InferenceError, ServingEnvError, TritonInstallError, TritonStartError
from mlflow_triton.local.installation import default_cache_dir
from mlflow_triton.local.send import ShippedResponse
from mlflow_triton.local.serving_env import check_requirements, env_python_version

__all__ = [
    "InferenceError",
    "ServingEnvError",
    "ShippedResponse",
    "TritonInstallError",
    "TritonInstallation",
    "TritonServer",
    "TritonStartError",
    "ValidationReport",
    "check_requirements",
    "default_cache_dir",
    "ensure_serving_env",
    "env_python_version",
    "expected_outputs",
    "send_shipped_request",
    "validate_model",
    "validate_repository",
    "write_report",
]
