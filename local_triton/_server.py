"""A real ``tritonserver`` process, as a context manager that always stops it.

::

    with TritonServer(repo_root, ["my_model"], installation=inst, serving_env=env) as server:
        print(server.url, server.version())

The server is started with ``--model-control-mode=explicit`` and one ``--load-model`` per model,
so that only the models asked for are loaded, and with ``--exit-on-error=false`` so that a model
which fails to load leaves the server up long enough to read Triton's own reason from
``POST /v2/repository/index``. Startup failures raise :class:`TritonStartError` carrying that
reason and the tail of the server's log (stdout and stderr of the server and its Python stubs,
including ``print`` output of ``model.py``).

HTTP, gRPC and metrics listen on ``host``: ``127.0.0.1`` unless the caller asks for another
address (Triton's own default is ``0.0.0.0``). Ports are free ones picked at start (retried if
one is taken meanwhile) or fixed ones, checked before the start: a taken fixed port raises
:class:`PortInUseError` naming it.

The model repository is a local directory, or an address Triton reads itself (``s3://…``, ``gs://…``,
``as://…``: kept as given); several repositories may be given. ``environment`` adds variables for the
server process only (for example ``TRITON_AWS_MOUNT_DIRECTORY``).

The process runs in its own session (process group) and is always stopped on exit -- normal,
exception, ``KeyboardInterrupt`` and ``SIGTERM`` (while the context is active in the main
thread and no other SIGTERM handler is installed, SIGTERM is turned into ``SystemExit`` so that
``__exit__`` runs: :func:`~mlflow_triton.command_line.sigterm_raises`; under a command, its own
handler raises): SIGTERM to the server, then SIGKILL to its process group after a grace
period, so no Python-backend stub outlives it. Should this process be killed outright, Linux's
parent-death signal sends the server SIGTERM.
"""

from __future__ import annotations

import collections
import contextlib
import errno
import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, BinaryIO, cast

from mlflow_triton.command_line import sigterm_raises
from mlflow_triton.command_line.children import die_with_parent, kill_group, wait_or_kill_group

from .errors import HostAddressError, PortInUseError, TritonStartError
from .installation import TritonInstallation
from .serving_env import read_pyvenv_cfg

__all__ = [
    "BARE_PATH",
    "CLOUD_REPOSITORY_SCHEMES",
    "LOOPBACK",
    "TritonServer",
    "TritonStartError",
    "check_host",
    "check_port_free",
    "connect_host",
    "is_cloud_repository",
    "is_loopback",
]

LOOPBACK = "127.0.0.1"
#: Model repository addresses Triton reads itself (S3, Google Cloud Storage, Azure Storage).
CLOUD_REPOSITORY_SCHEMES = ("s3://", "gs://", "as://")
#: ``PATH`` of a bare start: the system's own programs only (``bash`` for the Python backend's activation).
BARE_PATH = "/usr/bin:/bin"
_PORT_OPTIONS = ("--http-port", "--grpc-port", "--metrics-port")


def is_loopback(host: str) -> bool:
    """True for addresses only this machine can reach (127.0.0.0/8, ::1, localhost)."""
    return host == "localhost" or host == "::1" or host.startswith("127.")


def is_cloud_repository(repository: object) -> bool:
    """True for a model repository address Triton reads from object storage (``s3://``, ``gs://``, ``as://``)."""
    return isinstance(repository, str) and repository.startswith(CLOUD_REPOSITORY_SCHEMES)


def _repository(repository: str | os.PathLike[str]) -> str | Path:
    return str(repository) if is_cloud_repository(repository) else Path(repository).resolve()


def connect_host(host: str) -> str:
    """The address a client on this machine uses to reach a server bound to ``host``."""
    if host in ("0.0.0.0", ""):
        return LOOPBACK
    if host == "::":
        return "[::1]"
    return f"[{host}]" if ":" in host else host


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


def _unpacked_environments(server_pid: int) -> list[Path]:
    """The ``python_env_*`` folders the server's Python-backend stubs run from (an unpacked ``EXECUTION_ENV_PATH``).

    The backend unpacks an archive into ``<temp>/python_env_XXXXXX/`` and activates it, so each stub of the
    server's session has ``VIRTUAL_ENV`` inside that folder; stubs of serving environments have another one.
    """
    folders = set()
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            if os.getsid(int(entry.name)) != server_pid:
                continue
            environ = (entry / "environ").read_bytes().split(b"\0")
        except (OSError, ValueError):
            continue
        for item in environ:
            if item.startswith(b"VIRTUAL_ENV="):
                env = Path(os.fsdecode(item[len(b"VIRTUAL_ENV=") :]))
                base = next((p for p in (env, *env.parents) if p.name.startswith("python_env_")), None)
                if base is not None and base.parent == Path("/tmp"):  # the backend's own choice, not $TMPDIR
                    folders.add(base)
    return sorted(folders)


