"""XGBoost cases: models that MLflow's xgboost tests log, logged with plain ``mlflow.xgboost.log_model``.

There is no mlflow_triton xgboost wrapper: each case is logged as the test logs it and brought in with
``mlflow_triton.add_repository`` (docs/existing-models.md). Where the test logs without an ``input_example``,
the case gives its inference data (a few rows), and says so; the case without one shows the refusal.
"""

from __future__ import annotations

from .case import XGBOOST_EXPORT, Built, case_table

case = case_table("xgboost", XGBOOST_EXPORT)
EXAMPLE_NOTE = "the test logs without input_example: its inference data (3 rows) is the example"


def _booster():
    """The ``xgb_model`` fixture: a ``multi:softprob`` Booster on iris' first two features, and that frame."""
    import pandas as pd
    import xgboost as xgb
    from sklearn import datasets

    iris = datasets.load_iris()
    frame = pd.DataFrame(iris.data[:, :2], columns=iris.feature_names[:2])
    booster = xgb.train({"objective": "multi:softprob", "num_class": 3}, xgb.DMatrix(frame, iris.target))
    return booster, frame


def _signature():
    """The ``xgb_model_signature`` fixture."""
    import numpy as np
    from mlflow.models import ModelSignature
    from mlflow.types import DataType
    from mlflow.types.schema import ColSpec, Schema, TensorSpec

    return ModelSignature(
        inputs=Schema(
            [
                ColSpec(name="sepal length (cm)", type=DataType.double),
                ColSpec(name="sepal width (cm)", type=DataType.double),
            ]
        ),
        outputs=Schema([TensorSpec(np.dtype("float32"), (-1, 3))]),
    )


@case("booster-save-load", "test_model_save_load", note=EXAMPLE_NOTE, route="add-repository")
def booster_save_load() -> Built:
    booster, frame = _booster()
    return Built(booster, {"input_example": frame.head(3)})


def _regressor():
    """The ``xgb_sklearn_model`` fixture: an ``XGBRegressor`` (10 trees) on the wine data, and that frame."""
    import pandas as pd
    import xgboost as xgb
    from sklearn import datasets

    wine = datasets.load_wine()
    frame = pd.DataFrame(wine.data, columns=wine.feature_names)
    return xgb.XGBRegressor(n_estimators=10).fit(frame, wine.target), frame


@case("regressor-save-load", "test_sklearn_model_save_load", note=EXAMPLE_NOTE, route="add-repository")
def regressor_save_load() -> Built:
    regressor, frame = _regressor()
    return Built(regressor, {"input_example": frame.head(3)})


@case("booster-signature-example", "test_signature_and_examples_are_saved_correctly", route="add-repository")
def booster_signature_example() -> Built:
    booster, frame = _booster()
    return Built(booster, {"signature": _signature(), "input_example": frame.head(3)})


@case(
    "booster-signature-no-example",
    "test_signature_and_examples_are_saved_correctly",
    note="the signature without an example: nothing to predict",
    route="add-repository",
)
def booster_signature_no_example() -> Built:
    booster, _ = _booster()
    return Built(booster, {"signature": _signature()})


@case(
    "booster-pyfunc-serve",
    "test_pyfunc_serve_and_score",
    note="the whole frame (150 rows) is the example",
    route="add-repository",
)
def booster_pyfunc_serve() -> Built:
    booster, frame = _booster()
    return Built(booster, {"input_example": frame})


@case(
    "booster-json-format",
    "test_log_model_with_model_format",
    note="model_format='json'; " + EXAMPLE_NOTE,
    route="add-repository",
)
def booster_json_format() -> Built:
    booster, frame = _booster()
    return Built(booster, {"model_format": "json", "input_example": frame.head(3)})


@case("booster-metadata", "test_model_log_with_metadata", note=EXAMPLE_NOTE, route="add-repository")
def booster_metadata() -> Built:
    booster, frame = _booster()
    return Built(booster, {"metadata": {"metadata_key": "metadata_value"}, "input_example": frame.head(3)})


@case("booster-one-row-example", "test_model_log_with_signature_inference", route="add-repository")
def booster_one_row_example() -> Built:
    booster, frame = _booster()
    return Built(booster, {"input_example": frame.iloc[[0]]})


@case(
    "booster-conda-env",
    "test_model_log",
    note="conda_env naming xgboost; " + EXAMPLE_NOTE,
    route="add-repository",
)
def booster_conda_env() -> Built:
    from mlflow.utils.environment import _mlflow_conda_env

    booster, frame = _booster()
    conda_env = _mlflow_conda_env(additional_pip_deps=["xgboost"])
    return Built(booster, {"conda_env": conda_env, "input_example": frame.head(3)})


@case(
    "booster-registered",
    "test_log_model_calls_register_model",
    note="conda_env naming xgboost, registered as AdsModel1; " + EXAMPLE_NOTE,
    route="add-repository",
)
def booster_registered() -> Built:
    from mlflow.utils.environment import _mlflow_conda_env

    booster, frame = _booster()
    conda_env = _mlflow_conda_env(additional_pip_deps=["xgboost"])
    return Built(
        booster, {"conda_env": conda_env, "registered_model_name": "AdsModel1", "input_example": frame.head(3)}
    )


@case(
    "booster-ubj-format",
    "test_log_model_with_model_format",
    note="model_format='ubj'; " + EXAMPLE_NOTE,
    route="add-repository",
)
def booster_ubj_format() -> Built:
    booster, frame = _booster()
    return Built(booster, {"model_format": "ubj", "input_example": frame.head(3)})


@case(
    "booster-code-paths",
    "test_log_model_with_code_paths",
    note="code_paths=[the case's own module file], as the test passes its __file__; " + EXAMPLE_NOTE,
    route="add-repository",
)
def booster_code_paths() -> Built:
    booster, frame = _booster()
    return Built(booster, {"code_paths": [__file__], "input_example": frame.head(3)})


@case(
    "booster-params-approx-contribs",
    "test_xgbooster_predict_exclude_invalid_params",
    note="the test's signature infer_signature(X.head(3), params={'invalid_param': 1, 'approx_contribs': True}) "
    "(inputs and params, no outputs); the test logs without input_example: X.head(3) is the example",
    route="add-repository",
)
def booster_params_approx_contribs() -> Built:
    from mlflow.models import infer_signature

    booster, frame = _booster()
    signature = infer_signature(frame.head(3), params={"invalid_param": 1, "approx_contribs": True})
    return Built(booster, {"signature": signature, "input_example": frame.head(3)})


@case(
    "regressor-params-output-margin",
    "test_xgbmodel_predict_exclude_invalid_params",
    note="the test's signature infer_signature(X.head(3), params={'invalid_param': 1, 'output_margin': True}) "
    "(inputs and params, no outputs); the test logs without input_example: X.head(3) is the example",
    route="add-repository",
)
def regressor_params_output_margin() -> Built:
    from mlflow.models import infer_signature

    regressor, frame = _regressor()
    signature = infer_signature(frame.head(3), params={"invalid_param": 1, "output_margin": True})
    return Built(regressor, {"signature": signature, "input_example": frame.head(3)})


@case(
    "regressor-params-example",
    "test_xgbmodel_predict_exclude_invalid_params",
    note="the test's params given with the example instead, (X.head(3), {'output_margin': True}): the signature "
    "with its params schema is then inferred from the example and its prediction",
    route="add-repository",
)
def regressor_params_example() -> Built:
    regressor, frame = _regressor()
    return Built(regressor, {"input_example": (frame.head(3), {"output_margin": True})})


CASES = tuple(case.cases)  # type: ignore[attr-defined]
