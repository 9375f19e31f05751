"""Where the ``tritonserver`` binary and its Python backend come from.

Two kinds of installation:

* :meth:`TritonInstallation.bundled` -- the complete Triton Inference Server 2.51 that ships
  inside the PyPI wheel ``nvidia-pytriton==0.7.0`` (runs on a CPU-only Linux x86_64 box, no
  Docker). The wheel is installed once with ``pip install --no-deps --target`` into the cache.
  Its Python backend needs a *stub* executable built for the serving interpreter's Python X.Y;
  the wheel carries one per version under ``python_backend_stubs/<X.Y>/`` and we copy the
  matching one next to ``libtriton_python.so`` in a per-version backend directory, so that
  environments for different Pythons never overwrite each other's stub.
* :meth:`TritonInstallation.custom` -- any other installation, e.g. ``/opt/tritonserver`` in an
  NGC container, whose backend directory already holds a working Python backend.

An installation also states the constraints it imposes on a serving environment
(:attr:`TritonInstallation.serving_constraints`): the 2.51 stub is compiled against the numpy 1
ABI, so with numpy 2 in the serving env a correct model fails with "output tensor shape does not
match size of output". Hence ``numpy<2`` for the bundled server.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

PYTRITON_VERSION = "0.7.0"
#: The Triton release inside ``nvidia-pytriton==0.7.0`` (``GET /v2`` reports it).
BUNDLED_TRITON_VERSION = "2.51.0"
#: What the bundled server requires of a serving environment (pip constraint syntax).
BUNDLED_SERVING_CONSTRAINTS = ("numpy<2",)

_STUB_NAME = "triton_python_backend_stub"


class TritonInstallError(RuntimeError):
    """The Triton installation could not be obtained or is incomplete."""


def default_cache_dir() -> Path:
    """``$MLFLOW_TRITON_CACHE`` if set, else ``~/.cache/mlflow-triton``."""
    value = os.environ.get("MLFLOW_TRITON_CACHE")
    return Path(value).expanduser() if value else Path("~/.cache/mlflow-triton").expanduser()


@dataclass(frozen=True)
class TritonInstallation:
    """A ``tritonserver`` binary plus the backend directory it should be started with.

    ``library_dirs`` go first on ``LD_LIBRARY_PATH`` of the server process (the bundled
    server's shared libraries, which the copied stub also needs because its ``$ORIGIN`` RPATH
    no longer points at them). ``version`` is the expected Triton version, or ``None`` when
    unknown (ask the running server: :meth:`TritonServer.version`).
    """

    server_binary: Path
    backend_directory: Path
    library_dirs: tuple[Path, ...] = ()
    version: str | None = None
    serving_constraints: tuple[str, ...] = field(default=())

    @classmethod
    def bundled(
        cls,
        cache_dir: str | os.PathLike[str] | None = None,
        python_version: str | None = None,
        *,
        progress=print,
    ) -> "TritonInstallation":
        """The Triton 2.51 from ``nvidia-pytriton==0.7.0``, installed under ``cache_dir``.

        ``python_version`` ("3.11") selects the Python-backend stub; it must be the X.Y of the
        serving environment (see :func:`mlflow_triton.local.serving_env.env_python_version`).
        Defaults to the running interpreter's. ``progress`` receives one-line status messages
        (``None`` to be quiet).
        """
        say = progress or (lambda _msg: None)
        cache = Path(cache_dir) if cache_dir is not None else default_cache_dir()
        pyver = python_version or f"{sys.version_info.major}.{sys.version_info.minor}"
        root = cache / f"pytriton-{PYTRITON_VERSION}"
        tritonserver_dir = root / "pytriton" / "tritonserver"

        if not (tritonserver_dir / "bin" / "tritonserver").is_file():
            say(f"installing nvidia-pytriton=={PYTRITON_VERSION} (Triton {BUNDLED_TRITON_VERSION}, "
                f"~55 MB) into {root} ...")
            _pip_install_target(root)
        else:
            say(f"reusing Triton {BUNDLED_TRITON_VERSION} from {root}")

        stub = tritonserver_dir / "python_backend_stubs" / pyver / _STUB_NAME
        if not stub.is_file():
            available = sorted(p.name for p in (tritonserver_dir / "python_backend_stubs").iterdir())
            raise TritonInstallError(
                f"nvidia-pytriton {PYTRITON_VERSION} has no Python-backend stub for Python {pyver} "
                f"(it has: {', '.join(available)})"
            )
        backend_dir = root / f"backends-py{pyver}"
        if not (backend_dir / "python" / _STUB_NAME).is_file():
            _assemble_backend_dir(tritonserver_dir / "backends", stub, backend_dir)

        return cls(
            server_binary=tritonserver_dir / "bin" / "tritonserver",
            backend_directory=backend_dir,
            library_dirs=(root / "nvidia_pytriton.libs",),
            version=BUNDLED_TRITON_VERSION,
            serving_constraints=BUNDLED_SERVING_CONSTRAINTS,
        )

    @classmethod
    def custom(
        cls,
        server_binary: str | os.PathLike[str],
        backend_directory: str | os.PathLike[str],
        *,
        library_dirs: tuple[str | os.PathLike[str], ...] = (),
        version: str | None = None,
        serving_constraints: tuple[str, ...] = (),
    ) -> "TritonInstallation":
        """An existing installation, e.g. ``custom("/opt/tritonserver/bin/tritonserver",
        "/opt/tritonserver/backends", serving_constraints=("numpy<2",))`` in an NGC container."""
        binary = Path(server_binary)
        backends = Path(backend_directory)
        if not binary.is_file():
            raise TritonInstallError(f"no tritonserver binary at {binary}")
        if not (backends / "python").is_dir():
            raise TritonInstallError(f"no Python backend under {backends} (expected {backends / 'python'})")
        return cls(
            server_binary=binary,
            backend_directory=backends,
            library_dirs=tuple(Path(d) for d in library_dirs),
            version=version,
            serving_constraints=tuple(serving_constraints),
        )


def _pip_install_target(root: Path) -> None:
    """``pip install --no-deps --target`` into a temporary sibling, then rename into place."""
    root.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{root.name}-", dir=root.parent))
    tmp.chmod(0o755)  # mkdtemp makes it private; the result is an ordinary directory
    try:
        cmd = [
            sys.executable, "-m", "pip", "install", "--no-deps", "--no-compile",
            "--progress-bar", "off", "--target", str(tmp), f"nvidia-pytriton=={PYTRITON_VERSION}",
        ]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-20:])
            raise TritonInstallError(f"`{' '.join(cmd)}` failed:\n{tail}")
        binary = tmp / "pytriton" / "tritonserver" / "bin" / "tritonserver"
        if not binary.is_file():
            raise TritonInstallError(f"nvidia-pytriton installed, but {binary} is missing")
        binary.chmod(binary.stat().st_mode | 0o111)
        try:
            tmp.rename(root)
        except OSError:
            # Someone else finished first (or a stale partial dir is in the way).
            if not (root / "pytriton" / "tritonserver" / "bin" / "tritonserver").is_file():
                shutil.rmtree(root, ignore_errors=True)
                tmp.rename(root)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _assemble_backend_dir(wheel_backends: Path, stub: Path, backend_dir: Path) -> None:
    """Copy the wheel's ``backends/`` and drop ``stub`` into ``python/`` (atomically)."""
    tmp = Path(tempfile.mkdtemp(prefix=f".{backend_dir.name}-", dir=backend_dir.parent))
    tmp.chmod(0o755)  # mkdtemp makes it private; the result is an ordinary directory
    try:
        shutil.copytree(wheel_backends, tmp, dirs_exist_ok=True)
        target = tmp / "python" / _STUB_NAME
        shutil.copy2(stub, target)
        target.chmod(target.stat().st_mode | 0o111)
        try:
            tmp.rename(backend_dir)
        except OSError:
            if not (backend_dir / "python" / _STUB_NAME).is_file():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
