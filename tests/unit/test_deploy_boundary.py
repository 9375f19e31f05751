"""`mlflow_triton.deploy` is a part of its own: nothing but the command line imports it."""

import pathlib

import pytest

from tests.unit.test_local_boundary import imported_modules

ROOT = pathlib.Path(__file__).resolve().parents[2]
NEVER_IMPORTING_DEPLOY = sorted(
    [
        *(ROOT / "runtime").glob("*.py"),
        *(ROOT / "shared_contract").glob("*.py"),
        *(p for p in (ROOT / "logging_side").glob("*.py") if p.name != "cli.py"),
    ]
)


@pytest.mark.parametrize("path", NEVER_IMPORTING_DEPLOY, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_module_never_imports_the_deploy_part_when_parsed(path):
    deploy = [name for name in imported_modules(path) if name.startswith("mlflow_triton.deploy")]

    assert deploy == []


@pytest.mark.parametrize("path", sorted((ROOT / "local_triton").glob("*.py")), ids=lambda p: p.name)
def test_local_part_never_imports_the_deploy_part_when_parsed(path):
    source = path.read_text(encoding="utf-8")

    assert "mlflow_triton.deploy" not in source
    assert "from ..deploy" not in source
