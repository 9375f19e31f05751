"""CatBoost cases: the models MLflow's catboost tests log, logged with plain ``mlflow.catboost.log_model``.

There is no mlflow_triton catboost wrapper: each case is logged as its test logs it and brought in with
``mlflow_triton.add_repository`` (docs/existing-models.md). The ``cb_model`` fixture is three models (``CatBoost``,
``CatBoostClassifier``, ``CatBoostRegressor``, 10 iterations on iris' first two features), ``reg_model`` the
regressor; where the test logs without an ``input_example``, the case gives three rows of the fixture's inference
frame, and says so; the case with a signature and no example shows the refusal.
"""

from __future__ import annotations

from .case import CATBOOST_EXPORT, Built, case_table

case = case_table("catboost", CATBOOST_EXPORT)
EXAMPLE_NOTE = "the test logs without input_example: 3 rows of its inference frame are the example"
#: The test's ``MODEL_PARAMS``.
MODEL_PARAMS = {"allow_writing_files": False, "iterations": 10}


def _iris():
    """The test's ``get_iris()``: iris' first two features as a frame, and the target as a series."""
    import pandas as pd
    from sklearn import datasets

    iris = datasets.load_iris()
    return pd.DataFrame(iris.data[:, :2], columns=iris.feature_names[:2]), pd.Series(iris.target)


def _fitted(kind: str):
    """One ``cb_model`` fixture model (``CatBoost``, ``CatBoostClassifier`` or ``CatBoostRegressor``) and its frame."""
    import catboost as cb

    frame, target = _iris()
    model = cb.CatBoost(MODEL_PARAMS) if kind == "CatBoost" else getattr(cb, kind)(**MODEL_PARAMS)
    return model.fit(frame, target, verbose=False), frame  # verbose: quiet logs, the same model


def _reg_model_signature():
    """The test's ``get_reg_model_signature()``."""
    from mlflow.models import ModelSignature
    from mlflow.types import DataType
    from mlflow.types.schema import ColSpec, Schema

    return ModelSignature(
        inputs=Schema(
            [
                ColSpec(name="sepal length (cm)", type=DataType.double),
                ColSpec(name="sepal width (cm)", type=DataType.double),
            ]
        ),
        outputs=Schema([ColSpec(type=DataType.double)]),
    )


def _save_load(kind: str):
    def build() -> Built:
        model, frame = _fitted(kind)
        return Built(model, {"input_example": frame.head(3)})

    return build


for _kind, _id in (("CatBoost", "catboost"), ("CatBoostClassifier", "classifier"), ("CatBoostRegressor", "regressor")):
    case(
        f"{_id}-save-load", "test_model_save_load", note=f"the {_kind} fixture; {EXAMPLE_NOTE}", route="add-repository"
    )(_save_load(_kind))


@case(
    "ranker",
    "test_log_catboost_ranker",
    note="CatBoostRanker with the test's dummy group_id; " + EXAMPLE_NOTE,
    route="add-repository",
)
def ranker() -> Built:
    import catboost as cb
    import numpy as np

    frame, target = _iris()
    group_id = np.arange(len(frame)) % 3
    group_id.sort()
    model = cb.CatBoostRanker(**MODEL_PARAMS, subsample=1.0)
    model.fit(frame, target, group_id=group_id, verbose=False)
    return Built(model, {"input_example": frame.head(3)})


@case("regressor-signature-example", "test_signature_and_examples_are_saved_correctly", route="add-repository")
def regressor_signature_example() -> Built:
    model, frame = _fitted("CatBoostRegressor")
    return Built(model, {"signature": _reg_model_signature(), "input_example": frame.head(3)})


@case(
    "regressor-signature-no-example",
    "test_signature_and_examples_are_saved_correctly",
    note="the signature without an example: nothing to predict",
    route="add-repository",
)
def regressor_signature_no_example() -> Built:
    model, _ = _fitted("CatBoostRegressor")
    return Built(model, {"signature": _reg_model_signature()})


@case(
    "regressor-pyfunc-serve",
    "test_pyfunc_serve_and_score",
    note="the whole inference frame (150 rows) is the example",
    route="add-repository",
)
def regressor_pyfunc_serve() -> Built:
    model, frame = _fitted("CatBoostRegressor")
    return Built(model, {"input_example": frame})


@case(
    "classifier-signature-inference",
    "test_model_log_with_signature_inference",
    note="the CatBoostClassifier fixture (its prediction: one int64 column of labels)",
    route="add-repository",
)
def classifier_signature_inference() -> Built:
    model, frame = _fitted("CatBoostClassifier")
    return Built(model, {"input_example": frame.head(3)})


@case(
    "regressor-json-format",
    "test_log_model_logs_save_format",
    note="format='json' (one of the formats CatBoost loads back); " + EXAMPLE_NOTE,
    route="add-repository",
)
def regressor_json_format() -> Built:
    model, frame = _fitted("CatBoostRegressor")
    return Built(model, {"format": "json", "input_example": frame.head(3)})


@case(
    "classifier-metadata",
    "test_model_log_with_metadata",
    note="the CatBoostClassifier fixture; " + EXAMPLE_NOTE,
    route="add-repository",
)
def classifier_metadata() -> Built:
    model, frame = _fitted("CatBoostClassifier")
    return Built(model, {"metadata": {"metadata_key": "metadata_value"}, "input_example": frame.head(3)})


@case(
    "catboost-registered-conda-env",
    "test_log_model_calls_register_model",
    note="the CatBoost fixture, conda_env naming catboost, registered as registered_model; " + EXAMPLE_NOTE,
    route="add-repository",
)
def catboost_registered_conda_env() -> Built:
    from mlflow.utils.environment import _mlflow_conda_env

    model, frame = _fitted("CatBoost")
    conda_env = _mlflow_conda_env(additional_pip_deps=["catboost"])
    return Built(
        model,
        {"conda_env": conda_env, "registered_model_name": "registered_model", "input_example": frame.head(3)},
    )


CASES = tuple(case.cases)  # type: ignore[attr-defined]
