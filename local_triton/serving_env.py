"""Cached serving virtualenvs built from a model's ``requirements.txt``.

The Python backend's embedded interpreter finds its packages through the first ``python3`` on
``PATH``, so each model is served with a plain ``python -m venv`` environment whose ``bin/`` the
server puts first on ``PATH``.

Environments are cached under ``<cache root>/envs/<key>``: the key hashes the requirement lines
(comments and blank lines dropped, duplicates removed, sorted -- so the same requirements in
another order or with another header share one environment), the constraints and the
interpreter (implementation, full version, machine). A build happens in a hidden temporary
sibling and is renamed into place only after ``pip`` succeeded, so a present directory is a
complete environment. A failed or interrupted build (Ctrl-C, SIGTERM) stops pip and removes the
temporary directory: nothing is left in the cache. (A process killed outright cannot clean up; pip
then gets SIGTERM from the kernel, and the next build removes build directories idle for hours.)

A new environment first upgrades its own pip (the interpreter's bundled pip -- 23.x for
Python 3.10-3.12 -- resolves large requirement sets slowly), then installs the requirements. The
first build takes minutes; progress shows the elapsed time and pip's current step ("Collecting
torch==2.13.0", "Installing collected packages: ..."), and the last line the environment's size
and build time, which the environment's record keeps (:func:`env_summary`).

Requirements that contradict the Triton installation's constraints (``numpy==2.1.0`` against
``numpy<2``) raise :class:`ServingEnvError` quoting pip's resolver explanation.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from mlflow_triton.command_line import ProgressLike, as_progress
from mlflow_triton.command_line.children import die_with_parent, kill_group, stop_signals_deferred, wait_or_kill_group
from mlflow_triton.repository.staging import staged_directory

from ._stale import STALE_BUILD_SECONDS, remove_stale_builds
from .errors import ServingEnvError
from .installation import default_cache_dir

__all__ = [
    "ENV_RECORD",
    "ServingEnvError",
    "check_requirements",
    "default_cache_dir",
    "ensure_env_for_requirements",
    "ensure_serving_env",
    "env_python_version",
    "env_summary",
    "read_pyvenv_cfg",
    "requirement_lines",
]

#: Written into a finished environment; describes how it was built.
ENV_RECORD = "mlflow-triton-env.json"
PIP_LOG = "pip-install.log"


def requirement_lines(text: str) -> list[str]:
    """The requirement lines of a requirements file: no comments or blanks, unique, sorted."""
    lines = set()
    for raw in text.splitlines():
        line = raw.split(" #", 1)[0].strip()
        if line and not line.startswith("#"):
            lines.add(line)
    return sorted(lines)


def _python_facts(python: str) -> tuple[str, str]:
    """(identity, base interpreter) of ``python``: ``("cpython-3.11.7-x86_64", "/usr/bin/python3.11")``.

    The identity is part of the cache key. The base interpreter is the one a virtualenv ``python`` was made
    from: serving environments are created with it, because Python 3.10's ``venv`` run from inside a
    virtualenv records that virtualenv as the new one's home (the serving environment would then depend on
    it, and the server would not find its ``libpython``).
    """
    out = subprocess.run(
        [
            python,
            "-c",
            "import os, platform, sys; print(f'{sys.implementation.name}-{platform.python_version()}"
            "-{platform.machine()}'); "
            "base = os.path.join(sys.base_prefix, 'bin', 'python%d.%d' % sys.version_info[:2]); "
            "print(base if os.path.isfile(base) else sys.executable)",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    identity, base = out.stdout.strip().splitlines()[-2:]
    return identity, base


def _env_key(lines: list[str], constraints: Iterable[str], python_id: str) -> str:
    payload = json.dumps(
        {"requirements": lines, "constraints": sorted(constraints), "python": python_id},
        sort_keys=True,
    )
    return hashlib.sha256(payload.encode()).hexdigest()[:16]


def _explain_pip_failure(output: str) -> tuple[list[str], bool]:
    """Pick the informative lines out of a failed ``pip install``'s output."""
    lines = [line.rstrip() for line in output.splitlines()]
    conflict = any("ResolutionImpossible" in line or "conflicting dependencies" in line for line in lines)
    if conflict:
        # pip writes the explanation ("The conflict is caused by: ...") to stdout and the
        # ERROR: lines to stderr; put the ERROR: lines first and drop pip's generic advice.
        errors = [line for line in lines if line.startswith("ERROR:")]
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
    errors = [line for line in lines if line.startswith("ERROR:")]
    tail = [line for line in lines if line.strip()][-25:]
    return (errors + [line for line in tail if line not in errors]) or ["(pip printed nothing)"], False


