"""`mlflow-triton --version`: the package version (kept in one place) and the runtime version configs record."""

import importlib.metadata
import re
import subprocess
import sys
from pathlib import Path

import mlflow_triton
from mlflow_triton import cli
from mlflow_triton.runtime import RUNTIME_VERSION

CONSOLE_SCRIPT = Path(sys.executable).with_name("mlflow-triton")
PYPROJECT = Path(__file__).resolve().parents[3] / "pyproject.toml"


def test_console_script_prints_the_package_and_runtime_versions_when_asked_for_its_version():
    completed = subprocess.run([str(CONSOLE_SCRIPT), "--version"], capture_output=True, text=True, timeout=60)

    assert (completed.returncode, completed.stdout, completed.stderr) == (
        0,
        f"mlflow-triton {mlflow_triton.__version__} (runtime {RUNTIME_VERSION})\n",
        "",
    )


def test_installed_version_is_the_package_attribute_when_pyproject_reads_it_from_there():
    project = PYPROJECT.read_text(encoding="utf-8")

    assert importlib.metadata.version("mlflow-triton") == mlflow_triton.__version__
    assert re.search(r'^dynamic = \["version"\]$', project, flags=re.MULTILINE)
    assert re.search(r'^version = \{attr = "mlflow_triton.__version__"\}$', project, flags=re.MULTILINE)
    assert not re.search(r'^version = "', project, flags=re.MULTILINE)


def test_help_names_the_version_option_and_the_config_parameter_when_printed():
    text = " ".join(cli.build_parser().format_help().split())

    assert "--version print the package version and the version of the runtime" in text
    assert "mlflow_triton_runtime_version" in text
