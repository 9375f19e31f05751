"""Run generated Triton model repositories against a real ``tritonserver``.

The harness has four small parts, usable on their own:

* :mod:`mlflow_triton.local.installation` -- where the server comes from (the Triton 2.51
  bundled in the ``nvidia-pytriton`` wheel, or an existing installation such as an NGC
  container) and what that installation demands of a serving environment.
* :mod:`mlflow_triton.local.serving_env` -- a cached virtualenv built from a model's
  ``requirements.txt`` under the installation's constraints.
* :mod:`mlflow_triton.local.server` -- a ``tritonserver`` process on loopback ports, as a
  context manager that always stops it.
* :mod:`mlflow_triton.local.send` -- sends a model's shipped ``request.json`` /
  ``request.bin`` exactly as a user's ``curl`` would, and decodes the answer.

Typical use::

    inst = TritonInstallation.bundled(cache_dir)
    env = ensure_serving_env(model_dir / "requirements.txt", inst.serving_constraints, cache_dir)
    with TritonServer(repo_root, model_dir.name, installation=inst, serving_env=env) as server:
        outputs, form = send_shipped_request(server.url, model_dir)
"""

from mlflow_triton.local.send import InferenceError, ShippedResponse, send_shipped_request
from mlflow_triton.local.server import TritonServer, TritonStartError
from mlflow_triton.local.serving_env import (
    ServingEnvError,
    check_requirements,
    default_cache_dir,
    ensure_serving_env,
    env_python_version,
)
from mlflow_triton.local.installation import TritonInstallation, TritonInstallError

__all__ = [
    "InferenceError",
    "ServingEnvError",
    "ShippedResponse",
    "TritonInstallError",
    "TritonInstallation",
    "TritonServer",
    "TritonStartError",
    "check_requirements",
    "default_cache_dir",
    "ensure_serving_env",
    "env_python_version",
    "send_shipped_request",
]
