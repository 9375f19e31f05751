"""The export is a part of its own: it imports its converters only when used. Which parts may import it (the
command line alone) is the layer list's (tests/unit/project/test_layers.py)."""

import pathlib
import subprocess
import sys

REPO_ROOT = pathlib.Path(__file__).resolve().parents[3]
HEAVY = ("skl2onnx", "onnxruntime", "onnx", "onnxscript", "hypothesis", "torch")


def test_importing_the_export_loads_no_converter_when_export_onnx_is_not_called():
    probe = (
        "import sys, mlflow_triton.export as e; "
        f"print(sorted(m for m in {HEAVY!r} if m in sys.modules)); print(e.export_onnx.__name__)"
    )
    completed = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO_ROOT)

    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.splitlines() == ["[]", "export_onnx"]