def _free_port(host: str) -> int:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def _free_ports(n: int, host: str = LOOPBACK) -> list[int]:
    ports: set[int] = set()
    while len(ports) < n:
        ports.add(_free_port(host))
    return sorted(ports)


def check_host(host: str) -> None:
    """Raise :class:`HostAddressError` when ``host`` (``--host``) does not resolve to an address."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        socket.getaddrinfo(host, None, family, socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as error:
        reason = error.strerror if isinstance(error, socket.gaierror) else str(error)
        raise HostAddressError(
            f"--host {host}: cannot be resolved to an {'IPv6' if family == socket.AF_INET6 else 'IPv4'} address "
            f"({reason}); give an address of this machine, such as 127.0.0.1 or 0.0.0.0"
        ) from None


def check_port_free(host: str, port: int, option: str) -> None:
    """Raise :class:`PortInUseError` naming ``option`` when ``host:port`` cannot be bound
    (:class:`HostAddressError` when ``host`` does not resolve)."""
    check_host(host)
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as servers do: TIME_WAIT is no obstacle
        try:
            s.bind((host, port))
        except OSError as error:
            if error.errno == errno.EADDRNOTAVAIL:
                raise HostAddressError(
                    f"--host {host}: not an address of this machine ({error.strerror}); give one of its addresses, "
                    "such as 127.0.0.1 or 0.0.0.0"
                ) from None
            raise PortInUseError(
                f"port {port} ({option}) is already in use on {host}: {error.strerror}; choose another with "
                f"{option} PORT or stop the process holding it"
            ) from None


class TritonServer:
    """Start ``tritonserver`` with the given models of ``model_repository``; stop it on exit.

    Args:
        model_repository: the repository root (holds ``<model_name>/config.pbtxt``): a local directory or an
            object-storage address (``s3://…``, ``gs://…``, ``as://…``), or a list of them (one
            ``--model-repository`` each).
        model_name: the model to load and wait for, or a sequence of them.
        installation: which server to run ([TritonInstallation][]).
        serving_env: virtualenv whose ``bin/`` goes first on ``PATH`` (the Python backend's
            interpreter takes its packages from there); ``None`` keeps the current ``PATH``.
        log_path: where the server's stdout/stderr go (emptied at each [start][.start], so its
            tail is this run's; a retry on a taken port appends); if omitted, a file in a fresh
            temporary directory that is kept after the server stops (for post-mortems).
        startup_timeout: seconds to wait for server and model readiness.
        stop_timeout: seconds [stop][.stop] waits after SIGTERM before it kills the server's process group.
        extra_args: more ``tritonserver`` arguments.
        host: the address HTTP, gRPC and metrics listen on (default loopback only).
        http_port: a fixed HTTP port; ``None`` picks a free one.
        grpc_port: a fixed gRPC port; ``None`` picks a free one.
        metrics_port: a fixed metrics port; ``None`` picks a free one.
        environment: variables added to the server's environment (credentials stay in the caller's own).
        bare: start the server from a bare environment, as ``env -i`` would: ``PATH`` is only
            ``BARE_PATH``, ``LD_LIBRARY_PATH`` only the installation's own libraries, nothing else of
            this process's environment (no serving venv, no ``VIRTUAL_ENV``); for repositories whose models
            carry their environment (``EXECUTION_ENV_PATH``). Not with ``serving_env``.
    """

    def __init__(
        self,
        model_repository: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
        model_name: str | Iterable[str],
        *,
        installation: TritonInstallation,
        serving_env: str | os.PathLike[str] | None = None,
        log_path: str | os.PathLike[str] | None = None,
        startup_timeout: float = 180.0,
        stop_timeout: float = 15.0,
        extra_args: tuple[str, ...] = (),
        host: str = LOOPBACK,
        http_port: int | None = None,
        grpc_port: int | None = None,
        metrics_port: int | None = None,
        environment: dict[str, str] | None = None,
        bare: bool = False,
    ) -> None:
        if bare and serving_env is not None:
            raise ValueError("a bare start has no serving environment: pass bare=True or serving_env, not both")
        self.bare = bare
        given: list[Any] = list(model_repository) if isinstance(model_repository, (list, tuple)) else [model_repository]
        self.model_repositories = tuple(_repository(r) for r in given)
        if not self.model_repositories:
            raise ValueError("TritonServer needs at least one model repository")
        self.model_repository = self.model_repositories[0]
        self.extra_environment = dict(environment or {})
        self.model_names = (model_name,) if isinstance(model_name, str) else tuple(model_name)
        if not self.model_names:
            raise ValueError("TritonServer needs at least one model name")
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
        self.host = host
        self._fixed_ports = (http_port, grpc_port, metrics_port)
        if any(p is not None for p in self._fixed_ports) and None in self._fixed_ports:
            raise ValueError("give all three of http_port, grpc_port and metrics_port, or none")
        if len(set(self._fixed_ports)) != 3 and self._fixed_ports[0] is not None:
            raise PortInUseError(f"HTTP, gRPC and metrics need three different ports, got {list(self._fixed_ports)}")
        self.http_port = self.grpc_port = self.metrics_port = 0
        self.ready_seconds: float | None = None
        self._proc: subprocess.Popen | None = None
        self._log_file: BinaryIO | None = None
        self._sigterm = contextlib.ExitStack()  # holds SIGTERM -> SystemExit while the context is active

    # ------------------------------------------------------------------ public API
    @property
    def model_name(self) -> str:
        """The first (often the only) model."""
        return self.model_names[0]

    @property
    def url(self) -> str:
        """``http://<host>:<http_port>`` as a client on this machine reaches it (no trailing slash)."""
        return f"http://{connect_host(self.host)}:{self.http_port}"

    @property
    def grpc_url(self) -> str:
        return f"{connect_host(self.host)}:{self.grpc_port}"

    @property
    def metrics_url(self) -> str:
        return f"http://{connect_host(self.host)}:{self.metrics_port}/metrics"

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    def poll(self) -> int | None:
        """The server's exit status, or ``None`` while it runs."""
        return self._proc.poll() if self._proc else -1

    def version(self) -> str:
        """The server's version from ``GET /v2`` (e.g. ``"2.51.0"``)."""
        return self._get_json("/v2")["version"]

    def model_config(self, name: str | None = None) -> dict:
        """Triton's view of a loaded model's configuration (``GET /v2/models/<name>/config``)."""
        return self._get_json(f"/v2/models/{name or self.model_name}/config")

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

    def start(self) -> TritonServer:
        """Start and wait for readiness; with free ports, retries if one was taken meanwhile."""
        fixed = self._fixed_ports[0] is not None
        if fixed:
            for option, port in zip(_PORT_OPTIONS, cast("tuple[int, int, int]", self._fixed_ports)):
                check_port_free(self.host, port, option)
        started = time.monotonic()
        for attempt in range(3):
            try:
                self._start_once(fresh_log=attempt == 0)
                self.ready_seconds = time.monotonic() - started
                return self
            except TritonStartError as err:
                self.stop()
                if "Address already in use" not in err.log_tail:
                    raise
                if fixed:
                    raise PortInUseError(
                        f"tritonserver could not listen on {self.host} ports {list(self._fixed_ports)}: "
                        f"Address already in use (another process took one); choose others with "
                        f"{', '.join(_PORT_OPTIONS)}\n--- last lines of {self.log_path} ---\n{err.log_tail}"
                    ) from None
                if attempt == 2:
                    raise
            except BaseException:  # incl. KeyboardInterrupt while waiting
                self.stop()
                raise
        raise AssertionError("unreachable")

    def stop(self) -> None:
        """SIGTERM the server (it unloads models and stops its stubs), SIGKILL its whole
        process group after ``stop_timeout`` seconds; then SIGKILL any stub left behind, and remove the
        folders Triton unpacked the models' own environments into (``EXECUTION_ENV_PATH``): Triton 2.51
        leaves each ``/tmp/python_env_*`` behind, several hundred MiB apiece."""
        proc, self._proc = self._proc, None
        unpacked = _unpacked_environments(proc.pid) if proc is not None and proc.poll() is None else []
        try:
            if proc is not None and proc.poll() is None:
                proc.terminate()
                wait_or_kill_group(proc, self.stop_timeout)
        finally:
            if proc is not None:
                kill_group(proc)  # stubs are in the same group: none outlives a server that exited early
            for folder in unpacked:
                shutil.rmtree(folder, ignore_errors=True)
            if self._log_file is not None:
                self._log_file.close()
                self._log_file = None

    def __enter__(self) -> TritonServer:
        # SIGTERM -> SystemExit, so that `with` blocks unwind and stop the server; a handler already set (a
        # command's, or the application's own policy) is left in place
        self._sigterm.enter_context(sigterm_raises(lambda signum: SystemExit(128 + signum), unless_handled=True))
        try:
            return self.start()
        except BaseException:
            self.stop()
            self._sigterm.close()
            raise

    def __exit__(self, *exc: object) -> None:
        try:
            self.stop()
        finally:
            self._sigterm.close()

    # ------------------------------------------------------------------ internals
    def command(self) -> list[str]:
        inst = self.installation
        return [
            str(inst.server_binary),
            *(f"--model-repository={repository}" for repository in self.model_repositories),
            f"--backend-directory={inst.backend_directory}",
            "--model-control-mode=explicit",
            *(f"--load-model={name}" for name in self.model_names),
            "--exit-on-error=false",
            "--strict-readiness=true",
            f"--http-address={self.host}",
            f"--http-port={self.http_port}",
            f"--grpc-address={self.host}",
            f"--grpc-port={self.grpc_port}",
            "--allow-metrics=true",
            "--allow-gpu-metrics=false",
            f"--metrics-address={self.host}",
            f"--metrics-port={self.metrics_port}",
            "--allow-sagemaker=false",
            "--allow-vertex-ai=false",
            f"--exit-timeout-secs={max(1, int(self.stop_timeout) - 5)}",
            *self.extra_args,
        ]

    def environment(self) -> dict[str, str]:
        if self.bare:
            env = {"PATH": BARE_PATH, "PYTHONUNBUFFERED": "1"}
            if self.installation.library_dirs:
                env["LD_LIBRARY_PATH"] = os.pathsep.join(str(d) for d in self.installation.library_dirs)
            env.update(self.extra_environment)  # e.g. the object store's credentials
            return env
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
        env.update(self.extra_environment)
        env.setdefault("PYTHONUNBUFFERED", "1")  # model.py's print() reaches the log promptly
        return env

    def _start_once(self, fresh_log: bool = True) -> None:
        """One start; ``fresh_log`` truncates the log (a retry appends, so that the log shows every attempt)."""
        if self._fixed_ports[0] is not None:
            self.http_port, self.grpc_port, self.metrics_port = cast("tuple[int, int, int]", self._fixed_ports)
        else:
            self.http_port, self.grpc_port, self.metrics_port = _free_ports(3, self.host)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log_file = open(self.log_path, "wb" if fresh_log else "ab")  # noqa: SIM115 (open while the server runs)
        self._log_file.write(f"$ {' '.join(self.command())}\n".encode())
        self._log_file.flush()
        self._proc = subprocess.Popen(
            self.command(),
            stdin=subprocess.DEVNULL,
            stdout=self._log_file,
            stderr=subprocess.STDOUT,
            env=self.environment(),
            start_new_session=True,  # own process group: stop() can signal server + stubs
            preexec_fn=die_with_parent,  # and it gets SIGTERM should this process be killed outright
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
                raise self._fail(f"tritonserver exited with status {code} during startup", self._reason_from_log())
            index = self._repository_index()  # None while the HTTP endpoint does not answer yet
            states = self._states_from(index)
            for name in self.model_names:
                state, reason = states.get(name, (None, None))
                if state == "UNAVAILABLE":
                    raise self._fail(f"model {name!r} failed to load", reason)
            if (
                all(states.get(name, (None,))[0] == "READY" for name in self.model_names)
                and all(self._status(f"/v2/models/{name}/ready") == 200 for name in self.model_names)
                and self._status("/v2/health/ready") == 200
            ):
                return
            # Only an index that answered can say a model is absent: Triton registers the startup
            # models before its HTTP endpoint opens, so a model missing from an answering index is
            # a wrong name or directory (an unanswered poll is no evidence either way).
            missing = [name for name in self.model_names if name not in states] if index is not None else []
            if missing:
                raise self._fail(
                    f"model {missing[0]!r} is not in the repository "
                    f"{', '.join(str(r) for r in self.model_repositories)}",
                    self._reason_from_log(),
                )
            if time.monotonic() > deadline:
                pending = {name: states.get(name, (None,))[0] or "unknown" for name in self.model_names}
                raise self._fail(
                    f"tritonserver not ready with {', '.join(map(repr, self.model_names))} after "
                    f"{self.startup_timeout:.0f}s (model states: {pending})"
                )
            time.sleep(0.25)

    def _reason_from_log(self) -> str | None:
        """Triton's ``E...`` log lines (errors), e.g. a failed ``load`` with its cause."""
        errors = [
            line.strip()
            for line in self.log_text().splitlines()
            if line.startswith("E") and ("failed" in line or "error" in line.lower())
        ]
        return "\n".join(errors[-5:]) or None

    # --- HTTP helpers (stdlib only; no proxies for loopback) ---
    _opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))

    def _request(self, path: str, data: bytes | None = None, timeout: float = 5.0):
        req = urllib.request.Request(
            self.url + path, data=data, headers={"Content-Type": "application/json"} if data else {}
        )
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

    @staticmethod
    def _states_from(index: list[dict] | None) -> dict[str | None, tuple[str | None, str | None]]:
        """``{name: (state, reason)}`` from a repository index ({} when it did not answer)."""
        return {entry.get("name"): (entry.get("state"), entry.get("reason") or None) for entry in index or []}
