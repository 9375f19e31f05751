"""``--python``: finding the serving interpreter, and pairing it with the Triton stub of its X.Y.

Fake interpreters (shell scripts answering the probe) stand in for Pythons this machine may lack;
the real 3.10 and 3.12 serving environments are proven on the real server in ``tests/e2e``.
"""

import json
import re
import sys
from pathlib import Path

import pytest

from mlflow_triton.cli import build_parser
from mlflow_triton.local import TritonInstallation, check_command, serve_command
from mlflow_triton.local import installation as installation_module
from mlflow_triton.local import interpreters as interpreters_module
from mlflow_triton.local.errors import InterpreterError, TritonInstallError
from mlflow_triton.local.installation import stub_python_version
from mlflow_triton.local.interpreters import find_interpreter, running_interpreter

RUNNING = f"{sys.version_info.major}.{sys.version_info.minor}"


def fake_python(directory, version, *, shared=True, implementation="cpython", name=None):
    """An executable that answers the interpreter probe as a Python ``version`` would."""
    major_minor = ".".join(version.split(".")[:2])
    libdir = Path(directory) / "lib"
    libdir.mkdir(parents=True, exist_ok=True)
    soname = f"libpython{major_minor}.so.1.0"
    if shared:
        (libdir / soname).write_bytes(b"")
    executable = Path(directory) / "bin" / (name or f"python{major_minor}")
    executable.parent.mkdir(parents=True, exist_ok=True)
    facts = {
        "executable": str(executable),
        "version": version,
        "implementation": implementation,
        "libdir": str(libdir),
        "soname": soname,
        "shared": 1 if shared else 0,
    }
    executable.write_text(f"#!/bin/sh\necho '{json.dumps(facts)}'\n")
    executable.chmod(0o755)
    return executable


def failing_shim(directory, major_minor):
    """What a pyenv shim does for a version pyenv's global setting does not select."""
    shim = Path(directory) / f"python{major_minor}"
    shim.parent.mkdir(parents=True, exist_ok=True)
    shim.write_text(f"#!/bin/sh\necho 'pyenv: python{major_minor}: command not found' >&2\nexit 127\n")
    shim.chmod(0o755)
    return shim


@pytest.fixture
def pyenv_root(tmp_path, monkeypatch):
    """A pyenv tree with 3.99.1 and 3.99.12 (3.99: no Python has it) and a shim on PATH that cannot run it."""
    root = tmp_path / "pyenv"
    for version in ("3.99.1", "3.99.12"):
        fake_python(root / "versions" / version, version)
    failing_shim(tmp_path / "shims", "3.99")
    monkeypatch.setenv("PYENV_ROOT", str(root))
    monkeypatch.setenv("PATH", f"{tmp_path / 'shims'}:/usr/bin:/bin")
    return root


def test_find_interpreter_takes_the_newest_pyenv_build_when_the_shim_on_path_cannot_run_it(pyenv_root):
    interpreter = find_interpreter("3.99")

    assert (interpreter.version, interpreter.major_minor) == ("3.99.12", "3.99")
    assert interpreter.executable == pyenv_root / "versions" / "3.99.12" / "bin" / "python3.99"
    assert interpreter.library_dir == pyenv_root / "versions" / "3.99.12" / "lib"


@pytest.mark.parametrize(
    "unusable", [{"shared": False}, {"implementation": "pypy"}], ids=["without-shared-libpython", "not-cpython"]
)
def test_find_interpreter_passes_over_an_unusable_candidate_on_path_when_a_later_one_serves(
    unusable, pyenv_root, tmp_path, monkeypatch
):
    first = fake_python(tmp_path / "first", "3.99.3", **unusable)
    monkeypatch.setenv("PATH", f"{first.parent}:/usr/bin:/bin")

    interpreter = find_interpreter("3.99")

    assert interpreter.executable == pyenv_root / "versions" / "3.99.12" / "bin" / "python3.99"


def test_find_interpreter_says_why_it_passed_over_each_candidate_when_none_serves(tmp_path, monkeypatch):
    static = fake_python(tmp_path / "static", "3.95.1", shared=False)
    pypy = fake_python(tmp_path / "pyenv" / "versions" / "3.95.2", "3.95.2", implementation="pypy")
    monkeypatch.setenv("PYENV_ROOT", str(tmp_path / "pyenv"))
    monkeypatch.setenv("PATH", str(static.parent))

    with pytest.raises(
        InterpreterError,
        match=re.escape(
            f"--python 3.95: no usable Python 3.95 interpreter found (looked at: {static} (no shared "
            f"libpython3.95.so.1.0), {pypy} (not CPython)). Install one"
        ),
    ):
        find_interpreter("3.95")


