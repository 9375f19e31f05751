"""The peers the generated repository is measured against, each started on 127.0.0.1 by the benchmark.

* :class:`MlflowServe` -- ``mlflow models serve -m <package> --env-manager local`` (uvicorn, 1 worker).
* :class:`MLServer` -- ``mlserver start DIR`` with the MLflow runtime (``mlserver_mlflow.MLflowRuntime``)
  on the same MLflow package, in its own virtualenv (:func:`ensure_mlserver_env`: the package's
  ``requirements.txt`` + ``mlserver`` + ``mlserver-mlflow``, built once into the serving-environment
  cache, never into the project's venv: MLServer pins packages the project does not). MLServer's
  defaults otherwise: ``parallel_workers`` 1 (inference runs in one worker process), no adaptive
  batching. It takes a V2 JSON body whose input names are the DataFrame's column names.
* :func:`export_python_backend` -- the ``--backend python`` ONNX export of the same package (dynamic
  batching), served by its own ``tritonserver`` with its own serving environment (onnxruntime +
  numpy<2); :func:`export_body` scales the export's shipped ``request.json`` to the benchmark's rows.

Every server runs in its own process group and is stopped with it (SIGTERM, then SIGKILL).
"""

from __future__ import annotations

import json
import math
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

#: MLServer and its MLflow runtime, as checked with mlflow 3.17.2 and numpy 1.26.4. uvloop 0.22 makes
#: ``asyncio.get_event_loop()`` raise "There is no current event loop" in MLServer 1.7.1's inference worker
#: (mlserver/parallel/worker.py), so no model ever loads; 0.21 is the release MLServer 1.7.1 was built with.
MLSERVER_REQUIREMENTS = ("mlserver==1.7.1", "mlserver-mlflow==1.7.1", "uvloop<0.22")
#: The same numpy as the project's venv and the Triton serving environments (Triton 2.51's stub needs numpy<2).
MLSERVER_CONSTRAINTS = ("numpy<2",)
#: Large enough for Triton's dynamic batcher to join four 1,000-row requests into one execution.
EXPORT_MAX_BATCH_SIZE = 4096


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ServerProcess:
    """A server started as its own process group, ready when ``GET ready_path`` answers 200."""

    name = "server"
    ready_path = "/"

    def __init__(self, log_path: Path, startup_timeout: float = 180.0):
        self.log_path = Path(log_path)
        self.startup_timeout = startup_timeout
        self.port = 0
        self._proc = None
        self._log = None

    @property
    def pid(self) -> int | None:
        """The server's PID, which leads its session (every worker it starts shares it); ``None`` when stopped."""
        return self._proc.pid if self._proc else None

    def command(self) -> tuple[list[str], dict[str, str]]:
        """(argv, environment) of the server; ``self.port`` is chosen already."""
        raise NotImplementedError

    def __enter__(self):
        self.port = free_port()
        argv, env = self.command()
        self._log = open(self.log_path, "wb")
        self._proc = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=self._log, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )
        try:
            self._wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.startup_timeout
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise RuntimeError(f"{self.name} exited ({self._proc.returncode}); see {self.log_path}")
            try:
                with opener.open(f"http://127.0.0.1:{self.port}{self.ready_path}", timeout=2) as response:
                    if response.status == 200:
                        return
            except OSError:
                pass
            time.sleep(0.25)
        raise RuntimeError(f"{self.name} not ready after {self.startup_timeout:.0f}s; see {self.log_path}")

    def stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None:
            for sig, wait in ((signal.SIGTERM, 10), (signal.SIGKILL, 5)):
                try:
                    os.killpg(proc.pid, sig)
                except (ProcessLookupError, PermissionError):
                    break
                try:
                    proc.wait(wait)
                    break
                except subprocess.TimeoutExpired:
                    continue
        if self._log is not None:
            self._log.close()
            self._log = None


class MlflowServe(ServerProcess):
    """``mlflow models serve`` of a local package (uvicorn, 1 worker: MLflow's default)."""

    name = "mlflow models serve"
    ready_path = "/ping"

    def __init__(self, package: Path, log_path: Path, startup_timeout: float = 180.0):
        super().__init__(log_path, startup_timeout)
        self.package = package

    def command(self):
        bin_dir = str(Path(sys.executable).parent)
        env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
        return (
            [
                str(Path(bin_dir) / "mlflow"),
                "models",
                "serve",
                "-m",
                str(self.package),
                "--env-manager",
                "local",
                "-h",
                "127.0.0.1",
                "-p",
                str(self.port),
            ],
            env,
        )