def _pip_error(action: str, source: str, constraints: list[str], output: str, python_id: str = "") -> ServingEnvError:
    pip_lines, conflict = _explain_pip_failure(output)
    what = (
        "the requirements conflict with each other or with the constraints of the Triton installation"
        if conflict
        else "pip failed"
    )
    if "require a different python version" in output:
        what += (
            f"; a required version has no release for this Python{f' ({python_id})' if python_id else ''}. A "
            "repository pins the versions of the environment it was logged in: log the model under the Python of "
            "the target Triton's stub (for example scikit-learn >= 1.8 and pandas >= 3 need Python >= 3.11)"
        )
    message = (
        f"{action} for {source}: {what} "
        f"(constraints: {', '.join(constraints) or 'none'}).\npip said:\n"
        + "\n".join(f"  {line}" for line in pip_lines)
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
    report: str | os.PathLike[str] | None = None,
) -> None:
    """Resolve (``pip install --dry-run --ignore-installed``) without building anything.

    Raises :class:`ServingEnvError` when pip cannot resolve ``requirements_file`` under
    ``constraints`` for ``python``. Cheap when the conflict is between pins (no downloads);
    may download wheels to read their metadata otherwise. With ``report``, pip writes there what
    it would install (``--report``: each distribution's metadata and the file it would fetch).
    """
    req = Path(requirements_file)
    cons = list(constraints)
    with tempfile.TemporaryDirectory(prefix="mlflow-triton-check-") as tmp:
        cmd = [
            python,
            "-m",
            "pip",
            "install",
            "--dry-run",
            "--ignore-installed",
            "--progress-bar",
            "off",
            "-r",
            str(req),
        ]
        if report is not None:
            cmd += ["--report", str(report)]
        if cons:
            cmd += ["-c", str(_write_constraints(Path(tmp), cons))]
        proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise _pip_error("resolving the serving environment", str(req), cons, proc.stdout + proc.stderr)


def cached_serving_env(
    requirements_file: str | os.PathLike[str],
    constraints: Iterable[str] = (),
    cache_dir: str | os.PathLike[str] | None = None,
    *,
    python: str = sys.executable,
) -> Path | None:
    """The finished environment :func:`ensure_serving_env` would reuse for these arguments, or ``None``.

    Builds nothing: for callers that must refuse what cannot install before a build starts.
    """
    lines = requirement_lines(Path(requirements_file).read_text())
    cache = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    python_id, _ = _python_facts(python)
    env = cache / "envs" / _env_key(lines, list(constraints), python_id)
    return env if (env / ENV_RECORD).is_file() else None


def ensure_serving_env(
    requirements_file: str | os.PathLike[str],
    constraints: Iterable[str] = (),
    cache_dir: str | os.PathLike[str] | None = None,
    progress: ProgressLike = print,
    *,
    python: str = sys.executable,
) -> Path:
    """Path of a virtualenv with ``requirements_file`` installed under ``constraints``.

    Built with ``python -m venv`` and ``pip install -r requirements.txt -c constraints.txt``
    on first use, reused afterwards. ``cache_dir`` defaults to ``default_cache_dir()``.
    ``progress`` receives status lines (a ``mlflow_triton.command_line.Progress``, a
    callable or ``None``). ``python`` is the base interpreter; its X.Y must have a Triton
    Python-backend stub (3.8-3.13 for the bundled server). Raises [ServingEnvError][] if
    pip fails; nothing is left in the cache then.
    """
    req = Path(requirements_file)
    return ensure_env_for_requirements(
        requirement_lines(req.read_text()),
        constraints,
        cache_dir,
        progress,
        python=python,
        source=str(req),
    )


