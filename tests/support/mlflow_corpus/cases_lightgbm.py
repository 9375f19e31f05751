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


def _signature():
    """The ``lgb_model_signature`` fixture."""
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
        outputs=Schema([TensorSpec(np.dtype("float64"), (-1, 3))]),
    )


@case(
    "classifier-save-load",
    "test_sklearn_model_save_load",
    note="the lgb_sklearn_model fixture (LGBMClassifier, 10 trees); " + EXAMPLE_NOTE,
    route="add-repository",
)
def classifier_save_load() -> Built:
    import lightgbm as lgb
    from sklearn import datasets

    _, frame = _booster()
    classifier = lgb.LGBMClassifier(n_estimators=10, verbose=-1).fit(frame, datasets.load_iris().target)
    return Built(classifier, {"input_example": frame.head(3)})


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


@case("booster-signature-inference", "test_model_log_with_signature_inference", route="add-repository")
def booster_signature_inference() -> Built:
    booster, frame = _booster()
    return Built(booster, {"input_example": frame.head(3)})


@case("booster-metadata", "test_model_log_with_metadata", note=EXAMPLE_NOTE, route="add-repository")
def booster_metadata() -> Built:
    booster, frame = _booster()
    return Built(booster, {"metadata": {"metadata_key": "metadata_value"}, "input_example": frame.head(3)})


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
    "booster-conda-env-xgboost",
    "test_model_log",
    note="conda_env naming xgboost, as the test's does (lightgbm then comes from nowhere); " + EXAMPLE_NOTE,
    route="add-repository",
)
def booster_conda_env_xgboost() -> Built:
    from mlflow.utils.environment import _mlflow_conda_env

    booster, frame = _booster()
    conda_env = _mlflow_conda_env(additional_pip_deps=["xgboost"])
    return Built(booster, {"conda_env": conda_env, "input_example": frame.head(3)})


CASES = tuple(case.cases)  # type: ignore[attr-defined]
