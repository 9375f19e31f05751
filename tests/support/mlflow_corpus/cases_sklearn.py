"""scikit-learn cases: models that MLflow's sklearn and input-example tests log, rebuilt on iris / small data.

Where MLflow's test logs without an ``input_example`` (the wrapper requires one: it is the request it ships and
proves), the case passes the test's own inference data (a few rows) as the example, and says so in its note.
Custom classes are defined inside the builders, as MLflow's tests define them inside test modules: cloudpickle
stores them by value.

MLflow 3.17 saves with ``serialization_format="skops"`` by default and refuses a model whose skops file holds
types it does not trust (``KDTree``, ``Tree``, ...). A case saved with skops (by default or by name) does what
MLflow's message tells a user: it passes ``skops_trusted_types`` (the types ``skops.io.get_untrusted_types``
reports), or, for a class defined in the test itself (which skops cannot load), ``serialization_format=
"cloudpickle"`` (:func:`as_mlflow_user`). ``knn-save-load`` is left exactly as the test logs it (``raw``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .case import INPUT_EXAMPLES, SKLEARN_AUTOLOG, SKLEARN_EXPORT, Built, case_table


def as_mlflow_user(built: Built) -> Built:
    """A case saved with skops (MLflow's default): the types MLflow's refusal asks to trust, or cloudpickle."""
    if built.log_kwargs.get("serialization_format", "skops") != "skops" or "skops_trusted_types" in built.log_kwargs:
        return built
    import skops.io

    untrusted = skops.io.get_untrusted_types(data=skops.io.dumps(built.model))
    if not untrusted:
        return built
    if any(name.startswith("tests.") for name in untrusted):
        return Built(built.model, {**built.log_kwargs, "serialization_format": "cloudpickle"})
    return Built(built.model, {**built.log_kwargs, "skops_trusted_types": untrusted})


case = case_table("sklearn", SKLEARN_EXPORT, as_mlflow_user)
EXAMPLE_NOTE = "the test logs without input_example: its inference data (3 rows) is the example"


def _iris_two_features():
    from sklearn import datasets

    iris = datasets.load_iris()
    return iris.data[:, :2], iris.target


def _iris_frame():
    from sklearn import datasets

    features, target = datasets.load_iris(return_X_y=True, as_frame=True)
    return features, target


def _knn():
    from sklearn.neighbors import KNeighborsClassifier

    features, target = _iris_two_features()
    return KNeighborsClassifier().fit(features, target), features


def _logreg():
    from sklearn.linear_model import LogisticRegression

    features, target = _iris_two_features()
    return LogisticRegression(max_iter=200).fit(features, target), features


@case("knn-save-load", "test_model_save_load", note=EXAMPLE_NOTE + "; MLflow 3.17's default format (skops)", raw=True)
def knn_save_load() -> Built:
    model, features = _knn()
    return Built(model, {"input_example": features[:3]})


@case("knn-signature-and-example", "test_signature_and_examples_are_saved_correctly")
def knn_signature_and_example() -> Built:
    from mlflow.models import infer_signature

    model, features = _knn()
    return Built(model, {"input_example": features[:3], "signature": infer_signature(features)})


@case("logreg-log", "test_model_log", note=EXAMPLE_NOTE)
def logreg_log() -> Built:
    model, features = _logreg()
    return Built(model, {"input_example": features[:3]})


@case("logreg-registered", "test_log_model_calls_register_model", note=EXAMPLE_NOTE)
def logreg_registered() -> Built:
    model, features = _logreg()
    return Built(model, {"input_example": features[:3], "registered_model_name": "AdsModel1"})


@case("custom-transformer-cloudpickle", "test_custom_transformer_can_be_saved_and_loaded_with_cloudpickle_format")
def custom_transformer_cloudpickle() -> Built:
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import FunctionTransformer

    knn, features = _knn()

    def transform(vec):
        return vec + 1

    pipeline = Pipeline([("custom_transformer", FunctionTransformer(transform, validate=True)), ("knn", knn)])
    return Built(pipeline, {"input_example": features[:3], "serialization_format": "cloudpickle"})


@case(
    "knn-pickle-format",
    "test_model_log_without_specified_conda_env_uses_default_env_with_expected_dependencies",
    note=EXAMPLE_NOTE,
)
def knn_pickle_format() -> Built:
    model, features = _knn()
    return Built(model, {"input_example": features[:3], "serialization_format": "pickle"})


@case("knn-skops-format", "test_model_save_without_cloudpickle_format_does_not_add_cloudpickle_to_conda_environment")
def knn_skops_format() -> Built:
    model, features = _knn()
    return Built(model, {"input_example": features[:3], "serialization_format": "skops"})


@case("knn-cloudpickle-default", "test_model_log_uses_cloudpickle_serialization_format_by_default", note=EXAMPLE_NOTE)
def knn_cloudpickle_default() -> Built:
    model, features = _knn()
    return Built(model, {"input_example": features[:3], "serialization_format": "cloudpickle"})


@case("no-predict-agglomerative", "test_add_pyfunc_flavor_only_when_model_defines_predict")
def no_predict_agglomerative() -> Built:
    from sklearn.cluster import AgglomerativeClustering

    features, _ = _iris_two_features()
    return Built(AgglomerativeClustering().fit(features), {"input_example": features[:3]})


@case("knn-frame-serve-and-score", "test_pyfunc_serve_and_score")
def knn_frame_serve_and_score() -> Built:
    from sklearn.neighbors import KNeighborsClassifier

    features, target = _iris_frame()
    model = KNeighborsClassifier().fit(features, target)
    return Built(model, {"input_example": features.head(3)})


@case("knn-metadata", "test_model_log_with_metadata", note=EXAMPLE_NOTE)
def knn_metadata() -> Built:
    model, features = _knn()
    return Built(model, {"input_example": features[:3], "metadata": {"metadata_key": "metadata_value"}})


@case("knn-signature-inference", "test_model_log_with_signature_inference")
def knn_signature_inference() -> Built:
    from sklearn.neighbors import KNeighborsClassifier

    features, target = _iris_frame()
    return Built(KNeighborsClassifier().fit(features, target), {"input_example": features.iloc[[0]]})


@case(
    "logreg-predict-proba",
    "test_log_model_with_custom_pyfunc_predict_fn[predict_proba]",
    note="LogisticRegression (the test: GaussianNB), pyfunc_predict_fn='predict_proba'",
)
def logreg_predict_proba() -> Built:
    model, features = _logreg()
    return Built(model, {"input_example": features[:3], "pyfunc_predict_fn": "predict_proba"})


def _gaussian_nb():
    """The test's ``GaussianNB`` on iris' first two features (three classes)."""
    from sklearn.naive_bayes import GaussianNB

    features, target = _iris_two_features()
    return GaussianNB().fit(features, target), features


@case(
    "gaussian-nb-predict-proba-add",
    "test_log_model_with_custom_pyfunc_predict_fn[predict_proba]",
    note="pyfunc_predict_fn='predict_proba', input_example 3 rows: MLflow infers the output schema from "
    "predict() (one long column), predict_proba answers 3 columns",
    route="add-repository",
)
def gaussian_nb_predict_proba_add() -> Built:
    model, features = _gaussian_nb()
    return Built(model, {"input_example": features[:3], "pyfunc_predict_fn": "predict_proba"})


@case(
    "gaussian-nb-predict-log-proba-add",
    "test_log_model_with_custom_pyfunc_predict_fn[predict_log_proba]",
    note="pyfunc_predict_fn='predict_log_proba', input_example 3 rows (output schema inferred from predict())",
    route="add-repository",
)
def gaussian_nb_predict_log_proba_add() -> Built:
    model, features = _gaussian_nb()
    return Built(model, {"input_example": features[:3], "pyfunc_predict_fn": "predict_log_proba"})


@case(
    "logreg-predict-log-proba",
    "test_log_model_with_custom_pyfunc_predict_fn[predict_log_proba]",
    note="LogisticRegression (the test: GaussianNB), pyfunc_predict_fn='predict_log_proba'",
)
def logreg_predict_log_proba() -> Built:
    model, features = _logreg()
    return Built(model, {"input_example": features[:3], "pyfunc_predict_fn": "predict_log_proba"})


# --- tests/sklearn/test_sklearn_autolog.py: the estimators autologging tests fit, logged explicitly -----------
autolog = case_table("sklearn", SKLEARN_AUTOLOG, as_mlflow_user)
AUTOLOG_NOTE = "the fitted estimator, logged with the wrapper instead of autolog"


@autolog("autolog-estimator-svc", "test_autolog_emits_warning_message_when_metric_fails", note=AUTOLOG_NOTE)
def autolog_estimator_svc() -> Built:
    from sklearn.svm import SVC

    features, target = _iris_frame()
    return Built(SVC().fit(features, target), {"input_example": features.head(3)})


@autolog("autolog-binary-classifier", "test_classifier_binary", note=AUTOLOG_NOTE)
def autolog_binary_classifier() -> Built:
    from sklearn.svm import SVC

    features, target = _iris_frame()
    keep = target < 2
    return Built(SVC(random_state=0).fit(features[keep], target[keep]), {"input_example": features.head(3)})


@autolog("autolog-multiclass-proba", "test_classifier_multi_class", note="pyfunc_predict_fn='predict_proba'")
def autolog_multiclass_proba() -> Built:
    from sklearn.linear_model import LogisticRegression

    features, target = _iris_frame()
    model = LogisticRegression(max_iter=300).fit(features, target)
    return Built(model, {"input_example": features.head(3), "pyfunc_predict_fn": "predict_proba"})


@autolog("autolog-regressor", "test_regressor", note=AUTOLOG_NOTE)
def autolog_regressor() -> Built:
    from sklearn.linear_model import LinearRegression

    features, target = _iris_frame()
    return Built(LinearRegression().fit(features, target), {"input_example": features.head(3)})


@autolog("autolog-meta-estimator", "test_meta_estimator", note="Pipeline(StandardScaler, LinearRegression)")
def autolog_meta_estimator() -> Built:
    from sklearn.linear_model import LinearRegression
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import StandardScaler

    features, target = _iris_frame()
    pipeline = Pipeline([("scaler", StandardScaler()), ("lr", LinearRegression())]).fit(features, target)
    return Built(pipeline, {"input_example": features.head(3)})


@autolog("autolog-grid-search", "test_parameter_search_estimators_produce_expected_outputs", note="GridSearchCV(SVC)")
def autolog_grid_search() -> Built:
    from sklearn.model_selection import GridSearchCV
    from sklearn.svm import SVC

    features, target = _iris_frame()
    search = GridSearchCV(SVC(), {"kernel": ("linear", "rbf"), "C": [1, 5]}, cv=3).fit(features, target)
    return Built(search, {"input_example": features.head(3)})


@autolog("autolog-signature-and-example", "test_autolog_logs_signature_and_input_example", note=AUTOLOG_NOTE)
def autolog_signature_and_example() -> Built:
    from sklearn.linear_model import LinearRegression

    features, target = _iris_frame()
    return Built(LinearRegression().fit(features, target), {"input_example": features.head(5)})


@autolog("autolog-kmeans", "test_estimator[fit]", note="KMeans (predict)")
def autolog_kmeans() -> Built:
    from sklearn.cluster import KMeans

    features, _ = _iris_frame()
    return Built(KMeans(n_clusters=3, n_init=2, random_state=0).fit(features), {"input_example": features.head(3)})


@autolog(
    "autolog-random-forest-skops",
    "test_fit_takes_Xy_as_keyword_arguments[both_kwarg]",
    note="RandomForest (the test: KMeans) fitted with X=, y=, saved with skops",
)
def autolog_random_forest_skops() -> Built:
    from sklearn.ensemble import RandomForestClassifier

    features, target = _iris_frame()
    model = RandomForestClassifier(n_estimators=5, random_state=0).fit(X=features, y=target)
    trusted = ["sklearn.tree._tree.Tree", "numpy.dtype"]
    return Built(
        model, {"input_example": features.head(3), "serialization_format": "skops", "skops_trusted_types": trusted}
    )


@autolog(
    "autolog-post-training-proba",
    "test_post_training_metric_autologging_for_predict_prob",
    note="LogisticRegression, pyfunc_predict_fn='predict_proba'",
)
def autolog_post_training_proba() -> Built:
    from sklearn.linear_model import LogisticRegression

    features, target = _iris_frame()
    model = LogisticRegression(max_iter=300).fit(features.to_numpy(), target.to_numpy())
    return Built(model, {"input_example": features.to_numpy()[:3], "pyfunc_predict_fn": "predict_proba"})


# --- tests/models/test_model_input_examples.py: the examples MLflow accepts, on small sklearn models ----------
examples = case_table("sklearn", INPUT_EXAMPLES, as_mlflow_user)


def _dummy_model(output_shape):
    from sklearn.base import BaseEstimator, ClassifierMixin

    class DummySklearnModel(BaseEstimator, ClassifierMixin):
        def __init__(self, output_shape=(1,)):
            self.output_shape = output_shape

        def fit(self, X, y=None):
            return self

        def predict(self, X):
            return np.zeros((X.shape[0], *self.output_shape), dtype=np.dtype("int64"))

    return DummySklearnModel(output_shape=output_shape)


@examples("tabular-column-output", "test_infer_signature_with_input_example[True-output_shape0-expected_signature0]")
def tabular_column_output() -> Built:
    return Built(_dummy_model(()), {"input_example": pd.DataFrame({"feature": ["value"]})})


@examples("tabular-tensor-output", "test_infer_signature_with_input_example[True-output_shape1-expected_signature1]")
def tabular_tensor_output() -> Built:
    return Built(_dummy_model((2,)), {"input_example": pd.DataFrame({"feature": ["value"]})})


@examples("tensor-input", "test_infer_signature_with_input_example[False-output_shape2-expected_signature2]")
def tensor_input() -> Built:
    return Built(_dummy_model(()), {"input_example": np.array([[1]])})


@examples("signature-disabled", "test_infer_signature_from_example_can_be_disabled")
def signature_disabled() -> Built:
    return Built(_dummy_model(()), {"input_example": np.array([[1]]), "signature": False})


@examples("predict-fails", "test_infer_signature_raises_if_predict_on_input_example_fails")
def predict_fails() -> Built:
    from sklearn.base import BaseEstimator, ClassifierMixin

    class ErrorModel(BaseEstimator, ClassifierMixin):
        def fit(self, X, y=None):
            return self

        def predict(self, X):
            raise Exception("oh no!")

    return Built(ErrorModel(), {"input_example": np.array([[1]])})


def _iris_knn():
    from sklearn.neighbors import KNeighborsClassifier

    features, target = _iris_frame()
    return KNeighborsClassifier().fit(features, target)


_IRIS_ROW = {"sepal length (cm)": 5.1, "sepal width (cm)": 3.5, "petal length (cm)": 1.4, "petal width (cm)": 0.2}


@examples("multi-column-dict-of-scalars", "test_infer_signature_on_multi_column_input_examples[input_example0]")
def multi_column_dict_of_scalars() -> Built:
    return Built(_iris_knn(), {"input_example": dict(_IRIS_ROW)})


@examples("multi-column-unnamed-frame", "test_infer_signature_on_multi_column_input_examples[input_example1]")
def multi_column_unnamed_frame() -> Built:
    return Built(_iris_knn(), {"input_example": pd.DataFrame([[5.1, 3.5, 1.4, 0.2]])})


@examples("multi-column-named-frame", "test_infer_signature_on_multi_column_input_examples[input_example2]")
def multi_column_named_frame() -> Built:
    return Built(_iris_knn(), {"input_example": pd.DataFrame(_IRIS_ROW, index=[0])})


def _identity_model():
    from sklearn.base import BaseEstimator, ClassifierMixin

    class IdentitySklearnModel(BaseEstimator, ClassifierMixin):
        def fit(self, X, y=None):
            return self

        def predict(self, X):
            if isinstance(X, pd.DataFrame):
                return X
            raise Exception("Unsupported input type")

    return IdentitySklearnModel()


@examples("scalar-string", "test_infer_signature_on_scalar_input_examples[some string]")
def scalar_string() -> Built:
    return Built(_identity_model(), {"input_example": "some string"})


@examples("scalar-bytes", r"test_infer_signature_on_scalar_input_examples[\x01\x02\x03]")
def scalar_bytes() -> Built:
    return Built(_identity_model(), {"input_example": bytes([1, 2, 3])})


@examples("frame-with-nan", "test_input_examples_with_nan", note="df_with_nan's numeric columns on an identity model")
def frame_with_nan() -> Built:
    frame = pd.DataFrame(
        {
            "integer": np.array([1, 2, 3], np.int32),
            "float": np.array([np.nan, 2 * np.pi, 3 * np.pi], np.float32),
            "double": [np.pi, np.nan, 3 * np.pi],
            "string": ["a", "b", "c"],
        }
    )
    return Built(_identity_model(), {"input_example": frame})


@examples("frame-all-types", "test_input_examples", note="pandas_df_with_all_types on an identity model")
def frame_all_types() -> Built:
    frame = pd.DataFrame(
        {
            "boolean": [True, False, True],
            "integer": np.array([1, 2, 3], np.int32),
            "long": np.array([1, 2, 3], np.int64),
            "float": np.array([np.pi, 2 * np.pi, 3 * np.pi], np.float32),
            "double": [np.pi, 2 * np.pi, 3 * np.pi],
            "binary": [bytes([1, 2, 3]), bytes([4, 5, 6]), bytes([7, 8, 9])],
            "string": ["a", "b", "c"],
        }
    )
    return Built(_identity_model(), {"input_example": frame})


@examples("sparse-csr", "test_sparse_matrix_input_examples", note="csr_matrix example for a LogisticRegression")
def sparse_csr() -> Built:
    from scipy.sparse import csr_matrix
    from sklearn.linear_model import LogisticRegression

    features = np.arange(0, 12, 0.5).reshape(3, 8)
    model = LogisticRegression(max_iter=200).fit(features, [0, 1, 0])
    return Built(model, {"input_example": csr_matrix(features)})


@examples("sparse-csc", "test_sparse_matrix_input_examples", note="csc_matrix example for a LogisticRegression")
def sparse_csc() -> Built:
    from scipy.sparse import csc_matrix
    from sklearn.linear_model import LogisticRegression

    features = np.arange(0, 12, 0.5).reshape(3, 8)
    model = LogisticRegression(max_iter=200).fit(features, [0, 1, 0])
    return Built(model, {"input_example": csc_matrix(features)})


CASES = (*case.cases, *autolog.cases, *examples.cases)  # type: ignore[attr-defined]
