"""The export is a part of its own: nothing else imports it, and it imports its converters only when used."""

import ast
import pathlib
import subprocess
import sys

import pytest

REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]
# Everything but the command line, which is the one place allowed to call into the export.
OTHER_PARTS = sorted(
    p
    for folder in ("logging_side", "runtime", "shared_contract")
    for p in (REPO_ROOT / folder).glob("**/*.py")
    if p != REPO_ROOT / "logging_side" / "cli.py"
)
HEAVY = ("skl2onnx", "onnxruntime", "onnx", "onnxscript", "hypothesis", "torch")


@pytest.mark.parametrize("path", OTHER_PARTS, ids=lambda p: p.relative_to(REPO_ROOT).as_posix())
def test_other_parts_never_import_the_export_when_parsed(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    imported = [alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names]
    imported += [node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)]

    assert [name for name in imported if name.startswith("mlflow_triton.export") or name == "export"] == []


def test_importing_the_export_loads_no_converter_when_export_onnx_is_not_called():
    probe = (
        "import sys, mlflow_triton.export as e; "
        f"print(sorted(m for m in {HEAVY!r} if m in sys.modules)); print(e.export_onnx.__name__)"
    )
    completed = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO_ROOT)

    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.splitlines() == ["[]", "export_onnx"]
