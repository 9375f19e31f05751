"""``import mlflow_triton`` from a built wheel: the three top-level folders land in one package."""

import subprocess
import sys
import zipfile
from pathlib import Path

from mlflow_triton.shared_contract import MAPPING_VERSION

REPO_ROOT = Path(__file__).resolve().parents[3]


def test_wheel_installs_logging_side_runtime_and_contract_when_built_from_the_checkout(tmp_path):
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", str(REPO_ROOT), "-w", str(tmp_path / "dist")],
        check=True,
        capture_output=True,
    )
    [wheel] = (tmp_path / "dist").glob("mlflow_triton-*.whl")
    with zipfile.ZipFile(wheel) as archive:  # the export part ships too (it needs the [onnx] extra to import)
        names = set(archive.namelist())
    assert {"mlflow_triton/export/__init__.py", "mlflow_triton/export/_python_backend_model.py"} <= names
    assert "mlflow_triton/py.typed" in names  # PEP 561: type checkers read the package's annotations
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(tmp_path / "site"), str(wheel)],
        check=True,
        capture_output=True,
    )
    # -S: no site-packages, so neither the editable install nor mlflow can be found; only the wheel.
    probe = (
        "import mlflow_triton, mlflow_triton.runtime, mlflow_triton.shared_contract as c;"
        "from mlflow_triton._model_py import compose_model_py;"
        "print(mlflow_triton.__file__); print(len(compose_model_py()) > 0, c.MAPPING_VERSION)"
    )
    completed = subprocess.run(
        [sys.executable, "-S", "-c", probe],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(tmp_path / "site")},
    )

    assert completed.returncode == 0, completed.stderr
    location, composed = completed.stdout.splitlines()
    assert Path(location).is_relative_to(tmp_path / "site")
    assert composed == f"True {MAPPING_VERSION}"
