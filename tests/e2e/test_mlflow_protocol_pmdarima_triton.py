"""A pmdarima model whose answer's columns depend on the request, through MLflow's serving protocol on the real Triton.

MLflow's pmdarima flavor reads ``n_periods``, ``return_conf_int`` and ``alpha`` from the request's one row and answers
``yhat`` alone, or ``yhat``, ``yhat_lower`` and ``yhat_upper`` when ``return_conf_int`` is true: no fixed set of output
tensors carries both. Logged with plain MLflow (``mlflow.pmdarima.log_model``, an example asking for the intervals) and
registered in a sqlite store, added with ``add_repository`` without naming a protocol (the automatic choice must pick
MLflow's serving protocol), served by the real Triton: every body is answered as MLflow's scoring server answers it
(``test_mlflow_protocol_triton.answered_alike``), all columns, and ``mlflow-triton check`` PASSes it.

Marked ``heavy_flavors``: pmdarima is not in CI's environment (``make test`` leaves these tests out), and its serving
environment (pmdarima, statsmodels, scipy under numpy<2) takes a cold build of minutes. ``make test-heavy-flavors``
installs pmdarima into ``.venv`` and runs them.
"""

import json

import numpy as np
import pandas as pd
import pytest

from tests.e2e.test_mlflow_protocol_triton import add_registered, answered_alike, check, serving
from tests.support.mlflow_server import using_tracking

pytestmark = [pytest.mark.triton, pytest.mark.heavy_flavors]

JSON = "application/json"
SERIES = 100 + np.cumsum(np.sin(np.arange(60) / 3.0) + np.linspace(0, 1, 60))


def split(**row):
    return json.dumps({"dataframe_split": pd.DataFrame([row]).to_dict(orient="split", index=False)})


# (the status MLflow's scoring server answers, body): Triton must answer each alike.
BODIES = [
    (200, split(n_periods=4, return_conf_int=True, alpha=0.2)),
    (200, split(n_periods=2, return_conf_int=False, alpha=0.05)),  # yhat alone
    (200, json.dumps({"dataframe_records": [{"n_periods": 3, "return_conf_int": True, "alpha": 0.01}]})),
    (400, split(n_periods=4)),  # the example's columns are required
    (400, json.dumps({"dataframe_records": [{"n_periods": 1, "return_conf_int": True, "alpha": 0.1}] * 2})),
]


@pytest.fixture(scope="module")
def added(tmp_path_factory):
    """(tracking URI, root, source URI, the new version's URI, Triton model directory) in a fresh sqlite store."""
    import mlflow.pmdarima
    import pmdarima

    root = tmp_path_factory.mktemp("pmdarima")
    tracking_uri = f"sqlite:///{root / 'mlflow.db'}"
    with using_tracking(tracking_uri):
        mlflow.set_experiment(experiment_id=mlflow.create_experiment("pmdarima", (root / "artifacts").as_uri()))
        with mlflow.start_run():
            source = mlflow.pmdarima.log_model(
                pmdarima.arima.ARIMA(order=(1, 1, 0)).fit(SERIES),
                name="forecast",
                input_example=pd.DataFrame({"n_periods": [3], "return_conf_int": [True], "alpha": [0.1]}),
                registered_model_name="forecast",
            )
        uri, directory = add_registered(root, "forecast")  # protocol="auto": the columns depend on the request
    return tracking_uri, root, source.model_uri, uri, directory


@pytest.fixture(scope="module")
def triton(added):
    _, root, _, _, directory = added
    with serving(root, [directory]) as server:
        yield server


def test_triton_answers_every_column_mlflows_scoring_server_answers_with_and_without_intervals(added, triton):
    tracking_uri, _, source, _, directory = added
    with using_tracking(tracking_uri):
        answers = [answered_alike(triton, source, directory.name, JSON, body) for _, body in BODIES]

    assert [status for (status, _), _ in answers] == [status for status, _ in BODIES]
    columns = [list(json.loads(got)["predictions"][0]) for (status, _), got in answers if status == 200]
    assert columns == [["yhat", "yhat_lower", "yhat_upper"], ["yhat"], ["yhat", "yhat_lower", "yhat_upper"]]


def test_check_passes_the_forecast(added):
    tracking_uri, root, _, uri, _ = added

    status, [verdict], said = check(root, tracking_uri, uri)

    assert status == 0, said
    assert verdict.startswith(f"PASS {uri}: ") and "like MLflow's scoring server" in verdict, verdict
