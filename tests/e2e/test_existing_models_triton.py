"""Models already in MLflow on the real Triton: ``add-repository`` and ``mlflow_triton.pyfunc`` end to end.

A user's script logs, in a fresh process against a new sqlite store, an XGBoost classifier with plain
``mlflow.xgboost.log_model`` (registered, no mlflow_triton involved) and a custom ``PythonModel`` that reads
an artifact in ``load_context`` with ``mlflow_triton.pyfunc.log_model``. The console script brings the first
in with ``mlflow-triton add-repository models:/<name>/1`` and proves both with one ``mlflow-triton check``.
"""

import json
import re
import subprocess
import sys
import textwrap

import pytest

from tests.e2e.test_cli import CONSOLE_SCRIPT, user_environment
from tests.support.tree_digest import tree_digest

pytestmark = pytest.mark.triton

USER_SCRIPT = textwrap.dedent(
    """\
    import pathlib
    import sys

    import mlflow
    import mlflow.xgboost
    import numpy as np
    import pandas as pd
    import xgboost

    from mlflow_triton import pyfunc

    mlflow.set_tracking_uri(sys.argv[1])
    mlflow.set_experiment("existing")
    X = pd.DataFrame({"age": np.arange(40, dtype="float64"), "visits": np.arange(40, dtype="float64")[::-1] % 7})
    y = ((X.age + X.visits) > 25).astype(int)
    classifier = xgboost.XGBClassifier(n_estimators=4, max_depth=2).fit(X, y)
    with mlflow.start_run():
        mlflow.xgboost.log_model(classifier, name="churn", input_example=X.head(4), registered_model_name="churn")


    class Scaled(mlflow.pyfunc.PythonModel):
        def load_context(self, context):
            self.factor = float(pathlib.Path(context.artifacts["factor"]).read_text())

        def predict(self, context, model_input, params=None):
            return model_input * self.factor


    pathlib.Path("factor.txt").write_text("2.5")
    pyfunc.log_model(
        Scaled(), name="scaled", input_example=X.head(3), artifacts={"factor": "factor.txt"},
        registered_model_name="scaled",
    )
    print("logged")
    """
)


def test_check_passes_when_plain_xgboost_is_added_and_a_custom_python_model_is_logged(tmp_path):
    (tmp_path / "user.py").write_text(USER_SCRIPT)
    tracking_uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    environment = user_environment()
    logged = subprocess.run(
        [sys.executable, "user.py", tracking_uri],
        cwd=tmp_path,
        env=environment,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert logged.returncode == 0, logged.stderr[-4000:]
    artifacts = tmp_path / "mlruns"
    before = tree_digest(artifacts)

    added = subprocess.run(
        [str(CONSOLE_SCRIPT), "add-repository", "models:/churn/1", "--tracking-uri", tracking_uri],
        cwd=tmp_path,
        env=environment,
        capture_output=True,
        text=True,
        timeout=600,
    )

    assert added.returncode == 0, added.stderr[-4000:]
    assert added.stdout.splitlines()[1:] == [
        "registered models:/churn/2",
        "repository: typed tensors (one tensor per field of the signature: requests as in request.json); chosen "
        "because the typed mapping carries the model exactly (one typed tensor per field of the signature)",
        "prove it: mlflow-triton check models:/churn/2",
    ]
    assert {path: digest for path, digest in tree_digest(artifacts).items() if path in before} == before
    uris = ["models:/churn/2", "models:/scaled/1"]
    checked = subprocess.run(
        [str(CONSOLE_SCRIPT), "check", *uris, "--work-dir", str(tmp_path / "work"), "--tracking-uri", tracking_uri],
        cwd=tmp_path,
        env=environment,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr[-6000:]
    verdicts = re.findall(r"^(PASS|FAIL) (\S+): ", checked.stdout, re.M)
    assert verdicts == [("PASS", uri) for uri in uris]
    report = json.loads((tmp_path / "work" / "report.json").read_text())
    assert [(entry["triton_model"], entry["passed"]) for entry in report] == [("churn", True), ("scaled", True)]
