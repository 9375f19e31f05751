"""`mlflow_triton.command_line` is the base every command stands on: standard library and the error base class only."""

import ast
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
MODULES = sorted((ROOT / "command_line").glob("*.py"))
PACKAGE = "mlflow_triton.command_line"
#: What it may import of the package: the contract, for ``MlflowTritonError``, and itself.
ALLOWED = ("mlflow_triton.shared_contract", PACKAGE)


def imported_modules(path):
    """Absolute module names imported by ``path``, relative imports resolved against the package."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = PACKAGE.rsplit(".", node.level - 1)[0] if node.level else ""
            yield ".".join(part for part in (base, node.module) if part)


def test_the_part_holds_the_modules_it_is_parsed_for():
    assert {path.stem for path in MODULES} >= {
        "__init__",
        "_runner",
        "_signals",
        "_progress",
        "_urls",
        "_download_bars",
    }


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.name)
def test_module_imports_only_the_standard_library_and_the_contract_when_parsed(path):
    outside = [
        name
        for name in imported_modules(path)
        if name.split(".")[0] not in sys.stdlib_module_names
        and name != "__future__"
        and not any(name == allowed or name.startswith(f"{allowed}.") for allowed in ALLOWED)
    ]

    assert outside == []


def test_importing_the_part_loads_no_mlflow_torch_transformers_nor_other_part_when_imported():
    probe = (
        f"import sys; import {PACKAGE};"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('mlflow', 'torch', 'transformers', 'numpy') "
        "or m.startswith(('mlflow_triton.local', 'mlflow_triton.export', 'mlflow_triton.deploy', "
        "'mlflow_triton.runtime', 'mlflow_triton._'))))"
    )
    completed = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)

    assert completed.stdout.splitlines()[-1] == "[]", completed.stderr
