"""Where the ``tritonserver`` binary and its Python backend come from.

Two kinds of installation:

* :meth:`TritonInstallation.bundled` -- the complete Triton Inference Server 2.51 inside the
  PyPI wheel ``nvidia-pytriton==0.7.0``, installed by ``pip install 'mlflow-triton[local]'``
  (Linux x86_64 only; it runs on a CPU-only machine without Docker). The wheel is located
  through its installed metadata; its Python package is never imported. Its Python backend
  needs a *stub* executable built for the serving interpreter's Python X.Y; the wheel carries
  one per version under ``python_backend_stubs/<X.Y>/``. The matching one is copied next to a
  private copy of the wheel's ``backends/`` in the cache (``<cache>/triton-2.51.0/backends-pyX.Y``),
  so the installed package is never modified and environments for different Pythons never
  overwrite each other's stub.
* :meth:`TritonInstallation.custom` -- any other installation, e.g. ``/opt/tritonserver`` in an
  NGC container, whose backend directory already holds a working Python backend.

Either kind is paired with the interpreter serving environments are built with
(:attr:`TritonInstallation.serving_python`; ``--python X.Y`` or a path on the command line, default
the running interpreter): for the bundled server ``--python`` picks both that interpreter and the
stub of its X.Y; a custom installation's stub names the ``libpythonX.Y`` it links, and an
interpreter of another X.Y is refused before anything is built.

An installation also states the constraints it imposes on a serving environment
(:attr:`TritonInstallation.serving_constraints`): the 2.51 stub is compiled against the numpy 1
ABI, so with numpy 2 in the serving env a correct model fails with "output tensor shape does not
match size of output". Hence ``numpy<2`` for the bundled server.
"""

from __future__ import annotations

import importlib.metadata
import os
import platform
import re
import shutil
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path

from mlflow_triton.command_line import ProgressLike, as_progress
from mlflow_triton.errors import install_command, missing_extra_message
from mlflow_triton.repository.staging import staged_directory

from ._stale import remove_stale_builds
from .errors import BundledTritonUnavailableError, TritonInstallError
from .interpreters import Interpreter, find_interpreter

__all__ = [
    "BUNDLED_SERVING_CONSTRAINTS",
    "BUNDLED_TRITON_VERSION",
    "INSTALL_HINT",
    "PYTRITON_VERSION",
    "TritonInstallation",
    "choose_installation",
    "default_cache_dir",
    "stub_python_version",
]

PYTRITON_DISTRIBUTION = "nvidia-pytriton"
PYTRITON_VERSION = "0.7.0"
#: The Triton release inside ``nvidia-pytriton==0.7.0`` (``GET /v2`` reports it).
BUNDLED_TRITON_VERSION = "2.51.0"
#: What the bundled server requires of a serving environment (pip constraint syntax).
BUNDLED_SERVING_CONSTRAINTS = ("numpy<2",)
#: The command that installs the bundled server; error messages quote it verbatim.
INSTALL_HINT = install_command("local")
OTHER_INSTALLATION_HINT = (
    "or use another Triton installation: --tritonserver /opt/tritonserver/bin/tritonserver "
    "--backend-directory /opt/tritonserver/backends"
)

_STUB_NAME = "triton_python_backend_stub"


def default_cache_dir() -> Path:
    """``$MLFLOW_TRITON_CACHE`` if set, else ``~/.cache/mlflow-triton``: the cache root.

    Serving environments live in ``<root>/envs/<key>``, the bundled server's per-Python backend
    directories in ``<root>/triton-<version>/``.
    """
    value = os.environ.get("MLFLOW_TRITON_CACHE")
    return Path(value).expanduser() if value else Path("~/.cache/mlflow-triton").expanduser()


def bundled_platform_supported(system: str | None = None, machine: str | None = None) -> bool:
    """True where the ``nvidia-pytriton`` wheel exists (Linux x86_64)."""
    system = system if system is not None else sys.platform
    machine = machine if machine is not None else platform.machine()
    return system.startswith("linux") and machine in ("x86_64", "AMD64")


