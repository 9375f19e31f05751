"""A real ``mlflow server`` for end-to-end tests, always stopped afterwards.

``running_mlflow_server(root)`` starts ``mlflow server`` on a free 127.0.0.1 port with
a sqlite backend store in ``root`` and artifacts served through the server's proxy
(``--serve-artifacts --artifacts-destination <root>/artifacts``), waits for
``/health`` and stops the server on exit: SIGTERM to its process group, SIGKILL
after a grace period; also when startup fails or the test body raises.

The pytest fixture ``mlflow_server`` (session scope) shares one server between all
modules that import it: start-up takes tens of seconds on a busy machine.
``using_tracking(uri)`` points MLflow's tracking and registry URIs at it for one
test and restores the previous ones afterwards.
"""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.support.environment import preserved_environment

HOST = "127.0.0.1"
STARTUP_TIMEOUT_S = float(os.environ.get("MLFLOW_TRITON_SERVER_STARTUP_TIMEOUT", "180"))
STOP_GRACE_S = 10.0
PORT_ATTEMPTS = 3


class MlflowServerError(RuntimeError):
    """The server did not become healthy; the message carries the end of its log."""


@dataclasses.dataclass(frozen=True)
class MlflowServer:
    url: str
    root: Path
    artifacts: Path
    log_path: Path
    pid: int
    startup_s: float

    def log_tail(self, lines=40):
        return _tail(self.log_path, lines)


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def running_mlflow_server(root, *, startup_timeout=STARTUP_TIMEOUT_S, artifacts_destination=None, environment=None):
    """Start ``mlflow server`` under ``root``; yield an ``MlflowServer``; always stop it.

    ``artifacts_destination`` (default ``<root>/artifacts``): where the server's proxy stores artifacts, for
    example ``s3://bucket/prefix``; ``environment``: variables added to the server's (``MLFLOW_S3_ENDPOINT_URL``,
    credentials).
    """
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    artifacts = artifacts_destination or root / "artifacts"
    last_error = None
    for attempt in range(1, PORT_ATTEMPTS + 1):
        port = free_port()
        log_path = root / f"mlflow-server-{attempt}.log"
        started = time.monotonic()
        process = _start(root, artifacts, port, log_path, environment or {})
        try:
            try:
                _wait_for_health(process, f"http://{HOST}:{port}", log_path, startup_timeout)
            except MlflowServerError as error:
                # A port taken between free_port() and bind: try another one.
                if process.poll() is not None and "address already in use" in _tail(log_path).lower():
                    last_error = error
                    continue
                raise
            yield MlflowServer(
                url=f"http://{HOST}:{port}",
                root=root,
                artifacts=artifacts,
                log_path=log_path,
                pid=process.pid,
                startup_s=time.monotonic() - started,
            )
            return
        finally:
            _stop(process)
    raise last_error


def _start(root, artifacts, port, log_path, environment):
    command = [
        sys.executable,
        "-m",
        "mlflow",
        "server",
        "--host",
        HOST,
        "--port",
        str(port),
        "--workers",
        "1",
        "--backend-store-uri",
        f"sqlite:///{root / 'mlflow.db'}",
        "--serve-artifacts",
        "--artifacts-destination",
        str(artifacts),
    ]
    env = {key: value for key, value in os.environ.items() if not key.startswith("MLFLOW_")}
    env["MLFLOW_SERVER_ENABLE_JOB_EXECUTION"] = "false"  # no background job runner to clean up
    env.update(environment)
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            command,
            cwd=root,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # own process group: uvicorn is a grandchild
        )
    _STARTED[process.pid] = process
    return process


def _wait_for_health(process, url, log_path, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise MlflowServerError(
                f"mlflow server exited with status {process.returncode} before {url}/health answered; "
                f"log:\n{_tail(log_path)}"
            )
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=2) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.2)
    raise MlflowServerError(f"mlflow server at {url} was not healthy after {timeout:.0f} s; log:\n{_tail(log_path)}")


