"""Custom pyfunc cases: the custom models MLflow's pyfunc tests log.

* ``PythonModel``s with artifacts (``tests/pyfunc/test_model_export_with_class_and_artifacts.py``): as in MLflow's
  test, the class and its predict function are defined inside the builder (cloudpickle stores them by value) and
  the scikit-learn model they wrap is an artifact, read in ``load_context``; scikit-learn, which ``load_context``
  imports, is named in ``extra_pip_requirements`` (the test names it in its conda environment);
* models from code (the same file's ``test_pyfunc_as_code_*`` and ``test_predict_as_code*``): the files of
  ``model_code/``, standing in for MLflow's ``tests/pyfunc/sample_code/``;
* a ``loader_module`` with its ``data_path`` (``tests/pyfunc/test_model_export_with_loader_module_and_data_path.py``);
* ``PythonModel``s taking params (``tests/pyfunc/test_pyfunc_schema_enforcement.py`` and the class-and-artifacts
  file): an ``(input, params)`` example, a type-hinted ``predict(..., params=None)``.

Each model is logged twice: with plain ``mlflow.pyfunc.log_model`` then brought in with
``mlflow_triton.add_repository`` (``-add``), and with ``mlflow_triton.pyfunc.log_model`` (``-wrapper``). Where the
test logs without an ``input_example``, the case gives the input the test then predicts, and says so.
"""

from __future__ import annotations

import pathlib
import pickle
import sys
import tempfile

from .case import PYFUNC_CLASS_ARTIFACTS, PYFUNC_LOADER_MODULE, PYFUNC_SCHEMA_ENFORCEMENT, Built, case_table

case = case_table("pyfunc", PYFUNC_CLASS_ARTIFACTS)
loader_case = case_table("pyfunc", PYFUNC_LOADER_MODULE)
params_case = case_table("pyfunc", PYFUNC_SCHEMA_ENFORCEMENT)
#: The files logged as models from code, the helper one imports, and the loader module.
MODEL_CODE = pathlib.Path(__file__).resolve().parent / "model_code"
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


def _both_routes(case_id, test, builder, note=EXAMPLE_NOTE, table=case):
    table(f"{case_id}-add", test, note=note, route="add-repository")(builder)
    table(f"{case_id}-wrapper", test, note=note)(builder)


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


@case(
    "class-artifacts-registered-add",
    "test_log_model_calls_register_model",
    note="registered as AdsModel1; " + EXAMPLE_NOTE,
    route="add-repository",
)
def knn_registered() -> Built:
    features, kwargs = _knn_model()
    return Built(_custom_model(), {**kwargs, "registered_model_name": "AdsModel1", "input_example": features[:3]})


def knn_logged_artifact() -> Built:
    """The ``sk_model`` artifact is the URI of an sklearn model logged first (the test's ``sklearn_model_uri``)."""
    import mlflow.sklearn
    from sklearn.neighbors import KNeighborsClassifier

    features, target = _iris()
    logged = mlflow.sklearn.log_model(
        KNeighborsClassifier().fit(features, target), name="sk_model", serialization_format="cloudpickle"
    )
    kwargs = {"artifacts": {"sk_model": logged.model_uri}, "extra_pip_requirements": _requirements()}
    return Built(_custom_model(), {**kwargs, "input_example": features[:3]})


_both_routes(
    "class-artifacts-logged-uri",
    "test_model_log_load",
    knn_logged_artifact,
    note="the sk_model artifact is the model URI of an sklearn model logged first (cloudpickle, as the "
    "scikit-learn cases do for MLflow 3.17's skops default); " + EXAMPLE_NOTE,
)


def _from_code(file: str, example, **log_kwargs):
    def build() -> Built:
        return Built(str(MODEL_CODE / file), {"input_example": example, **log_kwargs})

    return build


FROM_CODE_NOTE = "model_code/{file} stands in for MLflow's sample_code/{sample}"
_both_routes(
    "from-code-python-model",
    "test_pyfunc_as_code_log_and_load",
    _from_code("echo_model.py", "asdf"),
    note=FROM_CODE_NOTE.format(file="echo_model.py", sample="python_model.py")
    + "; the test logs without input_example: its input 'asdf' is the example",
)
_both_routes(
    "from-code-function",
    "test_predict_as_code",
    _from_code("identity_function.py", ["string"]),
    note=FROM_CODE_NOTE.format(file="identity_function.py", sample="func_code.py"),
)
_both_routes(
    "from-code-function-type-hint",
    "test_predict_as_code_with_type_hint",
    _from_code("identity_function_type_hint.py", ["string"]),
    note=FROM_CODE_NOTE.format(file="identity_function_type_hint.py", sample="func_code_with_type_hint.py"),
)
_both_routes(
    "from-code-dict-config",
    "test_pyfunc_as_code_with_dict_config",
    _from_code("config_model.py", "input", model_config={"timeout": 400}),
    note=FROM_CODE_NOTE.format(file="config_model.py", sample="python_model_with_config.py")
    + ", model_config={'timeout': 400}; the test logs without input_example: its input 'input' is the example",
)
_both_routes(
    "from-code-code-paths",
    "test_pyfunc_as_code_log_and_load_with_code_paths",
    _from_code("utils_model.py", "asdf", code_paths=[str(MODEL_CODE / "corpus_model_utils.py")]),
    note=FROM_CODE_NOTE.format(file="utils_model.py", sample="python_model_with_utils.py")
    + ", code_paths=[its helper]; the test logs without input_example: its input 'asdf' is the example",
)


