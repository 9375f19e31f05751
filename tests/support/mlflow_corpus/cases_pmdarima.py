"""pmdarima cases: the models MLflow's pmdarima tests log (``tests/pmdarima/test_pmdarima_model_export.py``).

The ``test_data`` fixture is three years of the Prophet test's ``DataGeneration`` series (``orders`` by ``date``);
``auto_arima_model`` is ``pmdarima.auto_arima`` on it (``max_d=1``), ``auto_arima_object_model`` an
``ARIMA(order=(2, 1, 3), maxiter=25)``. The pyfunc input is a one-row configuration frame (``n_periods``,
optionally ``return_conf_int`` and ``alpha``): the answer has ``n_periods`` rows, and 3 columns instead of 1 with
``return_conf_int``. Logged with plain ``mlflow.pmdarima.log_model`` and brought in with
``mlflow_triton.add_repository``. pmdarima is not in CI's environment: ``make corpus`` installs it into
``.venv-corpus``; where it is not importable the cases are *not built*.
"""

from __future__ import annotations

import functools

from .case import PMDARIMA_EXPORT, Built, case_table
from .cases_prophet import series_frame

case = case_table("pmdarima", PMDARIMA_EXPORT)
DATA_CONF = {
    "start": "2016-01-01",
    "size": 365 * 3,
    "seasonal_period": 7,
    "seasonal_freq": 0.1,
    "date_field": "date",
    "target_field": "orders",
}


def _test_data():
    return series_frame(**DATA_CONF).set_index("date")


@functools.cache
def _auto_arima():
    """The ``auto_arima_model`` fixture (module-scoped in the test: fitted once here too, 30 s)."""
    import pmdarima

    return pmdarima.auto_arima(_test_data()["orders"], max_d=1, suppress_warnings=True, error_action="raise")


def _arima_object():
    import pmdarima

    return pmdarima.arima.ARIMA(order=(2, 1, 3), maxiter=25).fit(_test_data()["orders"])


@case(
    "serve-and-score",
    "test_pmdarima_pyfunc_serve_and_score",
    note="the test logs without input_example: its serving input {'n_periods': 30} is the example",
    route="add-repository",
)
def serve_and_score() -> Built:
    import pandas as pd

    return Built(_auto_arima(), {"input_example": pd.DataFrame({"n_periods": 30}, index=[0])})


@case(
    "return-conf-int",
    "test_pmdarima_autoarima_pyfunc_save_and_load",
    note="the test logs without input_example: its configuration {'n_periods': 60, 'return_conf_int': True, "
    "'alpha': 0.1} is the example (yhat, yhat_lower, yhat_upper)",
    route="add-repository",
)
def return_conf_int() -> Built:
    import pandas as pd

    example = pd.DataFrame({"n_periods": 60, "return_conf_int": True, "alpha": 0.1}, index=[0])
    return Built(_auto_arima(), {"input_example": example})


@case(
    "conf-int-signature-example",
    "test_pmdarima_signature_and_example_for_confidence_interval_mode",
    note="signature infer_signature(orders, the forecast with return_conf_int), example test_data[0:10] (the "
    "series, which MLflow's pyfunc refuses as a configuration)",
    route="add-repository",
)
def conf_int_signature_example() -> Built:
    import pandas as pd
    from mlflow.models import infer_signature

    model = _auto_arima()
    data = _test_data()
    periods, intervals = model.predict(n_periods=10, return_conf_int=True, alpha=0.2)
    forecast = pd.DataFrame({"yhat": periods, "yhat_lower": intervals[:, 0], "yhat_upper": intervals[:, 1]})
    return Built(model, {"signature": infer_signature(data["orders"], forecast), "input_example": data[0:10]})


@case(
    "arima-object-registered",
    "test_pmdarima_log_model_calls_register_model",
    note="registered as PmdarimaModel; the test logs without input_example: {'n_periods': 30} is the example",
    route="add-repository",
)
def arima_object_registered() -> Built:
    import pandas as pd

    example = pd.DataFrame({"n_periods": 30}, index=[0])
    return Built(_arima_object(), {"registered_model_name": "PmdarimaModel", "input_example": example})


CASES = tuple(case.cases)  # type: ignore[attr-defined]