def ensure_mlserver_env(package: Path, progress=print, constraints=MLSERVER_CONSTRAINTS) -> Path:
    """The cached virtualenv with the package's requirements, MLServer and its MLflow runtime (pip ``constraints``)."""
    from mlflow_triton.local.serving_env import ensure_env_for_requirements, requirement_lines

    lines = requirement_lines((package / "requirements.txt").read_text()) + list(MLSERVER_REQUIREMENTS)
    return ensure_env_for_requirements(
        lines, constraints, progress=progress, source=f"MLServer + {package / 'requirements.txt'}"
    )


class MLServer(ServerProcess):
    """``mlserver start <settings dir>`` serving one MLflow package with ``mlserver_mlflow.MLflowRuntime``."""

    name = "mlserver start"

    def __init__(
        self,
        env: Path,
        package: Path,
        model_name: str,
        settings_dir: Path,
        log_path: Path,
        startup_timeout: float = 180.0,
        adaptive_batching: dict | None = None,
    ):
        super().__init__(log_path, startup_timeout)
        self.env = Path(env)
        # Absolute: MLServer reads a relative ``uri`` from the model's settings folder, not from where it started.
        self.package = Path(package).resolve()
        self.model_name = model_name
        self.settings_dir = Path(settings_dir)
        self.ready_path = f"/v2/models/{model_name}/ready"
        # {"max_batch_size": requests, "max_batch_time": seconds}: MLServer's adaptive batching; None: off.
        self.adaptive_batching = adaptive_batching

    def command(self):
        shutil.rmtree(self.settings_dir, ignore_errors=True)
        (self.settings_dir / self.model_name).mkdir(parents=True)
        settings = {"http_port": self.port, "grpc_port": free_port(), "metrics_port": free_port(), "host": "127.0.0.1"}
        model = {
            "name": self.model_name,
            "implementation": "mlserver_mlflow.MLflowRuntime",
            "parameters": {"uri": str(self.package)},
            **(self.adaptive_batching or {}),
        }
        (self.settings_dir / "settings.json").write_text(json.dumps(settings, indent=1))
        (self.settings_dir / self.model_name / "model-settings.json").write_text(json.dumps(model, indent=1))
        bin_dir = self.env / "bin"
        env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
        env["PATH"] = f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"
        return [str(bin_dir / "mlserver"), "start", str(self.settings_dir)], env


def mlserver_body(triton_body: dict, tensor_to_column: dict[str, str]) -> bytes:
    """The generated repository's V2 body with the DataFrame's column names as input names, no outputs list."""
    inputs = [dict(entry, name=tensor_to_column[entry["name"]]) for entry in triton_body["inputs"]]
    return json.dumps({"inputs": inputs}).encode()


def export_python_backend(package: Path, out_dir: Path) -> Path:
    """``export_onnx(package, out_dir, backend="python")`` into a fresh ``out_dir``; returns the model directory."""
    from mlflow_triton.export import export_onnx

    shutil.rmtree(out_dir, ignore_errors=True)
    return export_onnx(str(package), out_dir, max_batch_size=EXPORT_MAX_BATCH_SIZE, backend="python")


def export_body(export_dir: Path, triton_body: dict) -> bytes:
    """The export's shipped request.json with the rows of ``triton_body`` (shapes ``[rows, *exported dims]``)."""
    from mlflow_triton.repository.guard import files_directory

    shipped = json.loads((files_directory(export_dir) / "request.json").read_text())
    values = {entry["name"]: entry for entry in triton_body["inputs"]}
    inputs = []
    for entry in shipped["inputs"]:
        source = values[entry["name"]]
        shape = [source["shape"][0], *entry["shape"][1:]]
        if math.prod(shape) != len(source["data"]):
            raise ValueError(f"input {entry['name']}: {len(source['data'])} values do not fill the export's {shape}")
        inputs.append(dict(entry, shape=shape, data=source["data"]))
    return json.dumps({"inputs": inputs, "outputs": shipped["outputs"]}).encode()
