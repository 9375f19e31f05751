"""Cached serving virtualenvs built from a model's ``requirements.txt``.

The Python backend's embedded interpreter finds its packages through the first ``python3`` on
``PATH`` (see ``/work/shared/REAL-TRITON.md``), so each model is served with a plain
``python -m venv`` environment whose ``bin/`` the server puts first on ``PATH``.

Environments are cached under ``<cache_dir>/envs/<key>`` where ``key`` hashes the requirements
text, the constraints and the interpreter version. A build happens in a temporary sibling
directory and is renamed into place only after ``pip`` succeeded, so a present directory is a
complete environment and a failed build leaves nothing behind.

Requirements that contradict the Triton installation's constraints (``numpy==2.1.0`` against
``numpy<2``) raise :class:`ServingEnvError` quoting pip's resolver explanation.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, Iterable

from mlflow_triton.local.installation import default_cache_dir

__all__ = [
    "ServingEnvError",
    "check_requirements",
    "default_cache_dir",
    "ensure_serving_env",
    "env_python_version",
]

Progress = Callable[[str], None] | None

#: Written into a finished environment; describes how it was built.
ENV_RECORD = "mlflow-triton-env.json"


class ServingEnvError(RuntimeError):
    """pip could not build the serving environment.

    ``pip_lines`` holds pip's explanation (the resolver's ``ERROR:`` / "The conflict is caused
    by:" lines for a conflict, else the tail of its output); ``conflict`` is ``True`` when pip's
    resolver found the requirements and constraints impossible to satisfy together.
    """

    def __init__(self, message: str, pip_lines: list[str], conflict: bool):
        super().__init__(message)
        self.pip_lines = pip_lines
        self.conflict = conflict


def _say(progress: Progress, message: str) -> None:
    if progress is not None:
        progress(message)


def _python_identity(python: str) -> str:
    """``"cpython-3.11.7-x86_64"`` for the given interpreter (part of the cache key)."""
    out = subprocess.run(
        [python, "-c",
         "import platform, sys; print(f'{sys.implementation.name}-{platform.python_version()}"
         "-{platform.machine()}')"],
        capture_output=True, text=True, check=True,
    )
    return out.stdout.strip()


def _env_key(requirements_text: str, constraints: Iterable[str], python_id: str) -> str:
    payload = json.dumps(
        {"requirements": requirements_text, "constraints": sorted(constraints), "python": python_id},
        sort_keys=True,
    )
    return hashlib.sha256(payload.encode()).hexdigest()[:16]


def _explain_pip_failure(output: str) -> tuple[list[str], bool]:
    """Pick the informative lines out of a failed ``pip install``'s output."""
    lines = [line.rstrip() for line in output.splitlines()]
    conflict = any("ResolutionImpossible" in l or "conflicting dependencies" in l for l in lines)
    if conflict:
        # pip writes the explanation ("The conflict is caused by: ...") to stdout and the
        # ERROR: lines to stderr; put the ERROR: lines first and drop pip's generic advice.
        errors = [l for l in lines if l.startswith("ERROR:")]
        explanation: list[str] = []
        capturing = False
        for line in lines:
            if line.startswith("The conflict is caused by"):
                capturing = True
            elif line.startswith("To fix this you could try") or line.startswith("ERROR:"):
                capturing = False
            if capturing and line.strip():
                explanation.append(line)
        return errors + explanation, True
    errors = [l for l in lines if l.startswith("ERROR:")]
    tail = [l for l in lines if l.strip()][-25:]
    return (errors + [l for l in tail if l not in errors]) or ["(pip printed nothing)"], False


def _pip_error(action: str, requirements_file: Path, constraints: list[str], output: str) -> ServingEnvError:
    pip_lines, conflict = _explain_pip_failure(output)
    what = (
        "the requirements conflict with the constraints of the Triton installation"
        if conflict else "pip failed"
    )
    message = (
        f"{action} for {requirements_file}: {what} "
        f"(constraints: {', '.join(constraints) or 'none'}).\npip said:\n"
        + "\n".join(f"  {l}" for l in pip_lines)
    )
    return ServingEnvError(message, pip_lines, conflict)


def _write_constraints(directory: Path, constraints: list[str]) -> Path:
    path = directory / "constraints.txt"
    path.write_text("".join(f"{c}\n" for c in constraints))
    return path


def check_requirements(
    requirements_file: str | os.PathLike[str],
    constraints: Iterable[str],
    *,
    python: str = sys.executable,
) -> None:
    """Resolve (``pip install --dry-run --ignore-installed``) without building anything.

    Raises :class:`ServingEnvError` when pip cannot resolve ``requirements_file`` under
    ``constraints`` for ``python``. Cheap when the conflict is between pins (no downloads);
    may download wheels to read their metadata otherwise.
    """
    req = Path(requirements_file)
    cons = list(constraints)
    with tempfile.TemporaryDirectory(prefix="mlflow-triton-check-") as tmp:
        cmd = [python, "-m", "pip", "install", "--dry-run", "--ignore-installed",
               "--progress-bar", "off", "-r", str(req)]
        if cons:
            cmd += ["-c", str(_write_constraints(Path(tmp), cons))]
        proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise _pip_error("resolving the serving environment", req, cons, proc.stdout + proc.stderr)


