"""Custom pyfunc cases: the ``PythonModel``s with artifacts that MLflow's pyfunc tests log.

Each model is logged twice: with plain ``mlflow.pyfunc.log_model`` then brought in with
``mlflow_triton.add_repository`` (``-add``), and with ``mlflow_triton.pyfunc.log_model`` (``-wrapper``). As in
MLflow's test, the class and its predict function are defined inside the builder (cloudpickle stores them by
value) and the scikit-learn model they wrap is an artifact, read in ``load_context``. The test logs without an
``input_example``: the case gives three rows of its iris data, and says so. scikit-learn, which ``load_context``
imports, is named in ``extra_pip_requirements`` (the test names it in its conda environment).
"""

from __future__ import annotations

import tempfile

from .case import PYFUNC_CLASS_ARTIFACTS, Built, case_table

case = case_table("pyfunc", PYFUNC_CLASS_ARTIFACTS)
EXAMPLE_NOTE = "the test logs without input_example: 3 rows of its iris data are the example"


def _iris():
    from sklearn import datasets

    iris = datasets.load_iris()
    return iris.data[:, :2], iris.target


def _sklearn_artifact(estimator):
    """The estimator saved with ``mlflow.sklearn.save_model`` into a new directory (the ``sk_model`` artifact)."""
    import mlflow.sklearn

    path = tempfile.mkdtemp(prefix="corpus-sk-model-") + "/sk_model"
    mlflow.sklearn.save_model(estimator, path, serialization_format="cloudpickle")
    return path


def _custom_model(with_params=True):
    """``get_model_class()`` of MLflow's test: a PythonModel loading ``context.artifacts["sk_model"]``."""
    import mlflow

    class CustomSklearnModel(mlflow.pyfunc.PythonModel):
        def __init__(self, predict_fn):
            self.predict_fn = predict_fn

        def load_context(self, context):
            self.model = mlflow.sklearn.load_model(model_uri=context.artifacts["sk_model"])

        def predict(self, context, model_input, params=None):
            return self.predict_fn(self.model, model_input)

    class CustomSklearnModelWithoutParams(CustomSklearnModel):
        def predict(self, context, model_input):
            return self.predict_fn(self.model, model_input)

    def test_predict(sk_model, model_input):
        return sk_model.predict(model_input) * 2

    return (CustomSklearnModel if with_params else CustomSklearnModelWithoutParams)(test_predict)


def _requirements():
    import sklearn

    return [f"scikit-learn=={sklearn.__version__}"]


def _knn_model(**log_kwargs):
    from sklearn.neighbors import KNeighborsClassifier

    features, target = _iris()
    artifact = _sklearn_artifact(KNeighborsClassifier().fit(features, target))
    kwargs = {"artifacts": {"sk_model": artifact}, "extra_pip_requirements": _requirements()}
    return features, kwargs | log_kwargs


def _both_routes(case_id, test, builder, note=EXAMPLE_NOTE):
    case(f"{case_id}-add", test, note=note, route="add-repository")(builder)
    case(f"{case_id}-wrapper", test, note=note)(builder)


def knn_save_load() -> Built:
    features, kwargs = _knn_model()
    return Built(_custom_model(), {**kwargs, "input_example": features[:3]})


def knn_without_params() -> Built:
    features, kwargs = _knn_model()
    return Built(_custom_model(with_params=False), {**kwargs, "input_example": features[:3]})


def knn_signature_example() -> Built:
    from mlflow.models import infer_signature

    features, kwargs = _knn_model()
    _, target = _iris()
    return Built(
        _custom_model(), {**kwargs, "signature": infer_signature(features, target), "input_example": features[:3]}
    )


_both_routes("class-artifacts-knn", "test_model_save_load", knn_save_load)
_both_routes(
    "class-artifacts-without-params", "test_python_model_predict_compatible_without_params", knn_without_params
)
_both_routes(
    "class-artifacts-signature", "test_signature_and_examples_are_saved_correctly", knn_signature_example, note=""
)


@case(
    "class-artifacts-signature-no-example-add",
    "test_signature_and_examples_are_saved_correctly",
    note="the signature without an example: nothing to predict",
    route="add-repository",
)
def knn_signature_no_example() -> Built:
    from mlflow.models import infer_signature

    features, kwargs = _knn_model()
    _, target = _iris()
    return Built(_custom_model(), {**kwargs, "signature": infer_signature(features, target)})


CASES = tuple(case.cases)  # type: ignore[attr-defined]
