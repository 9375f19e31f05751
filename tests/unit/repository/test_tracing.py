"""``untraced``: tracing off while a proof predicts, back as it was after, and no tracking store opened on the way.

Each case runs in a fresh interpreter, as a user's script does, with no tracking URI set (MLflow's default is a
sqlite store in the working directory) and the working directory a fresh folder: what is left there is what the
block left."""

import os
import subprocess
import sys

import pytest

SCRIPT = """
import mlflow
from mlflow.tracing.provider import is_tracing_enabled
from mlflow_triton.repository.tracing import untraced

{before}
with untraced():
    inside = is_tracing_enabled()
print(inside, is_tracing_enabled())
"""


def run_fresh(script, directory):
    """``script`` in a fresh interpreter in ``directory``, without any MLflow variable (no tracking URI)."""
    environment = {key: value for key, value in os.environ.items() if not key.startswith("MLFLOW_")}
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=directory, env=environment, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.split()


@pytest.mark.parametrize(
    ("before", "left"),
    [
        ("", []),  # MLflow had not set its tracer provider up: untraced leaves it so, and opens no store
        ("mlflow.tracing.disable()", []),
    ],
)
def test_untraced_turns_tracing_off_and_back_as_it_was_leaving_no_store_behind(tmp_path, before, left):
    said = run_fresh(SCRIPT.format(before=before), tmp_path)

    assert said == ["False", "False" if before else "True"]
    assert sorted(path.name for path in tmp_path.iterdir()) == left  # no ./mlflow.db (it was left before the fix)


def test_untraced_inside_a_traced_process_turns_tracing_back_on(tmp_path):
    script = SCRIPT.format(
        before=f"mlflow.set_tracking_uri('sqlite:///{tmp_path / 'store.db'}')\n"
        "@mlflow.trace\ndef f():\n    return 1\nf()"
    )
    said = run_fresh(script, tmp_path)

    assert said[-2:] == ["False", "True"]
    assert "mlflow.db" not in [path.name for path in tmp_path.iterdir()]
