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


# --- the README's five-minute tour, command by command ---------------------------------------------------------------

README = Path(__file__).resolve().parents[3] / "README.md"
TOUR_HEADING = "A five-minute tour"

# Every command line of the tour's console blocks -> the test that runs it as shown, or what the tour says it needs
# (written in the README before the line or in its comment).
TOUR = {
    "mlflow-triton check models:/demo-classifier/1": (
        "runs",
        "tests/e2e/test_cli.py::test_check_passes_when_models_of_every_flavor_are_checked_from_the_command_line",
    ),
    "mlflow-triton serve models:/demo-classifier/1": (
        "runs",
        "tests/e2e/test_cli.py::test_serve_answers_the_printed_curl_commands_and_stops_everything_when_signalled",
    ),
    "curl -s -X POST http://127.0.0.1:8000/v2/models/classifier/infer": (
        "runs",
        "tests/e2e/test_cli.py::test_serve_answers_the_printed_curl_commands_and_stops_everything_when_signalled",
    ),
    "mlflow-triton export-onnx models:/demo-classifier/1 --out exports --backend python": (
        "runs",
        "tests/e2e/test_export_cli.py::test_console_script_exports_the_registered_model_when_given_its_uri",
    ),
    "mlflow-triton serve exports/classifier_onnx": (
        "runs",
        "tests/e2e/test_export_cli.py::test_serve_answers_the_export_directory_like_pyfunc_when_given_a_python_backend_export",
    ),
    "mlflow-triton pack models:/demo-classifier/1 --out packed-here": (
        "runs",
        "tests/e2e/test_pack.py::test_pack_writes_a_packed_repository_when_a_user_scripts_model_is_packed_from_the_console",
    ),
    "mlflow-triton check packed-here": (
        "runs",
        "tests/e2e/test_pack.py::test_check_passes_from_a_bare_start_when_the_packed_sklearn_example_is_checked",
    ),
    "mlflow-triton pack models:/demo-classifier/1 --target triton-25.xx --out packed": (
        "needs",
        "proven in that container",
    ),
    "mlflow-triton locate models:/demo-classifier/1": (
        "runs",
        "tests/unit/deploy/test_deploy_store.py::test_locate_returns_the_stored_repository_folder_when_the_store_is_local",
    ),
    "mlflow-triton kserve models:/demo-classifier/1 --out classifier-isvc.yaml": ("needs", "needs an object store"),
}


def _tour_text():
    text = README.read_text(encoding="utf-8")
    start = text.index(f"## {TOUR_HEADING}")
    return text[start : text.index("\n## ", start + 1)]


def _tour_command_lines():
    """``(command, comment, text of the tour before the line)`` for each command of the tour's console blocks."""
    tour, found = _tour_text(), []
    for block in docs_pages.blocks(README, "console"):
        if block.heading != TOUR_HEADING:
            continue
        for line in block.code.splitlines():
            command, _, comment = line.partition("#")
            command = command.strip()
            if command.startswith(("mlflow-triton ", "curl ")):
                found.append((command, comment.strip(), tour[: tour.index(line)]))
    return found


def _key(command):
    return next((key for key in TOUR if command == key or command.startswith(f"{key} ")), command)


def test_readme_tour_lists_every_command_it_shows_with_the_test_that_runs_it_or_what_it_needs():
    assert sorted(_key(command) for command, _, _ in _tour_command_lines()) == sorted(TOUR)
    assert [ref for kind, ref in TOUR.values() if kind == "runs" and not docs_pages.test_exists(ref)] == []


@pytest.mark.parametrize("command", [key for key, (kind, _) in TOUR.items() if kind == "needs"])
def test_readme_tour_says_what_a_command_needs_before_it_shows_it(command):
    [(comment, before)] = [
        (comment, before) for line, comment, before in _tour_command_lines() if _key(line) == command
    ]
    need = TOUR[command][1]

    assert need in comment or need in before.rsplit("```", 2)[0][-1500:]


def test_readme_tour_says_beforehand_that_kserve_needs_an_object_store_not_the_tours_local_disk():
    before = next(before for line, _, before in _tour_command_lines() if line.startswith("mlflow-triton kserve"))

    assert "**object store**" in before and "sqlite:///mlruns.db" in before and "cannot read" in before


def test_readme_tours_pack_closes_with_a_proof_that_works_for_its_target():
    """`pack`'s closing line proposes `mlflow-triton check` for a bundled pack only (a container target's
    interpreter is not here): each pack line of the tour, its target's closing hint."""
    from mlflow_triton.deploy._pack import closing_hint
    from mlflow_triton.deploy._targets import DEFAULT_TARGET, TARGETS

    for line, _, _ in _tour_command_lines():
        if not line.startswith("mlflow-triton pack "):
            continue
        words = line.split()
        target = words[words.index("--target") + 1] if "--target" in words else DEFAULT_TARGET
        hint = closing_hint(TARGETS[target], Path("packed"))
        proves_here = hint.startswith("prove it with a bare start: mlflow-triton check")
        assert proves_here == (target == "bundled"), (line, hint)
        if not proves_here:
            assert f"docker run --rm -p 8000:8000 -v packed:/models {TARGETS[target].run_image} tritonserver" in hint


def test_readme_installs_from_a_checkout_and_says_what_make_test_needs():
    text = README.read_text(encoding="utf-8")
    install = text[text.index("## Install") :]
    first_command = next(
        line for line in install.splitlines() if line.startswith(("pip ", "git ", "cd ", "python", "make "))
    )

    assert first_command.startswith("pip install -e .")
    assert "pip install mlflow-triton" not in text and "pip install 'mlflow-triton[" not in text
    assert "a Python 3.10 and a Python 3.12 interpreter" in text and "about 40 minutes on a 2-core machine" in text
    first_block = docs_pages.blocks(README, "console")[0].code.splitlines()
    assert [line.split()[:2] for line in first_block[:2]] == [["make", "demo"], ["make", "test"]]
