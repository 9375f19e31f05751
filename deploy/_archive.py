"""A serving environment packed into ``env.tar.gz`` by ``venv-pack2``, and the archive checked against Triton's rules.

``venv-pack2`` (the ``deploy`` extra) packs a virtualenv so that it can be unpacked anywhere: scripts get relative
shebangs, ``bin/activate`` finds its folder from its own path. That serves both ways Triton's Python backend
activates an archive: up to r25.07 it sources ``<env>/bin/activate`` and runs the stub with
``LD_LIBRARY_PATH=<env>/lib:...``; from r25.08 it sets ``PATH``, ``LD_LIBRARY_PATH`` and ``VIRTUAL_ENV`` from
the unpacked folder itself. Either way ``python3`` on the stub's ``PATH`` is ``<env>/bin/python3``, whose
``pyvenv.cfg`` puts the archive's ``site-packages`` on ``sys.path``.

:func:`audit_archive` reads the written archive back: no absolute member names, no ``..``, no member written
through a symlink, and no symlink leading out of the archive except the interpreter links
(``bin/python3.X`` -> the target's interpreter), which are the point of a packed virtualenv.
"""

from __future__ import annotations

import dataclasses
import json
import os
import posixpath
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

from mlflow_triton.command_line import as_progress
from mlflow_triton.command_line.children import die_with_parent, kill_group, stop_signals_deferred, wait_or_kill_group
from mlflow_triton.errors import require_extra

from ._targets import PackPlan, libpython_of
from .errors import PackError

__all__ = ["ARCHIVE_NAME", "ArchiveFacts", "audit_archive", "pack_environment", "require_packer"]

ARCHIVE_NAME = "env.tar.gz"
#: gzip level: 1 packed the sklearn example's environment in 31.8 s to 123 MiB; venv-pack's default 4 took 43.8 s
#: for 112 MiB (measured here).
COMPRESS_LEVEL = 1
#: Not needed to serve: pip itself (the archive is never installed into) and the packages' own test suites (about
#: a fifth of the sklearn example's environment: pandas/tests alone is 40 MiB; no package imports them to run).
EXCLUDED = (
    "bin/pip",
    "bin/pip3*",
    "lib/python*/site-packages/pip/*",
    "lib/python*/site-packages/pip-*.dist-info/*",
    "lib/python*/site-packages/*/tests/*",
)


def require_packer() -> None:
    """Raise :class:`~mlflow_triton.errors.MissingExtraError` naming the extra when ``venv-pack2`` is not installed."""
    require_extra("venv_pack", "deploy", "mlflow-triton pack needs venv-pack2 (the packer of virtualenvs)")


@dataclasses.dataclass(frozen=True)
class ArchiveFacts:
    """What :func:`audit_archive` read: member count, unpacked bytes, the interpreter links and their targets."""

    members: int
    unpacked_bytes: int
    interpreter_links: dict[str, str]


