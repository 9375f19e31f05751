"""A real ``tritonserver`` process on loopback ports, as a context manager.

::

    with TritonServer(repo_root, "my_model", installation=inst, serving_env=env) as server:
        print(server.url, server.version())

The server is started with ``--model-control-mode=explicit --load-model=<name>`` so that only
the model under test is loaded (other directories in the repository may belong to other
environments), and with ``--exit-on-error=false`` so that a model which fails to load leaves the
server up long enough for us to read Triton's own reason from ``POST /v2/repository/index``.
Startup failures raise :class:`TritonStartError` carrying that reason and the tail of the
server's log (stdout and stderr of the server and its Python stubs, including ``print`` output
of ``model.py``).

HTTP, gRPC and metrics listen on ``127.0.0.1`` only. The process runs in its own session
(process group) and is always stopped on exit -- normal, exception, ``KeyboardInterrupt`` and
``SIGTERM`` (while the context is active in the main thread, SIGTERM is turned into
``SystemExit`` so that ``__exit__`` runs): SIGTERM to the server, then SIGKILL to its process
group after a grace period.
"""

from __future__ import annotations

import collections
import json
import os
import signal
import socket
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

from mlflow_triton.local.serving_env import read_pyvenv_cfg
from mlflow_triton.local.installation import TritonInstallation

__all__ = ["TritonServer", "TritonStartError"]


class TritonStartError(RuntimeError):
    """``tritonserver`` did not become ready with the model loaded.

    ``reason`` is Triton's own explanation when it gave one (the model's ``reason`` from the
    repository index); ``log_tail`` holds the last lines of the server log.
    """

    def __init__(self, message: str, reason: str | None, log_tail: str, log_path: Path):
        full = message
        if reason:
            full += f"\nTriton says: {reason}"
        full += f"\n--- last lines of {log_path} ---\n{log_tail}"
        super().__init__(full)
        self.reason = reason
        self.log_tail = log_tail
        self.log_path = log_path


def _interpreter_library_dirs(serving_env: Path | None) -> list[Path]:
    """The folder holding the serving interpreter's own ``libpython3.X.so.1.0``, if it has one.

    The stub links ``libpython3.X.so.1.0`` dynamically and takes its standard library from the
    first ``python3`` on PATH. When that interpreter is not the system one (pyenv, conda), the
    system libpython would run with another build's extension modules: ``import ssl`` then fails
    with "undefined symbol: _PyModule_Add". Putting the interpreter's own library first keeps the
    two consistent.
    """
    home = read_pyvenv_cfg(serving_env).get("home") if serving_env is not None else None
    if not home:
        return []
    library_dir = Path(home).parent / "lib"
    return [library_dir] if any(library_dir.glob("libpython3*.so.1.0")) else []


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _free_ports(n: int) -> list[int]:
    ports: set[int] = set()
    while len(ports) < n:
        ports.add(_free_port())
    return sorted(ports)


