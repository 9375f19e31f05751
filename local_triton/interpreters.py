"""The Python a serving environment is built with (``--python X.Y`` or an interpreter path).

Triton's Python backend runs ``model.py`` in a *stub* executable built for one Python X.Y, and the
serving environment must be built with an interpreter of that X.Y: NVIDIA's Triton containers embed
Python 3.10 (the 24.x releases) or 3.12 (the 25.x releases); the bundled Triton 2.51 ships stubs for
3.8-3.13. The stub links ``libpythonX.Y.so.1.0`` dynamically, so the interpreter must have a shared
``libpython`` (pyenv: ``PYTHON_CONFIGURE_OPTS=--enable-shared``; Debian's and the official Docker
images' Pythons have one); the server puts its folder first on ``LD_LIBRARY_PATH``.

``find_interpreter("3.12")`` looks, in this order, at the running interpreter, ``python3.12`` on
``PATH``, ``$PYENV_ROOT/versions/3.12.*`` (default ``~/.pyenv``, newest first), ``/usr/local/bin``
and ``/usr/bin``, and takes the first CPython 3.12 with a shared ``libpython``: a pyenv shim that
cannot run 3.12, another implementation or a build without the library is passed over.
``find_interpreter("/path/to/python")`` takes that interpreter.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from .errors import InterpreterError

__all__ = ["Interpreter", "InterpreterError", "find_interpreter", "running_interpreter"]

_VERSION = re.compile(r"^(\d+)\.(\d+)$")
# ``executable`` is the base interpreter, not a virtualenv's python: Python 3.10's venv module records a venv it is
# run from as the new environment's home, chaining the serving environment to it (and hiding its libpython).
_PROBE = (
    "import json, os, platform, sys, sysconfig; "
    "base = os.path.join(sys.base_prefix, 'bin', 'python%d.%d' % sys.version_info[:2]); print(json.dumps({"
    "'executable': base if os.path.isfile(base) else sys.executable, 'version': platform.python_version(), "
    "'implementation': sys.implementation.name, 'libdir': sysconfig.get_config_var('LIBDIR'), "
    "'soname': sysconfig.get_config_var('INSTSONAME'), 'shared': sysconfig.get_config_var('Py_ENABLE_SHARED')}))"
)


@dataclasses.dataclass(frozen=True)
class Interpreter:
    """A Python interpreter: where it is, its version, and the folder holding its shared ``libpython``."""

    executable: Path
    version: str  # "3.12.1"
    library_dir: Path | None  # holds libpythonX.Y.so.1.0; None when the build has no shared libpython

    @property
    def major_minor(self) -> str:
        """``"3.12"``: selects the Triton Python-backend stub."""
        return ".".join(self.version.split(".")[:2])

    def describe(self) -> str:
        return f"Python {self.version} ({self.executable})"


def find_interpreter(spec: str | os.PathLike[str]) -> Interpreter:
    """The interpreter ``spec`` names: ``"3.12"`` (searched for) or a path to a ``python`` executable.

    Raises :class:`InterpreterError` naming where it looked, or why the interpreter cannot serve
    (not CPython, no shared ``libpython``).
    """
    text = os.fspath(spec).strip()
    wanted = _VERSION.match(text)
    if wanted is None:
        return _checked(_probe_path(Path(text).expanduser()), text)
    version = text
    looked = []
    for candidate in _candidates(version):
        try:
            interpreter = _probe(candidate)
        except InterpreterError:  # not CPython: try the next candidate
            looked.append(f"{candidate} (not CPython)")
            continue
        if interpreter is not None and interpreter.major_minor == version:
            if interpreter.library_dir is not None:
                return interpreter
            looked.append(f"{candidate} (no shared libpython{version}.so.1.0)")
            continue
        looked.append(str(candidate))
    raise InterpreterError(
        f"--python {version}: no usable Python {version} interpreter found (looked at: "
        f"{', '.join(looked) or 'nothing'}). "
        f"Install one (pyenv: PYTHON_CONFIGURE_OPTS=--enable-shared pyenv install {version}; Debian: "
        f"apt-get install python{version}) or pass the interpreter's path: --python /path/to/python{version}"
    )


def running_interpreter() -> Interpreter:
    """The interpreter running this process (the default for serving environments)."""
    interpreter = _probe(Path(sys.executable))
    if interpreter is None:  # the probe timed out or failed (a machine under heavy load)
        raise InterpreterError(
            f"the running Python {sys.executable} did not answer a probe of its version and libpython; "
            "retry, or name the serving interpreter with --python"
        )
    return interpreter


def _candidates(version):
    seen = set()
    running = f"{sys.version_info.major}.{sys.version_info.minor}"
    paths = [Path(sys.executable)] if running == version else []
    on_path = shutil.which(f"python{version}")
    if on_path:
        paths.append(Path(on_path))
    pyenv = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv") / "versions"
    builds = sorted(pyenv.glob(f"{version}.*"), key=_patch_number, reverse=True) if pyenv.is_dir() else []
    paths += [build / "bin" / f"python{version}" for build in builds]
    paths += [Path("/usr/local/bin") / f"python{version}", Path("/usr/bin") / f"python{version}"]
    for path in paths:
        if path not in seen and path.is_file():
            seen.add(path)
            yield path


def _patch_number(build: Path):
    parts = build.name.split(".")
    return int(parts[2]) if len(parts) > 2 and parts[2].isdigit() else -1


def _probe(executable: Path) -> Interpreter | None:
    """Ask the interpreter about itself; ``None`` when it does not run (a pyenv shim for another version)."""
    try:
        completed = subprocess.run([str(executable), "-c", _PROBE], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if completed.returncode != 0:
        return None
    try:
        facts = json.loads(completed.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return None
    if facts["implementation"] != "cpython":
        raise InterpreterError(
            f"--python {executable}: {facts['implementation']} cannot serve; Triton's Python backend embeds CPython"
        )
    library = Path(facts["libdir"] or "") / (facts["soname"] or "")
    shared = bool(facts["shared"]) and bool(facts["soname"]) and library.is_file()
    return Interpreter(Path(facts["executable"]), facts["version"], library.parent if shared else None)


def _probe_path(path: Path) -> Interpreter:
    if not path.is_file() or not os.access(path, os.X_OK):
        raise InterpreterError(f"--python {path}: no Python executable there (give X.Y, e.g. 3.12, or a path)")
    interpreter = _probe(path)
    if interpreter is None:
        raise InterpreterError(f"--python {path}: it did not run as a Python interpreter")
    return interpreter


def _checked(interpreter: Interpreter, spec: str) -> Interpreter:
    if interpreter.library_dir is None:
        raise InterpreterError(
            f"--python {spec}: {interpreter.describe()} has no shared libpython{interpreter.major_minor}.so.1.0 "
            "(it was built without --enable-shared). Triton's Python-backend stub loads that library: choose an "
            f"interpreter built with it (pyenv: PYTHON_CONFIGURE_OPTS=--enable-shared pyenv install "
            f"{interpreter.version})"
        )
    return interpreter