def _stop(process):
    """SIGTERM to the server's process group, SIGKILL after STOP_GRACE_S; reaps the child."""
    try:
        _signal_group(process, signal.SIGTERM)
        try:
            process.wait(timeout=STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            pass
        # The group may outlive its leader (uvicorn): kill whatever is left.
        _signal_group(process, signal.SIGKILL)
        process.wait(timeout=STOP_GRACE_S)
    finally:
        _STARTED.pop(process.pid, None)


def _signal_group(process, signum):
    try:
        os.killpg(process.pid, signum)  # the group this module created (start_new_session)
    except (ProcessLookupError, PermissionError):
        if process.poll() is None:
            process.send_signal(signum)


def _tail(path, lines=40):
    try:
        return "\n".join(Path(path).read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "<no log>"


# Servers still running when the interpreter exits (a crash between start and stop).
_STARTED = {}


@atexit.register
def _stop_leftovers():
    for process in list(_STARTED.values()):
        _stop(process)


@contextlib.contextmanager
def using_tracking(uri):
    """Point MLflow's tracking and registry URIs at ``uri``; restore both afterwards."""
    import mlflow
    from mlflow.tracking._model_registry import utils as registry_utils
    from mlflow.tracking._tracking_service import utils as tracking_utils

    saved_tracking = tracking_utils._tracking_uri
    saved_registry = registry_utils._registry_uri
    with preserved_environment():
        mlflow.set_tracking_uri(uri)
        mlflow.set_registry_uri(uri)
        try:
            yield uri
        finally:
            while mlflow.active_run() is not None:
                mlflow.end_run()
            mlflow.set_tracking_uri(saved_tracking)
            registry_utils._registry_uri = saved_registry


class _SharedServer:
    """One server per pytest session, however many modules import the fixture."""

    def __init__(self):
        self._stack = None
        self._server = None
        self._users = 0

    @contextlib.contextmanager
    def use(self, tmp_path_factory):
        if self._server is None:
            stack = contextlib.ExitStack()
            self._server = stack.enter_context(running_mlflow_server(tmp_path_factory.mktemp("mlflow-server")))
            self._stack = stack
        self._users += 1
        try:
            yield self._server
        finally:
            self._users -= 1
            if self._users == 0:
                stack, self._stack, self._server = self._stack, None, None
                stack.close()


_SHARED = _SharedServer()


@pytest.fixture(scope="session")
def mlflow_server(tmp_path_factory):
    """A running ``MlflowServer`` shared by the whole session; stopped at its end."""
    with _SHARED.use(tmp_path_factory) as server:
        yield server


# --- artifacts that travel through MLflow --------------------------------------------------------


def write_triton_repository(parent, name="existing_model"):
    """A hand-written Triton model directory with nested, binary, empty and hidden files."""
    repository = Path(parent) / name
    (repository / "1").mkdir(parents=True)
    (repository / "3" / "assets" / "nested").mkdir(parents=True)
    (repository / "config.pbtxt").write_text(
        f'name: "{name}"\nbackend: "python"\nmax_batch_size: 0\n'
        'input [ { name: "X" data_type: TYPE_FP32 dims: [ -1, 2 ] } ]\n'
        'output [ { name: "Y" data_type: TYPE_FP32 dims: [ -1, 2 ] } ]\n'
    )
    (repository / "1" / "model.py").write_text("class TritonPythonModel:\n    pass\n")
    (repository / "1" / "weights.bin").write_bytes(bytes(range(256)) * 8 + b"\x00\x00")
    (repository / "1" / "empty.txt").write_bytes(b"")
    (repository / "3" / "model.py").write_text("# version 3\r\nclass TritonPythonModel:\n    pass\n")
    (repository / "3" / "assets" / "nested" / "labels with space.txt").write_text("setosa\nversicolor\n")
    (repository / ".hidden").write_text("kept\n")
    return repository


def file_tree(root):
    """``{relative POSIX path: bytes}`` of every regular file below ``root``."""
    root = Path(root)
    return {path.relative_to(root).as_posix(): path.read_bytes() for path in sorted(root.rglob("*")) if path.is_file()}
