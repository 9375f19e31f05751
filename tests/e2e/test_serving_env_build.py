"""A real serving-environment build: a new environment gets an upgraded pip, and its record says so.

``ensure_env_for_requirements`` builds into a fresh cache (one tiny requirement, so the build takes
seconds), as it builds every model's environment: ``python -m venv``, ``pip install --upgrade pip``,
then the requirements. The interpreter's bundled pip (``ensurepip``'s, 23.x for Python 3.10-3.12)
resolves large requirement sets slowly; the record (``mlflow-triton-env.json``) keeps ``pip freeze
--all`` of the result, so the upgrade is visible there and in the pip log kept beside it.
"""

import ensurepip
import json

import pytest
from packaging.version import Version

from mlflow_triton.local.serving_env import ENV_RECORD, PIP_LOG, ensure_env_for_requirements

pytestmark = pytest.mark.filterwarnings("ignore")


def test_ensure_env_for_requirements_records_a_pip_newer_than_the_bundled_one_when_it_builds_a_new_environment(
    tmp_path,
):
    env = ensure_env_for_requirements(["six"], cache_dir=tmp_path / "cache", progress=None)

    record = json.loads((env / ENV_RECORD).read_text())
    versions = dict(line.split("==", 1) for line in record["installed"] if "==" in line)
    assert "six" in versions, record["installed"]
    assert Version(versions["pip"]) > Version(ensurepip.version()), (versions["pip"], ensurepip.version())
    assert f"Successfully installed pip-{versions['pip']}" in (env / PIP_LOG).read_text()