def ensure_serving_env(
    requirements_file: str | os.PathLike[str],
    constraints: Iterable[str] = (),
    cache_dir: str | os.PathLike[str] | None = None,
    progress: Progress = print,
    *,
    python: str = sys.executable,
) -> Path:
    """Path of a virtualenv with ``requirements_file`` installed under ``constraints``.

    Built with ``python -m venv`` and ``pip install -r requirements.txt -c constraints.txt``
    on first use, reused afterwards. ``cache_dir`` defaults to :func:`default_cache_dir`.
    ``progress`` receives one-line status messages (``None`` to be quiet). ``python`` is the
    base interpreter; its X.Y must have a Triton Python-backend stub (3.8-3.13 for the bundled
    server). Raises :class:`ServingEnvError` if pip fails; nothing is left in the cache then.
    """
    req = Path(requirements_file)
    cons = list(constraints)
    requirements_text = req.read_text()
    cache = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    python_id = _python_identity(python)
    key = _env_key(requirements_text, cons, python_id)
    envs = cache / "envs"
    env = envs / key

    if (env / ENV_RECORD).is_file():
        _say(progress, f"reusing cached serving environment {env}")
        return env

    envs.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{key}-", dir=envs))
    tmp.chmod(0o755)  # mkdtemp makes it private; the result is an ordinary directory
    started = time.monotonic()
    _say(progress, f"building serving environment {env} for {req} "
                   f"(first run takes a few minutes) ...")
    try:
        venv = subprocess.run([python, "-m", "venv", str(tmp)], capture_output=True, text=True)
        if venv.returncode != 0:
            raise ServingEnvError(
                f"`{python} -m venv` failed:\n{venv.stdout}{venv.stderr}",
                (venv.stdout + venv.stderr).splitlines(), conflict=False,
            )
        shutil.copyfile(req, tmp / "requirements.txt")
        cmd = [str(tmp / "bin" / "python"), "-m", "pip", "install", "--progress-bar", "off",
               "--no-input", "-r", str(tmp / "requirements.txt")]
        if cons:
            cmd += ["-c", str(_write_constraints(tmp, cons))]
        with open(tmp / "pip-install.log", "w+") as log:
            proc = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, text=True)
            log.seek(0)
            output = log.read()
        if proc.returncode != 0:
            raise _pip_error("building the serving environment", req, cons, output)

        freeze = subprocess.run([str(tmp / "bin" / "python"), "-m", "pip", "freeze"],
                                capture_output=True, text=True).stdout.splitlines()
        _relocate_scripts(tmp, env)
        (tmp / ENV_RECORD).write_text(json.dumps(
            {"requirements": requirements_text, "constraints": cons, "python": python_id,
             "installed": freeze}, indent=2) + "\n")
        try:
            tmp.rename(env)
        except OSError:
            # A concurrent build finished first; its environment is equivalent.
            if not (env / ENV_RECORD).is_file():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    _say(progress, f"serving environment ready in {time.monotonic() - started:.0f}s: {env}")
    return env


def _relocate_scripts(built_at: Path, final: Path) -> None:
    """Point ``bin/`` scripts (pip's shebangs, ``activate``) at the final location.

    The interpreter itself does not care where the venv lives (it finds ``pyvenv.cfg`` next to
    its ``bin/``); only these text files spell out the build directory.
    """
    old, new = str(built_at), str(final)
    for path in (built_at / "bin").iterdir():
        if path.is_symlink() or not path.is_file():
            continue
        try:
            text = path.read_text()
        except (UnicodeDecodeError, OSError):
            continue
        if old in text:
            mode = path.stat().st_mode
            path.write_text(text.replace(old, new))
            path.chmod(mode)


def read_pyvenv_cfg(env: str | os.PathLike[str]) -> dict[str, str]:
    """The ``key = value`` settings of a virtualenv's ``pyvenv.cfg`` ({} when it has none)."""
    path = Path(env) / "pyvenv.cfg"
    if not path.is_file():
        return {}
    settings = {}
    for line in path.read_text().splitlines():
        name, _, value = line.partition("=")
        settings[name.strip()] = value.strip()
    return settings


def env_python_version(env: str | os.PathLike[str]) -> str:
    """``"3.11"`` for a virtualenv (read from its ``pyvenv.cfg``) -- selects the Triton stub."""
    settings = read_pyvenv_cfg(env)
    version = settings.get("version") or settings.get("version_info")
    if not version:
        raise ValueError(f"{env}/pyvenv.cfg names no Python version")
    major, minor = version.split(".")[:2]
    return f"{major}.{minor}"