def ensure_env_for_requirements(
    lines: list[str],
    constraints: Iterable[str] = (),
    cache_dir: str | os.PathLike[str] | None = None,
    progress: ProgressLike = print,
    *,
    python: str = sys.executable,
    source: str = "the requirements",
    reuse_superset: bool = False,
) -> Path:
    """:func:`ensure_serving_env` for requirement lines (see :func:`requirement_lines`).

    With ``reuse_superset`` a cached environment built for the same interpreter and constraints
    whose installed packages already satisfy every line is reused instead of building a new one
    (for serving several models: their union is often met by one model's environment). Only
    plain ``name<specifier>`` lines can be checked that way; any other line means an exact build.
    """
    say = as_progress(progress)
    lines = sorted(set(lines))
    cons = list(constraints)
    cache = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    python_id, base_python = _python_facts(python)
    key = _env_key(lines, cons, python_id)
    envs = cache / "envs"
    env = envs / key

    if (env / ENV_RECORD).is_file():
        say.say(f"reusing cached serving environment {env} ({_cost(env_summary(env))})")
        return env
    if reuse_superset:
        existing = _satisfying_env(envs, lines, cons, python_id)
        if existing is not None:
            say.say(
                f"reusing cached serving environment {existing} (its packages satisfy every requirement; "
                f"{_cost(env_summary(existing))})"
            )
            return existing

    envs.mkdir(parents=True, exist_ok=True)
    _remove_stale_builds(envs)
    # keep_parents: the cache is shared; equal_build_marker: a concurrent build of the same key that finishes
    # first is as good as this one (same requirements, constraints and interpreter), so this one is discarded.
    with staged_directory(env, prefix=f".{key}-", keep_parents=True, equal_build_marker=ENV_RECORD) as tmp:
        _build_env(tmp, env, base_python, python_id, lines, cons, source, say)
    say.say(f"serving environment ready ({_cost(env_summary(env))}): {env}")
    return env


def _build_env(tmp, env, base_python, python_id, lines, cons, source, say):
    """Build the environment in ``tmp`` (the staging directory that becomes ``env``): a virtualenv of
    ``base_python``, pip upgraded, ``lines`` installed under ``cons``, scripts relocated, and the record written
    last (what marks it finished)."""
    started = time.monotonic()
    say.say(
        f"building serving environment {env} for {source} with {python_id} (the first build takes a few "
        f"minutes; pip log: {tmp / PIP_LOG})"
    )
    log_path = tmp / PIP_LOG
    with open(log_path, "w") as log:
        venv = _run_logged([base_python, "-m", "venv", str(tmp)], log, say, started, "creating the virtualenv")
    if venv != 0:
        output = log_path.read_text(errors="replace")
        raise ServingEnvError(f"`{base_python} -m venv` failed:\n{output}", output.splitlines(), conflict=False)
    env_python = str(tmp / "bin" / "python")
    _upgrade_pip(env_python, log_path, say, started)
    (tmp / "requirements.txt").write_text("".join(f"{line}\n" for line in lines))
    cmd = [
        env_python,
        "-m",
        "pip",
        "install",
        "--progress-bar",
        "off",
        "--no-input",
        "-r",
        str(tmp / "requirements.txt"),
    ]
    if cons:
        cmd += ["-c", str(_write_constraints(tmp, cons))]
    with open(log_path, "a") as log:
        status = _run_logged(cmd, log, say, started, "pip")
    if status != 0:
        raise _pip_error(
            "building the serving environment", source, cons, log_path.read_text(errors="replace"), python_id
        )

    freeze = subprocess.run(
        [env_python, "-m", "pip", "freeze", "--all"], capture_output=True, text=True
    ).stdout.splitlines()
    _relocate_scripts(tmp, env)
    build_seconds = round(time.monotonic() - started, 1)
    (tmp / ENV_RECORD).write_text(
        json.dumps(
            {
                "requirements": lines,
                "constraints": cons,
                "python": python_id,
                "base_python": base_python,
                "source": source,
                "installed": freeze,
                "build_seconds": build_seconds,
                "size_bytes": disk_usage(tmp),
            },
            indent=2,
        )
        + "\n"
    )


def _upgrade_pip(env_python, log_path, say, started) -> None:
    """``pip install --upgrade pip`` in the new environment; on failure go on with the bundled pip, saying so."""
    with open(log_path, "a") as log:
        status = _run_logged(
            [env_python, "-m", "pip", "install", "--progress-bar", "off", "--no-input", "--upgrade", "pip"],
            log,
            say,
            started,
            "upgrading pip",
        )
    if status != 0:
        said = [line for line in log_path.read_text(errors="replace").splitlines() if line.startswith("ERROR")]
        say.say(
            f"could not upgrade pip in the new environment ({said[-1] if said else 'see the pip log'}); "
            "resolving with the interpreter's own pip"
        )


def disk_usage(directory: str | os.PathLike[str]) -> int:
    """Bytes ``directory`` occupies on disk, as ``du`` counts them (hard links once, symlinks not followed)."""
    total, seen = 0, set()
    for root, _dirs, files in os.walk(directory):
        for name in (root, *(os.path.join(root, f) for f in files)):
            try:
                info = os.lstat(name)
            except OSError:
                continue
            if (info.st_dev, info.st_ino) not in seen:
                seen.add((info.st_dev, info.st_ino))
                total += info.st_blocks * 512
    return total


