"""Where a packed repository will run: the named targets of ``mlflow-triton pack --target``.

A target fixes what the environment archive must match on the server it is copied to:

* the Python of the server's Python-backend stub (the stub embeds ``libpython3.X``: the archive's packages must be
  built for that X.Y, and its interpreter must be that build);
* the glibc of the server's image (a wheel tagged ``manylinux_2_36`` does not load on glibc 2.35);
* the numpy bound of the stub (the stubs of these releases are built against the numpy 1 ABI: ``numpy<2``);
* the interpreter the archive relies on. The archive is a virtualenv packed by ``venv-pack2``: it carries the
  packages, and its ``bin/python3.X`` is a link to an interpreter *of the target* -- the container's own
  ``/usr/bin/python3.X``, whose ``libpython3.X`` the container's stub already links, so the standard library and
  the embedded interpreter are one build. For ``bundled`` (the Triton 2.51 of ``nvidia-pytriton`` on this machine)
  that interpreter is the one the environment was built with, here; the archive also carries its
  ``libpython3.X.so.1.0`` (the backend puts the archive's ``lib/`` first on ``LD_LIBRARY_PATH``) and the model
  directory ships the wheel's stub of that Python, so the model loads whatever default stub the backend directory
  has.

:data:`TARGETS` is the table; :func:`resolve_target` turns a name and ``--python`` into a :class:`PackPlan`.
"""

from __future__ import annotations

import dataclasses
import os
import re
from pathlib import Path

from mlflow_triton.local.errors import InterpreterError
from mlflow_triton.local.installation import BUNDLED_SERVING_CONSTRAINTS, BUNDLED_TRITON_VERSION
from mlflow_triton.local.interpreters import Interpreter, find_interpreter, running_interpreter

from .errors import PackTargetError

__all__ = ["DEFAULT_TARGET", "TARGETS", "PackPlan", "Target", "host_glibc", "resolve_target"]

DEFAULT_TARGET = "bundled"
_VERSION = re.compile(r"^\d+\.\d+$")


@dataclasses.dataclass(frozen=True)
class Target:
    """What a server of one kind requires of an environment archive.

    ``python`` is the stub's X.Y (``None``: chosen with ``--python``, default the running interpreter);
    ``glibc`` the image's (``None``: this machine's); ``interpreter_prefix`` the prefix of the interpreter the
    archive's ``bin/python3.X`` links to on the target (``None``: the building interpreter's own, here);
    ``ships_stub``: the model directory carries the Python-backend stub of the archive's Python. ``run_image``: an
    image of the target to start it with (``docker run … tritonserver``), ``None`` for a server on this machine,
    where a bare start (``mlflow-triton check``) proves the pack.
    """

    name: str
    server: str
    python: str | None
    glibc: str | None
    constraints: tuple[str, ...]
    interpreter_prefix: str | None
    ships_stub: bool
    note: str
    run_image: str | None = None

    def describe_python(self) -> str:
        return f"Python {self.python}" if self.python else "the Python of --python (default: the running one)"


def _ngc_container(tag: str, image: str, python: str, glibc: str, release: str) -> Target:
    """An NGC ``tritonserver:<tag>-py3`` container: the archive links the container's own ``/usr/bin/python3.X``,
    whose build its default stub embeds, so the model directory ships no stub; the stub needs ``numpy<2``.
    ``release``: a real tag of the family (``25.01`` for ``25.xx``), for the command that starts one."""
    return Target(
        name=f"triton-{tag}",
        server=f"nvcr.io/nvidia/tritonserver:{tag}-py3 ({image})",
        python=python,
        glibc=glibc,
        constraints=("numpy<2",),
        interpreter_prefix="/usr",
        ships_stub=False,
        note=f"the archive links the container's /usr/bin/python{python}; the container's default stub is {python}",
        run_image=f"nvcr.io/nvidia/tritonserver:{release}-py3",
    )


