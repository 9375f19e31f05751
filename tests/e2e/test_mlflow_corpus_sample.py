"""The MLflow corpus in CI: its sample (one case per flavor of CI's environment, and one that add_repository brings in
as MLflow's serving protocol) through the runner ``make corpus`` runs.

Each case is logged with the ``mlflow_triton`` wrapper into a sqlite store and proven by the real command line
``mlflow-triton check`` (a subprocess: one bundled Triton per model, serving environments from the shared cache).
The whole corpus is ``make corpus`` (docs/mlflow-corpus.md).
"""

import json

import pytest

from tests.support.mlflow_corpus import run

pytestmark = [pytest.mark.triton, pytest.mark.filterwarnings("ignore")]


def test_corpus_sample_passes_when_one_case_per_flavor_is_logged_and_checked_on_real_triton(tmp_path):
    status = run.main(["--sample", "--work-dir", str(tmp_path / "work"), "--report", str(tmp_path / "report")])

    report = json.loads((tmp_path / "report" / "report.json").read_text())
    assert status == 0
    assert {case["case_id"]: case["verdict"] for case in report["cases"]} == dict.fromkeys(run.SAMPLE, "PASS")
    assert "| `sklearn-logreg-log` |" in (tmp_path / "report" / "report.md").read_text()
