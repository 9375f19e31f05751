"""``mlflow_triton.local``: generated repositories on a real local Triton server.

The command line (``mlflow-triton check|serve``) calls :func:`check_command` and
:func:`serve_command`; the parts below are usable on their own:

* :mod:`~mlflow_triton.local.installation` -- where the server comes from: the Triton 2.51 of
  the ``nvidia-pytriton`` wheel (``pip install 'mlflow-triton[local]'``), or an existing
  installation such as an NGC container's, and the constraints it puts on a serving environment.
* :mod:`~mlflow_triton.local.serving_env` -- cached virtualenvs built from ``requirements.txt``.
* :mod:`~mlflow_triton.local.interpreters` -- the Python they are built with (``--python X.Y``),
  which must be the Python of the target Triton's stub.
* :mod:`~mlflow_triton.local.server` -- a ``tritonserver`` process as a context manager that
  always stops it (loopback ports unless told otherwise).
* :mod:`~mlflow_triton.local.send` -- the shipped ``request.json`` / ``request.bin`` sent exactly
  as ``curl`` would, and the answer decoded.
* :mod:`~mlflow_triton.local.sources`, :mod:`~mlflow_triton.local.compare`,
  :mod:`~mlflow_triton.local.check`, :mod:`~mlflow_triton.local.serve` -- model URIs to
  repositories, the ``pyfunc`` oracle, and the two commands' flows.

Boundary: this part uses ``mlflow_triton`` (``triton.load_model``, the config reader, the
request writer), the runtime's codecs and the contract; the runtime, the contract and the
logging wrappers never import it. Typical use::

    inst = TritonInstallation.bundled()
    env = ensure_serving_env(model_dir / "requirements.txt", inst.serving_constraints)
    with TritonServer(repo_root, model_dir.name, installation=inst, serving_env=env) as server:
        outputs, form = send_shipped_request(server.url, model_dir)
"""

from .check import ValidationReport, check_models, expected_outputs, validate_model, validate_repository, write_report
from .commands import check_command, serve_command
from .errors import (
    BundledTritonUnavailableError,
    HostAddressError,
    InferenceError,
    InputFileError,
    InterpreterError,
    LocalTritonError,
    ModelSourceError,
    OraclePredictionError,
    PortInUseError,
    RepositoryAssemblyError,
    ServingEnvError,
    TritonInstallError,
    TritonStartError,
)
from .installation import TritonInstallation, choose_installation, default_cache_dir
from .interpreters import Interpreter, find_interpreter
from .send import ShippedResponse, curl_command, send_shipped_request
from .serve import serve_models
from .server import TritonServer
from .serving_env import check_requirements, ensure_serving_env, env_python_version, env_summary
from .sources import ModelSource, resolve_model

__all__ = [
    "BundledTritonUnavailableError",
    "HostAddressError",
    "InferenceError",
    "InputFileError",
    "Interpreter",
    "InterpreterError",
    "LocalTritonError",
    "ModelSource",
    "ModelSourceError",
    "OraclePredictionError",
    "PortInUseError",
    "RepositoryAssemblyError",
    "ServingEnvError",
    "ShippedResponse",
    "TritonInstallError",
    "TritonInstallation",
    "TritonServer",
    "TritonStartError",
    "ValidationReport",
    "check_command",
    "check_models",
    "check_requirements",
    "choose_installation",
    "curl_command",
    "default_cache_dir",
    "ensure_serving_env",
    "env_python_version",
    "env_summary",
    "expected_outputs",
    "find_interpreter",
    "resolve_model",
    "send_shipped_request",
    "serve_command",
    "serve_models",
    "validate_model",
    "validate_repository",
    "write_report",
]