class TritonServer:
    """Start ``tritonserver`` for one model of ``model_repository``; stop it on exit.

    :param model_repository: the repository root (holds ``<model_name>/config.pbtxt``).
    :param model_name: the model to load and wait for.
    :param installation: which server to run (:class:`TritonInstallation`).
    :param serving_env: virtualenv whose ``bin/`` goes first on ``PATH`` (the Python backend's
        interpreter takes its packages from there); ``None`` keeps the current ``PATH``.
    :param log_path: where the server's stdout/stderr go; if omitted, a file in a fresh
        temporary directory that is kept after the server stops (for post-mortems).
    :param startup_timeout: seconds to wait for server and model readiness.
    :param extra_args: more ``tritonserver`` arguments.
    """

    def __init__(
        self,
        model_repository: str | os.PathLike[str],
        model_name: str,
        *,
        installation: TritonInstallation,
        serving_env: str | os.PathLike[str] | None = None,
        log_path: str | os.PathLike[str] | None = None,
        startup_timeout: float = 180.0,
        stop_timeout: float = 15.0,
        extra_args: tuple[str, ...] = (),
    ):
        self.model_repository = Path(model_repository).resolve()
        self.model_name = model_name
        self.installation = installation
        self.serving_env = Path(serving_env) if serving_env is not None else None
        self._own_log_dir: str | None = None
        if log_path is None:
            self._own_log_dir = tempfile.mkdtemp(prefix="tritonserver-")
            log_path = Path(self._own_log_dir) / "tritonserver.log"
        self.log_path = Path(log_path)
        self.startup_timeout = startup_timeout
        self.stop_timeout = stop_timeout
        self.extra_args = tuple(extra_args)
        self.http_port = self.grpc_port = self.metrics_port = 0
        self._proc: subprocess.Popen | None = None
        self._log_file = None
        self._previous_sigterm = None

    # ------------------------------------------------------------------ public API
    @property
    def url(self) -> str:
        """``http://127.0.0.1:<http_port>`` (no trailing slash)."""
        return f"http://127.0.0.1:{self.http_port}"

    @property
    def grpc_url(self) -> str:
        return f"127.0.0.1:{self.grpc_port}"

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    def version(self) -> str:
        """The server's version from ``GET /v2`` (e.g. ``"2.51.0"``)."""
        return self._get_json("/v2")["version"]

    def metadata(self) -> dict:
        return self._get_json("/v2")

    def model_config(self) -> dict:
        """Triton's view of the loaded model's configuration (``GET /v2/models/<name>/config``)."""
        return self._get_json(f"/v2/models/{self.model_name}/config")

    def log_tail(self, n: int = 40) -> str:
        """The last ``n`` lines of the server log."""
        try:
            with open(self.log_path, errors="replace") as f:
                return "".join(collections.deque(f, maxlen=n))
        except FileNotFoundError:
            return ""

    def log_text(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def start(self) -> "TritonServer":
        """Start and wait for readiness; retries with fresh ports if one was taken meanwhile."""
        for attempt in range(3):
            try:
                self._start_once()
                return self
            except TritonStartError as err:
                self.stop()
                if "Address already in use" not in err.log_tail or attempt == 2:
                    raise
            except BaseException:  # incl. KeyboardInterrupt while waiting
                self.stop()
                raise
        raise AssertionError("unreachable")

    def stop(self) -> None:
        """SIGTERM the server (it unloads models and stops its stubs), SIGKILL its whole
        process group after ``stop_timeout`` seconds; then SIGKILL any stub left behind."""
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(self.stop_timeout)
            except BaseException as exc:  # timeout, or a second Ctrl+C while waiting
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                proc.wait()
                if not isinstance(exc, subprocess.TimeoutExpired):
                    raise
        if proc is not None:
            # Stubs are in the same group; make sure none outlives a server that exited early.
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None

    def __enter__(self) -> "TritonServer":
        self._install_sigterm_handler()
        try:
            return self.start()
        except BaseException:
            self.stop()
            self._restore_sigterm_handler()
            raise

    def __exit__(self, *exc) -> None:
        try:
            self.stop()
        finally:
            self._restore_sigterm_handler()

    # ------------------------------------------------------------------ internals
    def command(self) -> list[str]:
        inst = self.installation
        return [
            str(inst.server_binary),
            f"--model-repository={self.model_repository}",
            f"--backend-directory={inst.backend_directory}",
            "--model-control-mode=explicit",
            f"--load-model={self.model_name}",
            "--exit-on-error=false",
            "--strict-readiness=true",
            "--http-address=127.0.0.1",
            f"--http-port={self.http_port}",
            "--grpc-address=127.0.0.1",
            f"--grpc-port={self.grpc_port}",
            "--allow-metrics=true",
            "--allow-gpu-metrics=false",
            "--metrics-address=127.0.0.1",
            f"--metrics-port={self.metrics_port}",
            "--allow-sagemaker=false",
            "--allow-vertex-ai=false",
            f"--exit-timeout-secs={max(1, int(self.stop_timeout) - 5)}",
            *self.extra_args,
        ]

    def environment(self) -> dict[str, str]:
        env = dict(os.environ)
        # Don't let the caller's virtualenv / Python settings leak into the stub's interpreter.
        for name in ("VIRTUAL_ENV", "PYTHONHOME", "PYTHONPATH", "PYTHONSTARTUP"):
            env.pop(name, None)
        if self.serving_env is not None:
            env["PATH"] = f"{self.serving_env / 'bin'}{os.pathsep}{env.get('PATH', '')}"
            env["VIRTUAL_ENV"] = str(self.serving_env)
        libs = [str(d) for d in self.installation.library_dirs]
        libs.extend(str(d) for d in _interpreter_library_dirs(self.serving_env))
        if env.get("LD_LIBRARY_PATH"):
            libs.append(env["LD_LIBRARY_PATH"])
        if libs:
            env["LD_LIBRARY_PATH"] = os.pathsep.join(libs)
        env.setdefault("PYTHONUNBUFFERED", "1")  # model.py's print() reaches the log promptly
        return env

    def _start_once(self) -> None:
        self.http_port, self.grpc_port, self.metrics_port = _free_ports(3)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log_file = open(self.log_path, "ab")
        self._log_file.write(f"$ {' '.join(self.command())}\n".encode())
        self._log_file.flush()
        self._proc = subprocess.Popen(
            self.command(),
            stdin=subprocess.DEVNULL,
            stdout=self._log_file,
            stderr=subprocess.STDOUT,
            env=self.environment(),
            start_new_session=True,  # own process group: stop() can signal server + stubs
        )
        self._wait_ready()

    def _fail(self, message: str, reason: str | None = None) -> TritonStartError:
        time.sleep(0.2)  # let the last log lines land
        return TritonStartError(message, reason, self.log_tail(40), self.log_path)

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.startup_timeout
        while True:
            code = self._proc.poll() if self._proc else -1
            if code is not None:
                raise self._fail(f"tritonserver exited with status {code} during startup",
                                 self._reason_from_log())
            state, reason = self._model_state()
            if state == "READY" and self._status(f"/v2/models/{self.model_name}/ready") == 200 \
                    and self._status("/v2/health/ready") == 200:
                return
            if state == "UNAVAILABLE":
                raise self._fail(f"model {self.model_name!r} failed to load", reason)
            if state is None and self._status("/v2/health/live") == 200 and self._index_ok():
                # Live, index answers, but the model is not in it: wrong name or directory.
                raise self._fail(
                    f"model {self.model_name!r} is not in the repository {self.model_repository}",
                    self._reason_from_log())
            if time.monotonic() > deadline:
                raise self._fail(
                    f"tritonserver not ready with model {self.model_name!r} after "
                    f"{self.startup_timeout:.0f}s (model state: {state or 'unknown'})", reason)
            time.sleep(0.25)

    def _reason_from_log(self) -> str | None:
        """Triton's ``E...`` log lines (errors), e.g. a failed ``load`` with its cause."""
        errors = [l.strip() for l in self.log_text().splitlines()
                  if l.startswith("E") and ("failed" in l or "error" in l.lower())]
        return "\n".join(errors[-5:]) or None

    # --- HTTP helpers (stdlib only; no proxies for loopback) ---
    _opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))

    def _request(self, path: str, data: bytes | None = None, timeout: float = 5.0):
        req = urllib.request.Request(self.url + path, data=data,
                                     headers={"Content-Type": "application/json"} if data else {})
        return self._opener.open(req, timeout=timeout)

    def _status(self, path: str) -> int | None:
        try:
            with self._request(path, timeout=2.0) as resp:
                return resp.status
        except urllib.error.HTTPError as err:
            return err.code
        except (OSError, ValueError):
            return None

    def _get_json(self, path: str) -> dict:
        with self._request(path) as resp:
            return json.loads(resp.read())

    def _repository_index(self) -> list[dict] | None:
        try:
            with self._request("/v2/repository/index", data=b"{}", timeout=2.0) as resp:
                return json.loads(resp.read())
        except (OSError, ValueError):
            return None

    def _index_ok(self) -> bool:
        return self._repository_index() is not None

    def _model_state(self) -> tuple[str | None, str | None]:
        """(state, reason) of the model from the repository index; (None, None) if unknown."""
        for entry in self._repository_index() or []:
            if entry.get("name") == self.model_name:
                return entry.get("state"), entry.get("reason") or None
        return None, None

    # --- SIGTERM -> SystemExit, so that `with` blocks unwind and stop the server ---
    def _install_sigterm_handler(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        previous = signal.getsignal(signal.SIGTERM)
        if previous not in (signal.SIG_DFL, None):
            return  # the application has its own policy; respect it

        def _on_sigterm(signum, frame):
            raise SystemExit(128 + signum)

        signal.signal(signal.SIGTERM, _on_sigterm)
        self._previous_sigterm = previous

    def _restore_sigterm_handler(self) -> None:
        if self._previous_sigterm is not None:
            signal.signal(signal.SIGTERM, self._previous_sigterm)
            self._previous_sigterm = None