def test_find_interpreter_takes_the_running_python_when_its_version_is_asked_for():
    interpreter = find_interpreter(RUNNING)

    assert interpreter.version.startswith(f"{RUNNING}.")
    assert interpreter.executable == Path(sys.base_prefix) / "bin" / f"python{RUNNING}"  # never a virtualenv's
    assert interpreter == running_interpreter()


def test_find_interpreter_takes_a_path_when_given_one(tmp_path):
    executable = fake_python(tmp_path / "custom", "3.98.4", name="python")

    assert find_interpreter(str(executable)).version == "3.98.4"


def test_find_interpreter_names_where_it_looked_when_no_interpreter_has_the_version(pyenv_root, tmp_path):
    with pytest.raises(
        InterpreterError,
        match=re.escape(
            "--python 3.97: no usable Python 3.97 interpreter found (looked at: nothing). Install one (pyenv: "
            "PYTHON_CONFIGURE_OPTS=--enable-shared pyenv install 3.97;"
        ),
    ):
        find_interpreter("3.97")


def test_find_interpreter_lists_the_candidates_it_rejected_when_none_runs(tmp_path, monkeypatch):
    shim = failing_shim(tmp_path / "shims", "3.96")
    monkeypatch.setenv("PYENV_ROOT", str(tmp_path / "no-pyenv"))
    monkeypatch.setenv("PATH", str(shim.parent))

    with pytest.raises(InterpreterError, match=re.escape(f"(looked at: {shim})")):
        find_interpreter("3.96")


def test_find_interpreter_refuses_a_build_without_shared_libpython_when_named(tmp_path):
    executable = fake_python(tmp_path / "static", "3.99.2", shared=False)

    with pytest.raises(
        InterpreterError,
        match=re.escape(
            f"Python 3.99.2 ({executable}) has no shared libpython3.99.so.1.0 (it was built without --enable-shared)"
        ),
    ):
        find_interpreter(str(executable))


def test_find_interpreter_refuses_another_implementation_when_named(tmp_path):
    executable = fake_python(tmp_path / "pypy", "3.10.14", implementation="pypy")

    with pytest.raises(InterpreterError, match="pypy cannot serve; Triton's Python backend embeds CPython"):
        find_interpreter(str(executable))


@pytest.mark.parametrize("spec", ["/no/such/python", "three-twelve"])
def test_find_interpreter_says_what_it_takes_when_the_spec_names_nothing(spec):
    with pytest.raises(InterpreterError, match=re.escape(f"--python {spec}: no Python executable there (give X.Y")):
        find_interpreter(spec)


# ---------------------------------------------------------------------------- the installation it selects
STUB_VERSIONS = ("3.8", "3.9", "3.10", "3.11", "3.12", "3.13")


@pytest.fixture(autouse=True)
def bundled_server(tmp_path, monkeypatch):
    """A tree shaped like nvidia-pytriton 0.7.0's server, one stub per Python (these tests run without the wheel).

    The real wheel's stubs are paired with real interpreters in ``tests/e2e/test_serving_pythons.py``.
    """
    tritonserver = tmp_path / "wheel" / "pytriton" / "tritonserver"
    (tritonserver / "bin").mkdir(parents=True)
    (tritonserver / "bin" / "tritonserver").write_text("#!/bin/sh\nexit 99\n")
    (tritonserver / "backends" / "python").mkdir(parents=True)
    (tritonserver / "backends" / "python" / "libtriton_python.so").write_bytes(b"\x7fELF")
    for version in STUB_VERSIONS:
        stub = tritonserver / "python_backend_stubs" / version / "triton_python_backend_stub"
        stub.parent.mkdir(parents=True)
        stub.write_bytes(f"\x7fELF\x00libpython{version}.so.1.0\x00".encode())
    libraries = tmp_path / "wheel" / "nvidia_pytriton.libs"
    libraries.mkdir()
    monkeypatch.setattr(installation_module, "locate_bundled_server", lambda: (tritonserver, libraries))
    return tritonserver


def test_bundled_pairs_the_stub_with_the_interpreter_when_python_is_given(tmp_path):
    installation = TritonInstallation.bundled(tmp_path / "cache", python=sys.executable, progress=None)
    base = str(Path(sys.base_prefix) / "bin" / f"python{RUNNING}")

    assert installation.python_version == RUNNING
    assert installation.python_executable == base
    assert installation.backend_directory == tmp_path / "cache" / "triton-2.51.0" / f"backends-py{RUNNING}"
    assert stub_python_version(installation.backend_directory / "python" / "triton_python_backend_stub") == RUNNING
    assert f"(Python {RUNNING} stub; serving environments from {base})" in installation.describe()


