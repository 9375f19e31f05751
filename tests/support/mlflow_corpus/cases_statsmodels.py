"""statsmodels cases: the fitted results MLflow's statsmodels tests log (``tests/statsmodels/model_fixtures.py``).

Logged with plain ``mlflow.statsmodels.log_model`` and brought in with ``mlflow_triton.add_repository``. The tests
log without an ``input_example``: the case gives the first rows of the fixture's inference data, and says so.
"""

from __future__ import annotations

from .case import STATSMODELS_EXPORT, Built, case_table

case = case_table("statsmodels", STATSMODELS_EXPORT)
EXAMPLE_NOTE = "the test logs without input_example: 3 rows of the fixture's inference data are the example"


def _ols():
    """The ``ols_model`` fixture: OLS on a constant, x and x squared."""
    import numpy as np
    import statsmodels.api as sm

    rng = np.random.RandomState(9876789)
    x = np.linspace(0, 10, 100)
    features = sm.add_constant(np.column_stack((x, x**2)))
    target = np.dot(features, np.array([1, 0.1, 10])) + rng.normal(size=100)
    return sm.OLS(target, features).fit(), features


@case("ols-save-load", "test_models_save_load", note="the ols_model fixture; " + EXAMPLE_NOTE, route="add-repository")
def ols_save_load() -> Built:
    results, features = _ols()
    return Built(results, {"input_example": features[:3]})


@case(
    "ols-signature-example",
    "test_signature_and_examples_are_saved_correctly",
    note="signature inferred from the inference data, example X[0:3]",
    route="add-repository",
)
def ols_signature_example() -> Built:
    from mlflow.models import infer_signature

    results, features = _ols()
    return Built(results, {"signature": infer_signature(features), "input_example": features[0:3, :]})


@case("wls-save-load", "test_models_save_load", note="the wls_model fixture; " + EXAMPLE_NOTE, route="add-repository")
def wls_save_load() -> Built:
    import statsmodels.api as sm

    features = sm.add_constant(range(1, 8))
    results = sm.WLS([1, 3, 4, 5, 2, 3, 4], features, weights=list(range(1, 8))).fit()
    return Built(results, {"input_example": features[:3]})


@case(
    "glsar-save-load", "test_models_save_load", note="the glsar_model fixture; " + EXAMPLE_NOTE, route="add-repository"
)
def glsar_save_load() -> Built:
    import statsmodels.api as sm

    features = sm.add_constant(range(1, 8))
    results = sm.GLSAR([1, 3, 4, 5, 8, 10, 9], features, rho=2).fit()
    return Built(results, {"input_example": features[:3]})


@case(
    "arima-start-end",
    "test_models_save_load",
    note="the arma_model fixture (monthly dates as 'ME', pandas 3's name for month end); its inference frame "
    "(start, end) is the example",
    route="add-repository",
)
def arima_start_end() -> Built:
    import numpy as np
    import pandas as pd
    from statsmodels.tsa.arima.model import ARIMA
    from statsmodels.tsa.arima_process import arma_generate_sample

    np.random.seed(12345)
    series = arma_generate_sample(np.array([1, -0.75, 0.25]), np.array([1, 0.65, 0.35]), 250)
    dates = pd.date_range("1980-1-1", freq="ME", periods=250)
    results = ARIMA(pd.Series(series, index=dates), order=(2, 0, 2), trend="n").fit()
    example = pd.DataFrame([["1999-06-30", "2001-05-31"]], columns=["start", "end"])
    return Built(results, {"input_example": example})


CASES = tuple(case.cases)  # type: ignore[attr-defined]
