"""What a serving environment's record tells about it (size, build time), and the pip upgrade's fallback.

A real build (pip upgraded, the record written) runs in ``tests/e2e/test_serving_env_build.py``.
"""

import json
import os

from mlflow_triton.command_line import as_progress
from mlflow_triton.local.serving_env import ENV_RECORD, PIP_LOG, _cost, _upgrade_pip, disk_usage, env_summary


def test_disk_usage_counts_a_hard_linked_file_once_when_the_tree_has_two_names_for_it(tmp_path):
    (tmp_path / "data").write_bytes(b"x" * 100_000)
    single = disk_usage(tmp_path)
    os.link(tmp_path / "data", tmp_path / "same-data")
    (tmp_path / "link").symlink_to(tmp_path / "data")

    assert disk_usage(tmp_path) - single < 4096 * 2  # the symlink itself at most, never a second copy
    assert single >= 100_000


def test_env_summary_reports_the_recorded_size_and_build_time_when_the_record_has_them(tmp_path):
    (tmp_path / ENV_RECORD).write_text(
        json.dumps(
            {
                "requirements": ["mlflow-skinny==3.17.2"],
                "python": "cpython-3.12.1-x86_64",
                "build_seconds": 31.4,
                "size_bytes": 508 * 2**20,
            }
        )
    )

    summary = env_summary(tmp_path)

    assert summary == {
        "path": str(tmp_path),
        "python": "cpython-3.12.1-x86_64",
        "size_mib": 508,
        "build_seconds": 31.4,
        "requirements": ["mlflow-skinny==3.17.2"],
    }
    assert _cost(summary) == "508 MiB, built in 31s"


def test_env_summary_measures_the_size_when_an_older_record_lacks_it(tmp_path):
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "big").write_bytes(b"y" * 3 * 2**20)
    (tmp_path / ENV_RECORD).write_text(json.dumps({"requirements": [], "python": "cpython-3.11.7-x86_64"}))

    summary = env_summary(tmp_path)

    assert (summary["size_mib"], summary["build_seconds"]) == (3, None)
    assert _cost(summary) == "3 MiB"


def test_upgrade_pip_says_it_goes_on_with_the_bundled_pip_when_the_upgrade_fails(tmp_path):
    failing_python = tmp_path / "python"
    failing_python.write_text(
        "#!/bin/sh\necho 'ERROR: Could not find a version that satisfies the requirement pip'\nexit 1\n"
    )
    failing_python.chmod(0o755)
    messages = []

    _upgrade_pip(str(failing_python), tmp_path / PIP_LOG, as_progress(messages.append), 0.0)

    assert messages[-1] == (
        "could not upgrade pip in the new environment (ERROR: Could not find a version that "
        "satisfies the requirement pip); resolving with the interpreter's own pip"
    )
