"""Every ```bash block of README.md and the docs/ pages runs as written (docs/contributing.md states the rule).

A bash block is a promise that it runs: here, with ``bash -e`` in a fresh directory and the test interpreter's
environment first on ``PATH`` (where the ``mlflow-triton`` console script is) -- unless it needs a real Triton,
in which case it is listed in ``RUN_ELSEWHERE`` under the heading it sits below, with the test that runs it.
Commands that need a logged model, a running server or minutes of building are ``console`` blocks instead.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import docs_pages

# The heading a bash block sits under -> the test that runs it on the real Triton.
RUN_ELSEWHERE = {
    "Starting Triton by hand": "tests/e2e/test_readme_triton_by_hand.py::"
    "test_readme_triton_by_hand_block_serves_the_model_like_pyfunc_when_run_as_written",
}

BLOCKS = docs_pages.all_blocks("bash")
RUN_HERE = [block for block in BLOCKS if block.heading not in RUN_ELSEWHERE]


def reader_environment() -> dict[str, str]:
    """A reader's shell with this project installed: its environment's scripts first on PATH, no MLflow settings."""
    scripts = str(Path(sys.executable).parent)
    environment = {name: value for name, value in os.environ.items() if not name.startswith("MLFLOW_")}
    environment["PATH"] = os.pathsep.join([scripts, environment.get("PATH", "")])
    return environment


@pytest.mark.parametrize("block", RUN_HERE, ids=[block.id for block in RUN_HERE])
def test_docs_bash_block_runs_as_written_when_run_in_a_fresh_directory(block, tmp_path):
    completed = subprocess.run(
        ["bash", "-e", "-c", block.code],
        cwd=tmp_path,
        env=reader_environment(),
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert completed.returncode == 0, f"{block.where}:\n{completed.stdout[-3000:]}\n{completed.stderr[-3000:]}"


def test_docs_bash_blocks_run_elsewhere_are_one_block_each_with_a_test_that_exists():
    headings = [block.heading for block in BLOCKS if block.heading in RUN_ELSEWHERE]

    assert sorted(headings) == sorted(RUN_ELSEWHERE)
    assert [reference for reference in RUN_ELSEWHERE.values() if not docs_pages.test_exists(reference)] == []
