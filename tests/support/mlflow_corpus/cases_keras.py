"""Keras 3 cases on the torch backend: the models MLflow's Keras tests log (``tests/keras/``).

Logged with plain ``mlflow.keras.log_model`` and brought in with ``mlflow_triton.add_repository``. Keras runs on
the torch backend (``KERAS_BACKEND=torch``, set by the runner for the whole run and so for the serving process,
as MLflow's own Keras-on-torch CI job sets it): MLflow records the backend in the flavor but does not choose it when
it loads. Keras is not in CI's environment: ``make corpus`` installs it into ``.venv-corpus``; where it is not
importable the cases are *not built*. The tests log without an ``input_example``, and so do the cases (MLflow
3.17's Keras flavor cannot save one: ``save_model`` writes ``input_example.json`` before it creates the model
directory, FileNotFoundError): each case gives the input the test predicts (a few rows) to ``add_repository``, as a
user's ``mlflow-triton add-repository URI --input FILE``, and says so.
"""

from __future__ import annotations

import os

from .case import KERAS_INPUT_TYPES, KERAS_SAVE, Built, case_table

case = case_table("keras", KERAS_SAVE)
input_types_case = case_table("keras", KERAS_INPUT_TYPES)
EXAMPLE_NOTE = "logged without input_example, as the test logs it: {what} is add_repository's input_example"
#: The backend the runner sets (before Keras is first imported) for the run and the check it starts.
KERAS_BACKEND = ("KERAS_BACKEND", "torch")


def _keras():
    os.environ.setdefault(*KERAS_BACKEND)
    import keras

    keras.backend.clear_session()  # the tests' autouse conftest fixture
    return keras


def _image_model(keras):
    """``_get_keras_model()``: Input([28, 28, 3]), Flatten, Dense(2)."""
    keras.utils.set_random_seed(0)
    return keras.Sequential([keras.Input([28, 28, 3]), keras.layers.Flatten(), keras.layers.Dense(2)])


def _test_input(dtype="float64"):
    import numpy as np

    return np.random.default_rng(0).uniform(size=[2, 28, 28, 3]).astype(dtype)


@case(
    "non-export",
    "test_keras_save_model_non_export",
    note="compiled (Adam, sparse categorical cross-entropy), save_exported_model=False; "
    + EXAMPLE_NOTE.format(what="its test_input (2 images, float64)"),
    route="add-repository",
)
def non_export() -> Built:
    keras = _keras()
    model = _image_model(keras)
    model.compile(
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        optimizer=keras.optimizers.Adam(0.002),
        metrics=[keras.metrics.SparseCategoricalAccuracy()],
    )
    return Built(model, {"save_exported_model": False}, {"input_example": _test_input()})


@case(
    "signature-mixed-float16",
    "test_save_model_with_signature",
    note="the mixed_float16 dtype policy, signature get_model_signature(model) (float16 output); "
    + EXAMPLE_NOTE.format(what="its test_input (2 images, float32)"),
    route="add-repository",
)
def signature_mixed_float16() -> Built:
    keras = _keras()
    from mlflow.keras.utils import get_model_signature

    keras.mixed_precision.set_dtype_policy("mixed_float16")
    try:
        model = _image_model(keras)
        signature = get_model_signature(model)
    finally:
        keras.mixed_precision.set_dtype_policy("float32")
    return Built(model, {"signature": signature}, {"input_example": _test_input("float32")})


def _iris():
    import numpy as np
    import pandas as pd
    from sklearn import datasets

    iris = datasets.load_iris()
    data = pd.DataFrame(data=np.c_[iris["data"], iris["target"]], columns=iris["feature_names"] + ["target"])
    return data.drop("target", axis=1), data["target"]


@input_types_case(
    "single-tensor-input",
    "test_model_single_tensor_input",
    note="Sequential(Dense(3), Dense(1)) fitted one epoch on iris (Keras 3's layers for the test's tf.keras ones); "
    + EXAMPLE_NOTE.format(what="x.head(3), the frame it predicts"),
    route="add-repository",
)
def single_tensor_input() -> Built:
    keras = _keras()
    features, target = _iris()
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input([4]), keras.layers.Dense(3), keras.layers.Dense(1)])
    model.compile(loss="mean_squared_error", optimizer=keras.optimizers.SGD())
    model.fit(features.values, target.values, verbose=0)
    return Built(model, {}, {"input_example": features.head(3)})


@input_types_case(
    "multi-tensor-input",
    "test_model_multi_tensor_input",
    note="inputs a and b (2 features each), concatenated, Dense(3), Dense(1), fitted one epoch; "
    + EXAMPLE_NOTE.format(what="the dict {'a': ..., 'b': ...} it predicts (3 rows)"),
    route="add-repository",
)
def multi_tensor_input() -> Built:
    keras = _keras()
    features, target = _iris()
    keras.utils.set_random_seed(0)
    input_a = keras.Input(shape=(2,), name="a")
    input_b = keras.Input(shape=(2,), name="b")
    output = keras.layers.Dense(1)(keras.layers.Dense(3)(keras.layers.Concatenate()([input_a, input_b])))
    model = keras.Model(inputs=[input_a, input_b], outputs=output)
    model.compile(loss="mean_squared_error", optimizer=keras.optimizers.SGD())
    model.fit([features.values[:, :2], features.values[:, -2:]], target.values, verbose=0)
    example = {"a": features.values[:3, :2], "b": features.values[:3, -2:]}
    return Built(model, {}, {"input_example": example})


CASES = (*case.cases, *input_types_case.cases)  # type: ignore[attr-defined]