def locate_bundled_server() -> tuple[Path, Path]:
    """``(tritonserver dir, shared library dir)`` of the installed ``nvidia-pytriton`` wheel.

    Raises :class:`BundledTritonUnavailableError` naming what to install (or ``--tritonserver``)
    when the platform has no wheel, the wheel is not installed, or it is another version.
    """
    if not bundled_platform_supported():
        raise BundledTritonUnavailableError(
            f"the bundled Triton server ({PYTRITON_DISTRIBUTION} {PYTRITON_VERSION}) exists only for Linux x86_64, "
            f"not for {sys.platform} {platform.machine()}: pass --tritonserver PATH --backend-directory DIR of "
            "another Triton installation (for example /opt/tritonserver in NVIDIA's Triton container)"
        )
    try:
        distribution = importlib.metadata.distribution(PYTRITON_DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        raise BundledTritonUnavailableError(
            missing_extra_message("the bundled Triton server is not installed", "local", OTHER_INSTALLATION_HINT)
        ) from None
    if distribution.version != PYTRITON_VERSION:
        raise BundledTritonUnavailableError(
            missing_extra_message(
                f"{PYTRITON_DISTRIBUTION} {distribution.version} is installed; mlflow-triton runs the Triton "
                f"{BUNDLED_TRITON_VERSION} of {PYTRITON_DISTRIBUTION} {PYTRITON_VERSION}",
                "local",
                OTHER_INSTALLATION_HINT,
            )
        )
    tritonserver = Path(str(distribution.locate_file("pytriton/tritonserver")))
    binary = tritonserver / "bin" / "tritonserver"
    if not binary.is_file():
        raise BundledTritonUnavailableError(
            f"{PYTRITON_DISTRIBUTION} {PYTRITON_VERSION} is installed but {binary} is missing: reinstall it with "
            f"pip install --force-reinstall '{PYTRITON_DISTRIBUTION}=={PYTRITON_VERSION}'"
        )
    if not os.access(binary, os.X_OK):
        raise BundledTritonUnavailableError(f"{binary} is not executable (check how the wheel was installed)")
    return tritonserver, Path(str(distribution.locate_file("nvidia_pytriton.libs")))


@dataclass(frozen=True)
class TritonInstallation:
    """A ``tritonserver`` binary plus the backend directory it should be started with.

    ``library_dirs`` go first on ``LD_LIBRARY_PATH`` of the server process (the bundled
    server's shared libraries, which the copied stub also needs because its ``$ORIGIN`` RPATH
    no longer points at them). ``version`` is the expected Triton version, or ``None`` when
    unknown (ask the running server: [TritonServer.version][mlflow_triton.local.TritonServer.version]).
    ``python_version`` is the X.Y of the Python-backend stub (``None`` when unknown) and ``serving_python``
    the interpreter serving environments are built with (``None``: the running one; see
    [python_executable][.python_executable]).
    """

    server_binary: Path
    backend_directory: Path
    library_dirs: tuple[Path, ...] = ()
    version: str | None = None
    serving_constraints: tuple[str, ...] = field(default=())
    python_version: str | None = None
    serving_python: Path | None = None

    @property
    def python_executable(self) -> str:
        """The interpreter to build serving environments with (``ensure_serving_env(..., python=...)``)."""
        return str(self.serving_python) if self.serving_python is not None else sys.executable

    @classmethod
    def bundled(
        cls,
        cache_dir: str | os.PathLike[str] | None = None,
        python_version: str | None = None,
        *,
        python: str | os.PathLike[str] | Interpreter | None = None,
        progress: ProgressLike = print,
    ) -> TritonInstallation:
        """The Triton 2.51 of the installed ``nvidia-pytriton==0.7.0`` (``mlflow-triton[local]``).

        ``python`` (``"3.12"``, an interpreter path or an ``Interpreter``) picks the interpreter
        serving environments are built with *and* the Python-backend stub of its X.Y. Without it,
        ``python_version`` ("3.11") selects the stub, which must be the X.Y of the serving
        environment (see ``mlflow_triton.local.serving_env.env_python_version``); both default to
        the running interpreter's. The backend directory with that stub is assembled once under
        ``cache_dir`` (default ``default_cache_dir()``), a private copy: the installed wheel is never
        changed. ``progress`` receives one-line status messages (``None`` to be quiet).
        """
        say = as_progress(progress)
        tritonserver, libraries = locate_bundled_server()
        cache = Path(cache_dir) if cache_dir is not None else default_cache_dir()
        interpreter = _interpreter(python)
        if interpreter is not None and python_version not in (None, interpreter.major_minor):
            raise TritonInstallError(
                f"python_version {python_version!r} and {interpreter.describe()} disagree: the stub must be the "
                "serving interpreter's X.Y"
            )
        pyver = (
            interpreter.major_minor if interpreter is not None else python_version
        ) or f"{sys.version_info.major}.{sys.version_info.minor}"
        stubs = tritonserver / "python_backend_stubs"
        stub = stubs / pyver / _STUB_NAME
        if not stub.is_file():
            available = sorted(p.name for p in stubs.iterdir()) if stubs.is_dir() else []
            raise TritonInstallError(
                f"{PYTRITON_DISTRIBUTION} {PYTRITON_VERSION} has no Python-backend stub for Python {pyver} "
                f"(it has: {', '.join(available) or 'none'}); build the serving environment with one of those "
                "(--python X.Y)"
            )
        backend_dir = cache / f"triton-{BUNDLED_TRITON_VERSION}" / f"backends-py{pyver}"
        remove_stale_builds(backend_dir.parent, ".backends-py*-*")  # assemblies of processes killed outright
        if not (backend_dir / "python" / _STUB_NAME).is_file():
            say.say(f"assembling the Python {pyver} backend of Triton {BUNDLED_TRITON_VERSION} in {backend_dir}")
            _assemble_backend_dir(tritonserver / "backends", stub, backend_dir)
        return cls(
            server_binary=tritonserver / "bin" / "tritonserver",
            backend_directory=backend_dir,
            library_dirs=(libraries,),
            version=BUNDLED_TRITON_VERSION,
            serving_constraints=BUNDLED_SERVING_CONSTRAINTS,
            python_version=pyver,
            serving_python=interpreter.executable if interpreter is not None else None,
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
        python: str | os.PathLike[str] | Interpreter | None = None,
    ) -> TritonInstallation:
        """An existing installation, e.g. ``custom("/opt/tritonserver/bin/tritonserver",
        "/opt/tritonserver/backends", serving_constraints=("numpy<2",), python="3.12")`` in an NGC container.

        ``python`` is the interpreter serving environments are built with (default: the running one).
        When the installation's stub names the ``libpythonX.Y`` it links, an interpreter of another X.Y
        raises [TritonInstallError][] here, before any environment is built.
        """
        binary = Path(server_binary)
        backends = Path(backend_directory)
        if not binary.is_file():
            raise TritonInstallError(f"--tritonserver: no tritonserver binary at {binary}")
        if not os.access(binary, os.X_OK):
            raise TritonInstallError(
                f"--tritonserver: {binary} is not executable (chmod +x it, or name another binary)"
            )
        if not (backends / "python").is_dir():
            raise TritonInstallError(
                f"--backend-directory: no Python backend under {backends} (expected {backends / 'python'})"
            )
        interpreter = _interpreter(python)
        stub = backends / "python" / _STUB_NAME
        stub_version = stub_python_version(stub)
        serving_version = (
            interpreter.major_minor if interpreter is not None else f"{sys.version_info.major}.{sys.version_info.minor}"
        )
        if stub_version is not None and stub_version != serving_version:
            raise TritonInstallError(
                f"the Python-backend stub {stub} is built for Python {stub_version} (it links "
                f"libpython{stub_version}), but serving environments would be built with Python {serving_version}: "
                f"pass --python {stub_version}"
            )
        return cls(
            server_binary=binary,
            backend_directory=backends,
            library_dirs=tuple(Path(d) for d in library_dirs),
            version=version,
            serving_constraints=tuple(serving_constraints),
            python_version=stub_version,
            serving_python=interpreter.executable if interpreter is not None else None,
        )

    def with_serving_constraints(self, constraints: Iterable[str]) -> TritonInstallation:
        """The same installation with other serving-environment constraints."""
        return replace(self, serving_constraints=tuple(constraints))

    def describe(self) -> str:
        """One line for a person: version, where the binary is, and the serving Python when it was chosen."""
        version = f"Triton {self.version}" if self.version else "Triton (version unknown until it starts)"
        text = f"{version}: {self.server_binary}"
        if self.serving_python is not None:
            text += f" (Python {self.python_version} stub; serving environments from {self.serving_python})"
        return text


def stub_python_version(stub: str | os.PathLike[str]) -> str | None:
    """``"3.12"`` when the stub executable names ``libpython3.12.so`` (it links it), else ``None``."""
    try:
        data = Path(stub).read_bytes()
    except OSError:
        return None
    found = re.search(rb"libpython(3\.\d+)\.so", data)
    return found.group(1).decode() if found else None


def _interpreter(python) -> Interpreter | None:
    if python is None or isinstance(python, Interpreter):
        return python
    return find_interpreter(python)


def _assemble_backend_dir(wheel_backends: Path, stub: Path, backend_dir: Path) -> None:
    """Copy the wheel's ``backends/`` and drop ``stub`` into ``python/`` (atomically)."""
    # keep_parents: the cache is shared; equal_build_marker: a concurrent process that finishes first made an
    # equivalent copy, so this one is discarded.
    with staged_directory(
        backend_dir, prefix=f".{backend_dir.name}-", keep_parents=True, equal_build_marker=f"python/{_STUB_NAME}"
    ) as tmp:
        shutil.copytree(wheel_backends, tmp, dirs_exist_ok=True)
        target = tmp / "python" / _STUB_NAME
        shutil.copy2(stub, target)
        target.chmod(target.stat().st_mode | 0o111)


def choose_installation(
    tritonserver: str | os.PathLike[str] | None = None,
    backend_directory: str | os.PathLike[str] | None = None,
    serving_constraints: Iterable[str] | None = None,
    *,
    python: str | os.PathLike[str] | None = None,
    progress: ProgressLike = print,
) -> TritonInstallation:
    """The installation the command-line options select.

    ``tritonserver`` and ``backend_directory`` name another installation (both or neither);
    without them, the bundled server. ``serving_constraints`` add to what the serving environment
    must satisfy: the bundled server's own (:data:`BUNDLED_SERVING_CONSTRAINTS`) always apply, since
    its stub needs them; another installation has only those given. ``python`` (``--python``: ``"3.12"``
    or an interpreter path; ``None``: the running interpreter) is the serving environments'
    interpreter, and for the bundled server also picks the stub.
    """
    if (tritonserver is None) != (backend_directory is None):
        raise TritonInstallError("--tritonserver and --backend-directory go together")
    if tritonserver is not None and backend_directory is not None:
        return TritonInstallation.custom(
            tritonserver, backend_directory, serving_constraints=tuple(serving_constraints or ()), python=python
        )
    installation = TritonInstallation.bundled(python=python, progress=progress)
    if serving_constraints:
        own = installation.serving_constraints
        installation = installation.with_serving_constraints(
            own + tuple(c for c in dict.fromkeys(serving_constraints) if c not in own)
        )
    return installation
