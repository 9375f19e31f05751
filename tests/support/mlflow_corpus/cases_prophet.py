"""Prophet cases: the model MLflow's Prophet tests log (``tests/prophet/test_prophet_model_export.py``).

The ``prophet_model`` fixture: ``Prophet().fit`` on four years of the test's ``DataGeneration`` daily series
(rebuilt here, also used by the pmdarima cases). Logged with plain ``mlflow.prophet.log_model`` and brought in with
``mlflow_triton.add_repository``. Prophet's ``yhat_lower``/``yhat_upper`` come from random draws at each
``predict`` (the test compares ``yhat`` alone): MLflow's own server answers them differently per call. Prophet is
not in CI's environment: ``make corpus`` installs it into ``.venv-corpus``; where it is not importable the cases are
*not built*.
"""

from __future__ import annotations

from .case import PROPHET_EXPORT, Built, case_table

case = case_table("prophet", PROPHET_EXPORT)
#: ``TEST_CONFIG`` of the test module.
TEST_CONFIG = {
    "start": "2011-07-25",
    "size": 365 * 4,
    "seasonal_period": 7,
    "seasonal_freq": 0.1,
    "date_field": "ds",
    "target_field": "y",
}
FORECAST_HORIZON = 60
INFER_FORMAT = "%Y-%m-%d %H:%M:%S"


def series_frame(start, size, seasonal_period, seasonal_freq, date_field, target_field):
    """``DataGeneration(shift=False, ...).create_series_df()``: a seeded trend, noise and a weekly wave per day."""
    import datetime

    import numpy as np
    import pandas as pd

    rng = np.random.RandomState(42)
    period = np.sin(np.arange(0, seasonal_period, seasonal_freq)) * 50 + 50
    wave = np.tile(period, int(np.ceil(size / (seasonal_period / seasonal_freq))))[:size]
    base = rng.lognormal(mean=2.0, sigma=0.92, size=size)
    seasonal = [np.polyval([-5.0, -1.0], x) for x in np.linspace(start=0, stop=2, num=size)]
    series = np.linspace(start=45.0, stop=90.0, num=size) + base + seasonal + wave
    first = datetime.datetime.strptime(start, "%Y-%m-%d")
    dates = pd.date_range(first, periods=size, freq="D")
    return pd.DataFrame({date_field: dates, target_field: series})


def _prophet():
    from prophet import Prophet

    data = series_frame(**TEST_CONFIG)
    return Prophet().fit(data), data


def _horizon_ds(model):
    """The test's serving input: the future frame's ``ds`` as strings (``INFER_FORMAT``), 3 rows of it."""
    frame = model.make_future_dataframe(periods=FORECAST_HORIZON)
    return frame["ds"].dt.strftime(INFER_FORMAT).to_frame(name="ds").tail(3).reset_index(drop=True)


@case(
    "serve-and-score",
    "test_pyfunc_serve_and_score",
    note="the test logs without input_example: 3 rows of its serving input (ds as strings) are the example",
    route="add-repository",
)
def serve_and_score() -> Built:
    model, _ = _prophet()
    return Built(model, {"input_example": _horizon_ds(model)})


@case(
    "signature-example",
    "test_signature_and_examples_saved_correctly",
    note="signature infer_signature(data, model.predict(horizon)) (outputs: ds, trend, ... yhat), example "
    "data[0:5] (ds a datetime column, y)",
    route="add-repository",
)
def signature_example() -> Built:
    import pandas as pd
    from mlflow.models import infer_signature

    model, data = _prophet()
    horizon = model.make_future_dataframe(periods=FORECAST_HORIZON)
    example = data[0:5].copy(deep=False)
    example["y"] = pd.to_numeric(example["y"])
    return Built(model, {"signature": infer_signature(data, model.predict(horizon)), "input_example": example})


@case(
    "pyfunc-save-load",
    "test_model_pyfunc_save_load",
    note="the test logs without input_example: 3 rows of its horizon frame (ds, datetime) are the example",
    route="add-repository",
)
def pyfunc_save_load() -> Built:
    model, _ = _prophet()
    return Built(model, {"input_example": model.make_future_dataframe(periods=FORECAST_HORIZON).tail(3)})


CASES = tuple(case.cases)  # type: ignore[attr-defined]