def pack_environment(
    env: Path, output: Path, plan: PackPlan, *, progress=print, compress_level: int = COMPRESS_LEVEL
) -> float:
    """Pack the virtualenv ``env`` (only read) into ``output`` for ``plan``; returns the seconds it took.

    The packing runs in a child process group (see :mod:`mlflow_triton.deploy._venv_pack_child`); an
    interruption stops it, and its partial archive is in a scratch folder beside ``output`` that is removed.
    """
    require_packer()
    say = as_progress(progress)
    version = plan.python_version
    spec: dict[str, Any] = {
        "env": str(env),
        "output": str(output),
        "exclude": list(EXCLUDED),
        "compress_level": compress_level,
        "python_prefix": plan.target.interpreter_prefix,
        "replace": {},
        "add": [],
    }
    if plan.target.interpreter_prefix is not None:
        spec["replace"][f"bin/python{version}"] = plan.target_interpreter
    if plan.target.ships_stub:
        spec["add"].append([str(libpython_of(plan.interpreter)), f"lib/libpython{version}.so.1.0"])
    scratch = Path(tempfile.mkdtemp(prefix=".packing-", dir=output.parent))
    started = time.monotonic()
    try:
        (scratch / "spec.json").write_text(json.dumps(spec))
        log_path = scratch / "venv-pack.log"
        with open(log_path, "wb") as log:
            proc = None
            try:
                with stop_signals_deferred():  # a Ctrl-C during the fork is raised once `proc` is known
                    proc = subprocess.Popen(
                        [sys.executable, "-m", "mlflow_triton.deploy._venv_pack_child", str(scratch / "spec.json")],
                        stdin=subprocess.DEVNULL,
                        stdout=log,
                        stderr=subprocess.STDOUT,
                        env={**os.environ, "TMPDIR": str(scratch)},
                        start_new_session=True,
                        preexec_fn=die_with_parent,
                    )
                written = 0
                while proc.poll() is None:
                    time.sleep(0.5)
                    written = max(written, sum(p.stat().st_size for p in scratch.glob("tmp*") if p.is_file()))
                    say.step(
                        f"packing {env.name} with venv-pack2: {written / 2**20:.0f} MiB written",
                        elapsed=time.monotonic() - started,
                    )
            finally:
                if proc is not None:
                    _stop(proc)
        if proc.returncode != 0:
            said = log_path.read_text(errors="replace").strip().splitlines()
            raise PackError(f"venv-pack2 could not pack {env}:\n" + "\n".join(f"  {line}" for line in said[-15:]))
        output.chmod(0o644)  # venv-pack writes through mkstemp (0600); the server may run as another user
    except BaseException:
        output.unlink(missing_ok=True)
        raise
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return time.monotonic() - started


def _stop(proc: subprocess.Popen) -> None:
    """SIGTERM the packer's process group, SIGKILL it after 10 s; it is gone when this returns."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        wait_or_kill_group(proc, 10)
    kill_group(proc)


def audit_archive(path: str | os.PathLike[str], interpreter_links: dict[str, str]) -> ArchiveFacts:
    """Read ``path`` back and raise :class:`PackError` listing every member that breaks Triton's archive rules.

    ``interpreter_links`` maps the members allowed to link out of the archive to their one allowed target
    (``{"bin/python3.10": "/usr/bin/python3.10"}``).
    """
    problems, links, size, count = [], {}, 0, 0
    with tarfile.open(path, "r:gz") as archive:
        members = archive.getmembers()
    symlinks = {posixpath.normpath(m.name): m for m in members if m.issym()}
    for member in members:
        count += 1
        size += member.size
        name = member.name
        parts = name.split("/")
        if name.startswith("/"):
            problems.append(f"{name}: absolute path")
            continue
        if ".." in parts:
            problems.append(f"{name}: a '..' component")
            continue
        normal = posixpath.normpath(name)
        through = next(
            (posixpath.join(*parts[:i]) for i in range(1, len(parts)) if posixpath.join(*parts[:i]) in symlinks), None
        )
        if through is not None:
            problems.append(f"{name}: written through the symlink {through}")
        if member.issym():
            allowed = interpreter_links.get(normal)
            if allowed is not None:
                if member.linkname != allowed:
                    problems.append(f"{name} -> {member.linkname}: should link to {allowed}")
                links[normal] = member.linkname
            elif _leaves(normal, member.linkname):
                problems.append(f"{name} -> {member.linkname}: a symlink leading out of the archive")
        elif member.islnk() and _leaves(".", member.linkname):
            problems.append(f"{name}: a hard link to {member.linkname}, outside the archive")
    missing = sorted(set(interpreter_links) - set(links))
    problems += [f"{name}: missing (the interpreter link)" for name in missing]
    if problems:
        raise PackError(f"{path} breaks Triton's archive rules:\n" + "\n".join(f"  {p}" for p in problems))
    return ArchiveFacts(members=count, unpacked_bytes=size, interpreter_links=links)


def _leaves(member: str, link: str) -> bool:
    """True when ``link`` (relative to ``member``'s folder) is absolute or climbs out of the archive root."""
    if link.startswith("/"):
        return True
    resolved = posixpath.normpath(posixpath.join(posixpath.dirname(member), link))
    return resolved == ".." or resolved.startswith("../")
