"""The ready-to-send request of a saved sklearn model: request.json, or request.bin + request.headers.

A client (tritonclient's own decoders) must read the shipped request back to
exactly the example values, NaN and trailing NUL bytes included, and the
generated model.py must answer it with the model's own prediction.
"""

import json

import numpy as np
import pandas as pd
import pytest
from mlflow.models import ModelSignature
from mlflow.types import ColSpec, Schema, TensorSpec

from mlflow_triton import sklearn
from tests.unit.conftest import read_headers_file

# SimpleImputer pickles a numpy dtype, which skops only loads when trusted.
TRUSTED_TYPES = ["numpy.dtype"]
SIGNATURE = ModelSignature(
    inputs=Schema(
        [ColSpec("double", "age"), ColSpec("string", "city"), ColSpec("long", "visits"), ColSpec("binary", "token")]
    ),
    outputs=Schema([TensorSpec(np.dtype("float64"), (-1, 2))]),
)


@pytest.fixture(scope="session")
def robust_frame(training_frame):
    """The training frame plus a binary column whose values end in NUL bytes."""
    tokens = [b"\x00\xffa", b"b\x00", b"\x00\xffa", b"c", b"b\x00", b"c", b"\x00\xffa", b"c"]
    return training_frame.assign(token=tokens)


@pytest.fixture(scope="session")
def robust_pipeline(robust_frame):
    """A Pipeline that predicts with missing numbers and raw bytes: imputer, scaler, one-hot encoders."""
    from sklearn.compose import ColumnTransformer
    from sklearn.impute import SimpleImputer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import Pipeline, make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    preprocess = ColumnTransformer(
        [
            ("numeric", make_pipeline(SimpleImputer(), StandardScaler()), ["age", "visits"]),
            ("text", OneHotEncoder(handle_unknown="ignore"), ["city"]),
            ("bytes", OneHotEncoder(handle_unknown="ignore"), ["token"]),
        ]
    )
    pipeline = Pipeline([("preprocess", preprocess), ("classify", LogisticRegression())])
    return pipeline.fit(robust_frame, [0, 1, 0, 1, 1, 0, 1, 0])


def _save(pipeline, path, example, **options):
    sklearn.save_model(
        pipeline,
        path,
        input_example=example,
        pyfunc_predict_fn="predict_proba",
        skops_trusted_types=TRUSTED_TYPES,
        **options,
    )
    return path / "model_repository" / "model"


def _assert_binary_request_matches(prefix, arrays, example):
    assert [(i["name"], i["datatype"], i["shape"]) for i in prefix["inputs"]] == [
        ("age", "FP64", [len(example)]),
        ("city", "BYTES", [len(example)]),
        ("visits", "INT64", [len(example)]),
        ("token", "BYTES", [len(example)]),
    ]
    assert prefix["outputs"] == [{"name": "output_0", "parameters": {"binary_data": True}}]
    np.testing.assert_array_equal(arrays["age"], example["age"].to_numpy())
    assert arrays["city"].tolist() == [city.encode("utf-8") for city in example["city"]]
    np.testing.assert_array_equal(arrays["visits"], example["visits"].to_numpy())
    assert arrays["token"].tolist() == example["token"].tolist()


def test_save_model_ships_a_binary_request_that_tritonclient_reads_back_when_the_example_holds_nan(
    tmp_path, robust_pipeline, robust_frame, read_request
):
    example = robust_frame.iloc[:3].assign(age=[np.nan, 35.5, np.nan])

    repository = _save(robust_pipeline, tmp_path / "model", example, signature=SIGNATURE)

    prefix, arrays = read_request(repository)
    assert sorted(p.name for p in repository.glob("request*")) == ["request.bin", "request.headers"]
    assert np.isnan(arrays["age"]).tolist() == [True, False, True]
    _assert_binary_request_matches(prefix, arrays, example)


def test_save_model_ships_a_binary_request_when_a_column_holds_bytes(
    tmp_path, robust_pipeline, robust_frame, read_request
):
    example = robust_frame.iloc[:3]

    repository = _save(robust_pipeline, tmp_path / "model", example)

    prefix, arrays = read_request(repository)
    assert sorted(p.name for p in repository.glob("request*")) == ["request.bin", "request.headers"]
    _assert_binary_request_matches(prefix, arrays, example)


def test_save_model_declares_octet_stream_and_the_json_prefix_length_when_the_request_is_binary(
    tmp_path, robust_pipeline, robust_frame
):
    repository = _save(robust_pipeline, tmp_path / "model", robust_frame.iloc[:2])

    body = (repository / "request.bin").read_bytes()
    _, prefix_end = json.JSONDecoder().raw_decode(body.decode("latin-1"))
    assert read_headers_file(repository / "request.headers") == {
        "Content-Type": "application/octet-stream",
        "Inference-Header-Content-Length": str(prefix_end),
    }


@pytest.mark.parametrize("nan", [False, True], ids=["bytes-column", "bytes-column-and-nan"])
def test_generated_model_py_answers_the_binary_request_with_the_model_prediction_when_driven(
    tmp_path, robust_pipeline, robust_frame, read_request, drive_model_py, nan
):
    example = robust_frame.iloc[:3].assign(age=[np.nan, 35.5, 47.0]) if nan else robust_frame.iloc[:3]
    repository = _save(robust_pipeline, tmp_path / "model", example, signature=SIGNATURE)
    _, arrays = read_request(repository)

    outputs = drive_model_py(repository, arrays)

    np.testing.assert_allclose(outputs["output_0"], robust_pipeline.predict_proba(example))


def test_save_model_ships_json_with_the_example_values_when_text_and_numbers_are_finite(
    tmp_path, fitted_pipeline, example_frame, read_request
):
    sklearn.save_model(fitted_pipeline, tmp_path / "model", input_example=example_frame)

    repository = tmp_path / "model" / "model_repository" / "model"
    body, arrays = read_request(repository)
    assert sorted(p.name for p in repository.glob("request*")) == ["request.json"]
    assert "Zürich" in (repository / "request.json").read_text(encoding="utf-8")
    assert {i["name"]: i["data"] for i in body["inputs"]} == {c: example_frame[c].tolist() for c in example_frame}
    assert body["outputs"] == [{"name": "output_0"}]
    pd.testing.assert_frame_equal(
        pd.DataFrame({name: array.tolist() for name, array in arrays.items()}).assign(
            city=lambda frame: frame["city"].map(bytes.decode)
        ),
        example_frame.reset_index(drop=True),
        check_dtype=False,
    )