def test_bundled_removes_backend_assemblies_left_for_hours_by_killed_processes_when_chosen(tmp_path):
    import os
    import time

    cache = tmp_path / "cache" / "triton-2.51.0"
    stale, running = cache / ".backends-py3.12-abcd1234", cache / ".backends-py3.12-efgh5678"
    for build in (stale, running):
        (build / "python").mkdir(parents=True)
    hours_ago = time.time() - 7 * 3600
    os.utime(stale, (hours_ago, hours_ago))

    installation = TritonInstallation.bundled(tmp_path / "cache", python_version="3.12", progress=None)

    assert sorted(p.name for p in cache.iterdir()) == [".backends-py3.12-efgh5678", "backends-py3.12"]
    assert installation.backend_directory == cache / "backends-py3.12"


def test_bundled_copies_the_stub_into_a_private_backend_directory_when_another_python_is_chosen(
    tmp_path, bundled_server
):
    other = fake_python(tmp_path / "py312", "3.12.99")

    installation = TritonInstallation.bundled(tmp_path / "cache", python=str(other), progress=None)

    assert (installation.python_version, installation.serving_python) == ("3.12", other)
    assert installation.backend_directory == tmp_path / "cache" / "triton-2.51.0" / "backends-py3.12"
    assert stub_python_version(installation.backend_directory / "python" / "triton_python_backend_stub") == "3.12"
    assert (installation.backend_directory / "python" / "libtriton_python.so").is_file()
    assert not (bundled_server / "backends" / "python" / "triton_python_backend_stub").exists()  # wheel unchanged


def test_bundled_lists_the_stubs_when_the_interpreter_has_none(tmp_path):
    other = fake_python(tmp_path / "py399", "3.99.0")

    with pytest.raises(
        TritonInstallError,
        match=re.escape(
            "nvidia-pytriton 0.7.0 has no Python-backend stub for Python 3.99 (it has: 3.10, 3.11, 3.12, 3.13, 3.8, "
            "3.9); build the serving environment with one of those (--python X.Y)"
        ),
    ):
        TritonInstallation.bundled(tmp_path / "cache", python=str(other), progress=None)


def test_bundled_refuses_a_stub_version_that_is_not_the_interpreters_when_both_are_given(tmp_path):
    with pytest.raises(TritonInstallError, match="python_version '3.8' and Python .* disagree"):
        TritonInstallation.bundled(tmp_path / "cache", "3.8", python=sys.executable, progress=None)


@pytest.fixture
def custom_triton(tmp_path):
    """An installation whose stub links libpython3.12 (the bytes a real stub holds among others)."""
    binary = tmp_path / "triton" / "bin" / "tritonserver"
    binary.parent.mkdir(parents=True)
    binary.write_text("#!/bin/sh\nexit 99\n")
    binary.chmod(0o755)
    stub = tmp_path / "triton" / "backends" / "python" / "triton_python_backend_stub"
    stub.parent.mkdir(parents=True)
    stub.write_bytes(b"\x7fELF\x00libpython3.12.so.1.0\x00libc.so.6\x00")
    return binary, stub.parents[1]


def test_custom_installation_refuses_a_serving_python_of_another_version_when_the_stub_names_its_own(
    custom_triton, tmp_path
):
    other = fake_python(tmp_path / "py310", "3.10.99")

    with pytest.raises(
        TritonInstallError,
        match=re.escape(
            "is built for Python 3.12 (it links libpython3.12), but serving environments would be built with "
            "Python 3.10: pass --python 3.12"
        ),
    ):
        TritonInstallation.custom(*custom_triton, python=str(other))


def test_custom_installation_takes_the_serving_python_when_it_matches_the_stub(custom_triton, tmp_path):
    matching = fake_python(tmp_path / "py312", "3.12.99")

    installation = TritonInstallation.custom(*custom_triton, python=str(matching))

    assert (installation.python_version, installation.python_executable) == ("3.12", str(matching))


# ---------------------------------------------------------------------------- the command line
def test_cli_passes_python_to_the_command_when_given():
    args = build_parser().parse_args(["check", "models:/m/1", "--python", "3.12"])
    serve_args = build_parser().parse_args(["serve", "models:/m/1", "--python", "/opt/python/bin/python3.12"])

    assert (args.python, serve_args.python) == ("3.12", "/opt/python/bin/python3.12")


@pytest.mark.parametrize(("command", "name"), [(check_command, "check"), (serve_command, "serve")])
def test_command_fails_with_the_interpreter_error_when_python_names_none(command, name, pyenv_root, tmp_path, capsys):
    status = command(["models:/m/1"], python="3.97", work_dir=tmp_path / "work", progress=None)

    assert status == 1
    error = capsys.readouterr().err
    assert f"mlflow-triton {name}: error: --python 3.97: no usable Python 3.97 interpreter found" in error


def test_running_interpreter_raises_naming_the_executable_when_its_probe_gets_no_answer(monkeypatch):
    monkeypatch.setattr(interpreters_module, "_probe", lambda executable: None)  # e.g. the probe timed out

    with pytest.raises(InterpreterError, match=re.escape(f"the running Python {sys.executable} did not answer")):
        running_interpreter()
