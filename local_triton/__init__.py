"""``mlflow_triton.local``: generated repositories on a real local Triton server.

The command line (``mlflow-triton check|serve``) calls [check_command][.check_command] and
[serve_command][.serve_command]. The package offers those two and the pieces a program composes them from
(``__all__``). Its modules without a leading ``_`` are usable on their own (other parts and the
example runner use them), and its errors are in [errors][mlflow_triton.errors]:

* ``installation`` -- where the server comes from: the Triton 2.51 of
  the ``nvidia-pytriton`` wheel (``pip install 'mlflow-triton[local]'``), or an existing
  installation such as an NGC container's, and the constraints it puts on a serving environment.
* ``serving_env`` -- cached virtualenvs built from ``requirements.txt``.
* ``interpreters`` -- the Python they are built with (``--python X.Y``),
  which must be the Python of the target Triton's stub.
* ``send`` -- the shipped ``request.json`` / ``request.bin`` sent exactly
  as ``curl`` would, and the answer decoded.
* ``sources``, ``user_input``, ``check`` -- model URIs to repositories, a user's own input file, and
  the check of a repository against the ``pyfunc`` oracle.

Within the part: ``_server`` (a ``tritonserver`` process as a context manager that always stops
it; loopback ports unless told otherwise), ``_compare`` (answers against the oracle, one table of
tolerances), ``_serve`` and ``_commands`` (the two commands' flows), ``_download`` (a model's
download folder, emptied before each fetch) and ``_stale`` (build folders a killed process left).

Boundary: this part uses ``mlflow_triton.triton`` (``load_model``), the repository format
(``mlflow_triton.repository``: the config reader, the request files), the command frame, the
runtime's codecs and conversions, and the contract; the runtime, the contract and the logging
wrappers never import it. Typical use:

    inst = TritonInstallation.bundled()
    env = ensure_serving_env(model_dir / "requirements.txt", inst.serving_constraints)
    with TritonServer(repo_root, model_dir.name, installation=inst, serving_env=env) as server:
        outputs, form = send_shipped_request(server.url, model_dir)
"""

from ._commands import check_command, serve_command
from ._serve import serve_models
from ._server import TritonServer
from .check import check_models, validate_repository
from .errors import LocalTritonError
from .installation import TritonInstallation
from .send import send_shipped_request
from .serving_env import ensure_serving_env
from .sources import ModelSource, resolve_model

__all__ = [
    "LocalTritonError",
    "ModelSource",
    "TritonInstallation",
    "TritonServer",
    "check_command",
    "check_models",
    "ensure_serving_env",
    "resolve_model",
    "send_shipped_request",
    "serve_command",
    "serve_models",
    "validate_repository",
]
