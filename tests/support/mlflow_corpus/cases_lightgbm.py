"""LightGBM cases: models that MLflow's lightgbm tests log, logged with plain ``mlflow.lightgbm.log_model``.

As for XGBoost there is no mlflow_triton wrapper: each case is logged as its test logs it and brought in with
``mlflow_triton.add_repository``. The tests log without an ``input_example``: the case gives three rows of the
test's inference frame, and says so.
"""

from __future__ import annotations

from .case import LIGHTGBM_EXPORT, Built, case_table

case = case_table("lightgbm", LIGHTGBM_EXPORT)
EXAMPLE_NOTE = "the test logs without input_example: its inference data (3 rows) is the example"


def _booster():
    """The ``lgb_model`` fixture: a ``multiclass`` Booster on iris' first two features, and that frame."""
    import lightgbm as lgb
    import pandas as pd
    from sklearn import datasets

    iris = datasets.load_iris()
    frame = pd.DataFrame(iris.data[:, :2], columns=iris.feature_names[:2])
    booster = lgb.train({"objective": "multiclass", "num_class": 3, "verbose": -1}, lgb.Dataset(frame, iris.target))
    return booster, frame


@case("booster-save-load", "test_model_save_load", note=EXAMPLE_NOTE, route="add-repository")
def booster_save_load() -> Built:
    booster, frame = _booster()
    return Built(booster, {"input_example": frame.head(3)})


@case(
    "booster-registered-conda-env",
    "test_log_model_calls_register_model",
    note="conda_env naming lightgbm, registered as AdsModel1; " + EXAMPLE_NOTE,
    route="add-repository",
)
def booster_registered_conda_env() -> Built:
    import lightgbm
    from mlflow.utils.environment import _mlflow_conda_env

    booster, frame = _booster()
    conda_env = _mlflow_conda_env(additional_pip_deps=[f"lightgbm=={lightgbm.__version__}"])
    return Built(
        booster, {"conda_env": conda_env, "registered_model_name": "AdsModel1", "input_example": frame.head(3)}
    )


@case(
    "booster-default-env",
    "test_model_log_without_specified_conda_env_uses_default_env_with_expected_dependencies",
    note="conda_env=None; " + EXAMPLE_NOTE,
    route="add-repository",
)
def booster_default_env() -> Built:
    booster, frame = _booster()
    return Built(booster, {"conda_env": None, "input_example": frame.head(3)})


@case(
    "booster-whole-frame",
    "test_model_save_load",
    note="the whole inference frame (150 rows) is the example",
    route="add-repository",
)
def booster_whole_frame() -> Built:
    booster, frame = _booster()
    return Built(booster, {"input_example": frame})


CASES = tuple(case.cases)  # type: ignore[attr-defined]
