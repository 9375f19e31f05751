"""`mlflow_triton.local` is a part of its own: the runtime, the contract and the logging wrappers never use it."""

import pathlib
import subprocess
import sys

import pytest

from tests.support.parts import imported_modules

ROOT = pathlib.Path(__file__).resolve().parents[2]
# Everything but the command line, which is the one place allowed to call into the local part.
NEVER_IMPORTING_LOCAL = sorted(
    [
        *(ROOT / "runtime").glob("*.py"),
        *(ROOT / "shared_contract").glob("*.py"),
        *(p for p in (ROOT / "logging_side").glob("*.py") if p.name != "cli.py"),
    ]
)


@pytest.mark.parametrize("path", NEVER_IMPORTING_LOCAL, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_module_never_imports_the_local_part_when_parsed(path):
    local = [name for name in imported_modules(path) if name.startswith("mlflow_triton.local")]

    assert local == []


def test_logging_a_model_loads_no_local_module_when_the_wrappers_are_imported():
    probe = (
        "import sys; import mlflow_triton.sklearn, mlflow_triton.triton, mlflow_triton.runtime;"
        "print(sorted(m for m in sys.modules if m.startswith('mlflow_triton.local')))"
    )
    completed = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)

    assert completed.stdout.splitlines()[-1] == "[]", completed.stderr


def test_importing_the_local_part_never_imports_nvidia_pytriton_when_it_locates_the_server():
    probe = (
        "import sys; import mlflow_triton.local;"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pytriton', 'torch', 'transformers')))"
    )
    completed = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)

    assert completed.stdout.splitlines()[-1] == "[]", completed.stderr