def _loader_model(**log_kwargs):
    """The test's KNN pickled as ``data_path``, loaded by ``model_code/corpus_knn_loader.py`` (on ``sys.path``).

    MLflow's test imports its loader module (the test module itself) where it logs; the case does so by putting
    the folder on ``sys.path``, and gives the file in ``code_paths``, as the test gives its ``__file__``.
    """
    from sklearn.neighbors import KNeighborsClassifier

    if str(MODEL_CODE) not in sys.path:
        sys.path.insert(0, str(MODEL_CODE))
    features, target = _iris()
    data_path = tempfile.mkdtemp(prefix="corpus-knn-pickle-") + "/skmodel"
    with open(data_path, "wb") as f:
        pickle.dump(KNeighborsClassifier().fit(features, target), f)
    kwargs = {
        "data_path": data_path,
        "loader_module": "corpus_knn_loader",
        "code_paths": [str(MODEL_CODE / "corpus_knn_loader.py")],
        "extra_pip_requirements": _requirements(),
    }
    return features, target, kwargs | log_kwargs


def loader_knn() -> Built:
    features, _, kwargs = _loader_model()
    return Built(None, {**kwargs, "input_example": features[:3]})


def loader_knn_signature() -> Built:
    from mlflow.models import infer_signature

    features, target, kwargs = _loader_model()
    return Built(None, {**kwargs, "signature": infer_signature(features, target), "input_example": features[:3]})


LOADER_NOTE = "loader_module model_code/corpus_knn_loader.py, data_path its pickled KNN, scikit-learn named in "
_both_routes(
    "loader-module-knn",
    "test_model_save_load",
    loader_knn,
    note=LOADER_NOTE + "extra_pip_requirements; " + EXAMPLE_NOTE,
    table=loader_case,
)
_both_routes(
    "loader-module-signature",
    "test_signature_and_examples_are_saved_correctly",
    loader_knn_signature,
    note=LOADER_NOTE + "extra_pip_requirements; infer_signature(x, y) and x[:3]",
    table=loader_case,
)


@loader_case(
    "loader-module-signature-no-example-add",
    "test_signature_and_examples_are_saved_correctly",
    note="the signature without an example: nothing to predict",
    route="add-repository",
)
def loader_knn_signature_no_example() -> Built:
    from mlflow.models import infer_signature

    features, target, kwargs = _loader_model()
    return Built(None, {**kwargs, "signature": infer_signature(features, target)})


def _sample_params_basic():
    """The ``sample_params_basic`` fixture."""
    import numpy as np

    return {
        "str_param": "str_a",
        "int_param": np.int32(1),
        "bool_param": True,
        "double_param": 1.0,
        "float_param": np.float32(0.1),
        "long_param": 100,
        "datetime_param": np.datetime64("2023-06-26 00:00:00"),
        "str_list": ["a", "b", "c"],
        "bool_list": [True, False],
        "double_array": np.array([1.0, 2.0]),
    }


def _identity_with_params():
    """The test's ``MyModel``: ``predict(self, context, model_input, params=None)`` returns its input."""
    import mlflow

    class MyModel(mlflow.pyfunc.PythonModel):
        def predict(self, context, model_input, params=None):
            return model_input

    return MyModel()


def params_strings() -> Built:
    return Built(_identity_with_params(), {"input_example": (["input1", "input2", "input3"], _sample_params_basic())})


def params_frame() -> Built:
    import pandas as pd

    frame = pd.DataFrame({"a": ["a", "b", "c"], "b": "b"})
    return Built(_identity_with_params(), {"input_example": (frame, _sample_params_basic())})


PARAMS_NOTE = "example ({input}, sample_params_basic): ten params of every scalar type, a datetime and lists"
_both_routes(
    "params-basic-strings",
    "test_pyfunc_model_input_example_with_params",
    params_strings,
    note=PARAMS_NOTE.format(input="['input1', 'input2', 'input3']"),
    table=params_case,
)
_both_routes(
    "params-basic-frame",
    "test_pyfunc_model_input_example_with_params",
    params_frame,
    note=PARAMS_NOTE.format(input="a two-column string frame"),
    table=params_case,
)


def annotated_with_params() -> Built:
    """The test module's ``AnnotatedPythonModel``: ``predict(context, model_input: list[str], params=None)``."""
    import mlflow

    class AnnotatedPythonModel(mlflow.pyfunc.PythonModel):
        def predict(self, context, model_input: list[str], params=None) -> list[str]:
            assert isinstance(model_input, list)
            assert all(isinstance(x, str) for x in model_input)
            return model_input

    return Built(AnnotatedPythonModel(), {"input_example": ["a", "b"]})


_both_routes(
    "params-type-hints",
    "test_python_model_predict_with_params",
    annotated_with_params,
    note="the test logs without input_example (the signature comes from the type hints, without params): its "
    "input ['a', 'b'] is the example",
)


CASES = (*case.cases, *loader_case.cases, *params_case.cases)  # type: ignore[attr-defined]