def env_summary(env: str | os.PathLike[str]) -> dict:
    """What a finished environment's record says about it, for reports.

    ``{"path", "python", "size_mib", "build_seconds", "requirements"}``: ``python`` is the interpreter
    identity (``"cpython-3.12.1-x86_64"``); ``build_seconds`` is ``None`` and the size is measured now
    for an environment built before the record kept them.
    """
    record = json.loads((Path(env) / ENV_RECORD).read_text())
    size = record.get("size_bytes")
    if size is None:
        size = disk_usage(env)
    return {
        "path": str(env),
        "python": record.get("python"),
        "size_mib": round(size / 2**20),
        "build_seconds": record.get("build_seconds"),
        "requirements": record.get("requirements", []),
    }


def _cost(summary: dict) -> str:
    built = summary["build_seconds"]
    return f"{summary['size_mib']} MiB" + (f", built in {built:.0f}s" if built is not None else "")


def _remove_stale_builds(envs: Path, older_than: float = STALE_BUILD_SECONDS) -> None:
    """Remove environment builds left by a process killed outright: their pip log (or directory) is idle."""
    remove_stale_builds(envs, ".*-*", older_than, activity_file=PIP_LOG)


def _run_logged(cmd, log, say, started, what) -> int:
    """Run ``cmd`` with its output in ``log``; report elapsed time and its current step meanwhile.

    The child runs in its own process group; if anything interrupts the wait (Ctrl-C, SIGTERM
    turned into an exception), the whole group is stopped before the exception propagates.
    """
    log.flush()
    proc = None
    try:
        with stop_signals_deferred():  # a Ctrl-C during the fork is raised once `proc` is known
            proc = subprocess.Popen(
                cmd,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=die_with_parent,
            )
        with open(log.name, errors="replace") as reader:
            reader.seek(0, os.SEEK_END)
            current = what
            while proc.poll() is None:
                time.sleep(0.5)
                current = _latest_step(reader.read(), current)
                say.step(current, elapsed=time.monotonic() - started)
        return proc.returncode
    finally:
        if proc is not None:
            _stop_process_group(proc)


def _latest_step(new_output: str, current: str) -> str:
    """pip's most recent meaningful line ("Collecting x", "Installing collected packages: ...").

    Lines inside a step (pip's "Attempting uninstall" of a package it replaces) are skipped: the
    step they belong to is still the one running.
    """
    for line in reversed(new_output.splitlines()):
        text = line.strip()
        if text.startswith(
            (
                "Collecting",
                "Downloading",
                "Using cached",
                "Building",
                "Installing",
                "Successfully installed",
                "Processing",
                "Requirement already",
            )
        ):
            return text if len(text) <= 100 else text[:97] + "..."
    return current


def _stop_process_group(proc: subprocess.Popen, grace: float = 10.0) -> None:
    """SIGTERM pip's process group, SIGKILL it after ``grace`` seconds; pip has exited when this returns.

    A second Ctrl-C (or SIGTERM) while waiting still kills the group and waits for pip before it
    propagates, so that nobody removes a build directory under a live pip.
    """
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        wait_or_kill_group(proc, grace)
    kill_group(proc)  # pip's own children (build backends) are in the same group


def _satisfying_env(envs: Path, lines, constraints, python_id) -> Path | None:
    """A finished environment for the same interpreter and constraints that satisfies ``lines``."""
    requirements = _plain_requirements(lines)
    if requirements is None or not envs.is_dir():
        return None
    for record_path in sorted(envs.glob(f"*/{ENV_RECORD}")):
        try:
            record = json.loads(record_path.read_text())
        except (OSError, ValueError):
            continue
        if record.get("python") != python_id or sorted(record.get("constraints", [])) != sorted(constraints):
            continue
        installed = recorded_versions(record)
        versions = [installed.get(canonicalize_name(r.name)) for r in requirements]
        if all(v is not None and r.specifier.contains(v, prereleases=True) for r, v in zip(requirements, versions)):
            return record_path.parent
    return None


def recorded_versions(record: dict) -> dict[str, str]:
    """``{canonical name: version}`` of what an environment's record (``ENV_RECORD``) says pip installed."""
    installed: dict[str, str] = {}
    for entry in record.get("installed", []):
        name, separator, version = entry.partition("==")
        if separator:
            installed[canonicalize_name(name)] = version.strip()
    return installed


def _plain_requirements(lines):
    """``Requirement`` objects when every line is a plain ``name<specifier>``; else ``None``."""
    requirements = []
    for line in lines:
        try:
            requirement = Requirement(line)
        except InvalidRequirement:
            return None
        if requirement.url or requirement.extras or requirement.marker is not None:
            return None
        requirements.append(requirement)
    return requirements


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