TARGETS: dict[str, Target] = {
    target.name: target
    for target in (
        Target(
            name="bundled",
            server=f"Triton {BUNDLED_TRITON_VERSION} of nvidia-pytriton 0.7.0, on this machine",
            python=None,
            glibc=None,
            constraints=BUNDLED_SERVING_CONSTRAINTS,
            interpreter_prefix=None,
            ships_stub=True,
            note="the archive links the interpreter it was built with, here, and carries its libpython; the model "
            "directory ships that Python's stub",
        ),
        _ngc_container("24.10", "Triton 2.51, Ubuntu 22.04", python="3.10", glibc="2.35", release="24.10"),
        _ngc_container("25.xx", "Ubuntu 24.04", python="3.12", glibc="2.39", release="25.01"),
    )
}


@dataclasses.dataclass(frozen=True)
class PackPlan:
    """A target made concrete here: the interpreter that builds the environment and what the archive links to."""

    target: Target
    interpreter: Interpreter
    glibc: str

    @property
    def python_version(self) -> str:
        return self.interpreter.major_minor

    @property
    def constraints(self) -> tuple[str, ...]:
        return self.target.constraints

    @property
    def target_interpreter(self) -> str:
        """The path ``bin/python3.X`` links to on the target."""
        if self.target.interpreter_prefix is None:
            return str(self.interpreter.executable)
        return f"{self.target.interpreter_prefix}/bin/python{self.python_version}"

    def describe(self) -> str:
        return (
            f"{self.target.name} ({self.target.server}; Python {self.python_version}, glibc {self.glibc}, "
            f"{', '.join(self.constraints) or 'no constraints'})"
        )


def host_glibc() -> str:
    """This machine's glibc version (``"2.36"``)."""
    try:
        text = os.confstr("CS_GNU_LIBC_VERSION") or ""
    except (ValueError, OSError):
        text = ""
    found = re.search(r"(\d+\.\d+)", text)
    if not found:
        raise PackTargetError("this machine has no GNU C library to pack for (glibc not found)")
    return found.group(1)


def resolve_target(name: str = DEFAULT_TARGET, python: str | os.PathLike[str] | None = None) -> PackPlan:
    """The ``PackPlan`` for ``--target name`` and ``--python X.Y|PATH``.

    Raises [PackTargetError][] for an unknown name, a ``--python`` of another X.Y than the target's stub,
    or when no interpreter of the target's Python can be found here to build the environment with.
    """
    target = TARGETS.get(name)
    if target is None:
        raise PackTargetError(f"--target {name}: unknown target; choose one of {', '.join(TARGETS)}")
    spec = os.fspath(python).strip() if python is not None else None
    if target.python is not None and spec is not None and _VERSION.match(spec) and spec != target.python:
        raise PackTargetError(
            f"--target {name} runs Python {target.python} (its Python-backend stub), not {spec}: drop --python or "
            f"pass --python {target.python}"
        )
    wanted = spec or target.python
    try:
        interpreter = find_interpreter(wanted) if wanted is not None else running_interpreter()
    except InterpreterError as error:
        raise PackTargetError(
            f"--target {name}: the environment for {target.describe_python()} must be built with an interpreter of "
            f"that version, and none can be used here: {error}"
        ) from None
    if interpreter is None:  # the running interpreter did not answer its own probe
        raise PackTargetError(f"--target {name}: the running interpreter could not be inspected")
    if target.python is not None and interpreter.major_minor != target.python:
        raise PackTargetError(
            f"--target {name} runs Python {target.python} (its Python-backend stub), but --python {spec} is "
            f"{interpreter.describe()}: name a Python {target.python} interpreter"
        )
    if target.ships_stub and interpreter.library_dir is None:
        raise PackTargetError(
            f"--target {name}: {interpreter.describe()} has no shared libpython{interpreter.major_minor}.so.1.0 for "
            "the archive to carry; choose an interpreter built with --enable-shared"
        )
    return PackPlan(target=target, interpreter=interpreter, glibc=target.glibc or host_glibc())


def libpython_of(interpreter: Interpreter) -> Path:
    """The real file of the interpreter's ``libpython3.X.so.1.0`` (the archive of ``bundled`` carries it)."""
    if interpreter.library_dir is None:
        raise PackTargetError(f"{interpreter.describe()} has no shared libpython")
    return (interpreter.library_dir / f"libpython{interpreter.major_minor}.so.1.0").resolve()
