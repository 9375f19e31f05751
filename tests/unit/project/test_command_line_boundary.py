"""`mlflow_triton.command_line` is the base every command stands on: standard library and the error base class only
(parsed by tests/unit/project/test_layers.py, which holds the layer list); importing it loads no other part."""

import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[3]
MODULES = sorted((ROOT / "command_line").glob("*.py"))
PACKAGE = "mlflow_triton.command_line"


def test_the_part_holds_the_modules_it_is_parsed_for():
    assert {path.stem for path in MODULES} >= {
        "__init__",
        "_runner",
        "_signals",
        "_progress",
        "_urls",
        "_download_bars",
    }


def test_importing_the_part_loads_no_mlflow_torch_transformers_nor_other_part_when_imported():
    probe = (
        f"import sys; import {PACKAGE};"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('mlflow', 'torch', 'transformers', 'numpy') "
        "or m.startswith(('mlflow_triton.local', 'mlflow_triton.export', 'mlflow_triton.deploy', "
        "'mlflow_triton.runtime', 'mlflow_triton._'))))"
    )
    completed = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)

    assert completed.stdout.splitlines()[-1] == "[]", completed.stderr
