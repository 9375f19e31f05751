"""The built wheel carries the command line and the local part, and declares the `local` extra."""

import subprocess
import sys
import zipfile
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[3]


def test_wheel_installs_the_mlflow_triton_command_and_the_local_extra_when_built_from_the_checkout(tmp_path):
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", str(REPO_ROOT), "-w", str(tmp_path)],
        check=True,
        capture_output=True,
    )
    [wheel] = tmp_path.glob("mlflow_triton-*.whl")

    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        info = next(name.rsplit("/", 1)[0] for name in names if name.endswith(".dist-info/METADATA"))
        entry_points = archive.read(f"{info}/entry_points.txt").decode()
        metadata = archive.read(f"{info}/METADATA").decode()

    assert {
        "mlflow_triton/cli.py",
        "mlflow_triton/__main__.py",
        "mlflow_triton/_console.py",
        "mlflow_triton/local/__init__.py",
        "mlflow_triton/local/_serve.py",
        "mlflow_triton/local/check.py",
        "mlflow_triton/command_line/__init__.py",
        "mlflow_triton/command_line/_runner.py",
    } <= names
    assert "[console_scripts]\nmlflow-triton = mlflow_triton._console:console" in entry_points
    assert "Provides-Extra: local" in metadata
    assert (
        'Requires-Dist: nvidia-pytriton==0.7.0; (sys_platform == "linux" and platform_machine == "x86_64") '
        'and extra == "local"'
    ) in metadata
