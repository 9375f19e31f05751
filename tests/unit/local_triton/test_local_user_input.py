"""`check --input FILE`: a user's JSON or CSV, parsed as MLflow parses it, encoded by the runtime's codec."""

import json

import numpy as np
import pandas as pd
import pytest
from mlflow.models import Model
from sklearn.linear_model import LinearRegression

from mlflow_triton import sklearn as triton_sklearn
from mlflow_triton.local.errors import InputFileError
from mlflow_triton.local.user_input import input_request, load_user_input, rows_of
from tests.support.shipped_request import arrays_from_binary_request, arrays_from_json_request


@pytest.fixture
def column_model(fitted_pipeline, example_frame, tmp_path):
    """(MLmodel, repository) of the Pipeline taking columns age (double), city (string), visits (long)."""
    triton_sklearn.save_model(
        fitted_pipeline, tmp_path / "columns", input_example=example_frame, triton_model_name="columns"
    )
    mlmodel = Model.load(str(tmp_path / "columns"))
    return mlmodel, tmp_path / "columns" / "model_repository" / "columns"


@pytest.fixture
def tensor_model(tmp_path):
    """(MLmodel, repository) of a regression taking one float64 tensor of shape (-1, 3)."""
    features = np.arange(24, dtype=np.float64).reshape(8, 3)
    model = LinearRegression().fit(features, features.sum(axis=1))
    triton_sklearn.save_model(model, tmp_path / "tensor", input_example=features[:2], triton_model_name="tensor")
    return Model.load(str(tmp_path / "tensor")), tmp_path / "tensor" / "model_repository" / "tensor"


def write(path, text):
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    "content",
    [
        ("input.csv", "age,city,visits\n70.5,Bergen,9\n18.0,Pune,0\n"),
        (
            "input.json",
            json.dumps(
                {
                    "dataframe_split": {
                        "columns": ["age", "city", "visits"],
                        "data": [[70.5, "Bergen", 9], [18.0, "Pune", 0]],
                    }
                }
            ),
        ),
        (
            "input.json",
            json.dumps(
                {
                    "dataframe_records": [
                        {"age": 70.5, "city": "Bergen", "visits": 9},
                        {"age": 18.0, "city": "Pune", "visits": 0},
                    ]
                }
            ),
        ),
        (
            "input.json",
            json.dumps(
                {
                    "inputs": [
                        {"age": 70.5, "city": "Bergen", "visits": 9},
                        {"age": 18.0, "city": "Pune", "visits": 0},
                    ],
                    "unknown": "ignored, as MLflow's server ignores it",
                }
            ),
        ),
    ],
    ids=["csv", "dataframe_split", "dataframe_records", "inputs records"],
)
def test_input_request_carries_the_file_values_when_model_takes_columns(column_model, tmp_path, content):
    mlmodel, repository = column_model
    value = load_user_input(write(tmp_path / content[0], content[1]), mlmodel)

    request = input_request(value, repository, tmp_path / "requests")

    arrays = arrays_from_json_request(json.loads(request.body_path.read_text()))
    assert (request.form, rows_of(value)) == ("json", 2)
    assert arrays["age"].tolist() == [70.5, 18.0] and arrays["age"].dtype == np.float64
    assert arrays["city"].tolist() == [b"Bergen", b"Pune"]
    assert arrays["visits"].tolist() == [9, 0] and arrays["visits"].dtype == np.int64


@pytest.mark.parametrize(
    "content",
    [
        ("input.csv", "a,b,c\n1.5,2,3\n4,5,6.25\n7,8,9\n"),
        ("input.json", json.dumps({"inputs": [[1.5, 2, 3], [4, 5, 6.25], [7, 8, 9]]})),
        ("input.json", json.dumps({"instances": [[1.5, 2, 3], [4, 5, 6.25], [7, 8, 9]]})),
    ],
    ids=["csv", "inputs", "instances"],
)
def test_input_request_carries_the_file_values_when_model_takes_one_tensor(tensor_model, tmp_path, content):
    mlmodel, repository = tensor_model
    value = load_user_input(write(tmp_path / content[0], content[1]), mlmodel)

    request = input_request(value, repository, tmp_path / "requests")

    [array] = arrays_from_json_request(json.loads(request.body_path.read_text())).values()
    np.testing.assert_array_equal(array, [[1.5, 2, 3], [4, 5, 6.25], [7, 8, 9]])
    assert array.dtype == np.float64


def test_input_request_uses_the_binary_extension_when_the_file_holds_nan(tensor_model, tmp_path):
    mlmodel, repository = tensor_model
    value = load_user_input(write(tmp_path / "input.json", '{"inputs": [[1.0, NaN, 3.0]]}'), mlmodel)

    request = input_request(value, repository, tmp_path / "requests")

    headers = dict(request.headers)
    _, arrays = arrays_from_binary_request(request.body_path.read_bytes(), headers)
    assert request.form == "binary" and headers["Content-Type"] == "application/octet-stream"
    assert np.isnan(next(iter(arrays.values()))[0, 1])


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("input.json", "[1, 2, 3]", r"MLflow's scoring server refuses this body: .*dataframe_split.*Received a list\."),
        ("input.json", '{"rows": [1]}', r"MLflow's scoring server refuses this body: .*dataframe_split"),
        ("input.txt", "1,2,3", r"unknown file type .txt; expected .json or .csv"),
        ("input.json", "{not json", r"MLflow's scoring server refuses this body: .*valid JSON formatted string"),
    ],
)
def test_load_user_input_names_the_file_and_the_formats_when_it_cannot_be_read(
    column_model, tmp_path, name, text, message
):
    with pytest.raises(InputFileError, match=message):
        load_user_input(write(tmp_path / name, text), column_model[0])


def test_load_user_input_says_no_such_file_when_path_is_missing(column_model, tmp_path):
    with pytest.raises(InputFileError, match=r"--input .*missing.csv: no such file"):
        load_user_input(tmp_path / "missing.csv", column_model[0])


def test_input_request_names_the_column_when_the_file_lacks_one(column_model, tmp_path):
    mlmodel, repository = column_model
    value = pd.DataFrame({"age": [1.0], "visits": [2]})

    with pytest.raises(InputFileError, match="Column `city` is missing"):
        input_request(value, repository, tmp_path / "requests")


def tensor_model_of(tmp_path, dtype):
    """(MLmodel, repository) of a regression taking one ``dtype`` tensor of shape (-1, 3)."""
    features = np.arange(24).reshape(8, 3).astype(dtype)
    model = LinearRegression().fit(features, features.sum(axis=1))
    name = f"tensor_{np.dtype(dtype).name}"
    triton_sklearn.save_model(model, tmp_path / name, input_example=features[:2], triton_model_name=name)
    return Model.load(str(tmp_path / name)), tmp_path / name / "model_repository" / name


@pytest.mark.parametrize(
    ("dtype", "csv", "message"),
    [
        (
            np.int64,
            "a,b,c\n1,2,3\n1.5,2.7,3\n",
            "column `a` cannot be read as the model's int64 tensor unchanged: row 2 holds 1.5",
        ),
        (
            np.int64,
            "a,b,c\n1,2,3\n4,5,x\n",
            "column `c` cannot be read as the model's int64 tensor unchanged: row 1 is a "
            "str, not a number \\(int64 expected\\)",
        ),
        (
            np.float32,
            "a,b,c\n1,2,3\n4,1e300,6\n",
            "column `b` cannot be read as the model's float32 tensor unchanged: row 2 holds 1e\\+300",
        ),
        (
            np.float32,
            "a,b,c\n1,2,3\n4,5,16777217\n",
            "column `c` cannot be read as the model's float32 tensor unchanged: row 2 \\(16777217\\) does not fit",
        ),
    ],
    ids=["fraction-for-int", "text-for-int", "overflowing-float32", "integer-float32-cannot-hold"],
)
def test_load_user_input_names_the_column_and_dtype_when_a_csv_value_would_change(tmp_path, dtype, csv, message):
    mlmodel, _ = tensor_model_of(tmp_path, dtype)

    with pytest.raises(InputFileError, match=message):
        load_user_input(write(tmp_path / "input.csv", csv), mlmodel)


@pytest.mark.parametrize(
    ("dtype", "csv", "expected"),
    [
        (np.int64, "a,b,c\n1,2,3\n4.0,5,6\n", [[1, 2, 3], [4, 5, 6]]),
        (np.float32, "a,b,c\n0.1,2,3\n4,5,6.25\n", [[0.1, 2, 3], [4, 5, 6.25]]),
    ],
    ids=["whole-floats-for-int", "decimals-for-float32"],
)
def test_load_user_input_reads_a_csv_as_the_tensor_dtype_when_every_value_fits(tmp_path, dtype, csv, expected):
    mlmodel, _ = tensor_model_of(tmp_path, dtype)

    value = load_user_input(write(tmp_path / "input.csv", csv), mlmodel)

    assert value.dtype == dtype
    np.testing.assert_array_equal(value, np.array(expected, dtype=dtype))


def test_load_user_input_splits_the_params_off_and_the_request_carries_them_when_the_body_has_params(
    column_model, tmp_path
):
    mlmodel, repository = column_model
    body = {"dataframe_records": [{"age": 70.5, "city": "Bergen", "visits": 9}], "params": {"scale": 2.5, "tag": "x"}}

    value, params = load_user_input(write(tmp_path / "input.json", json.dumps(body)), mlmodel)
    request = input_request(value, repository, tmp_path / "requests", params=params)

    assert params == {"scale": 2.5, "tag": "x"}
    assert json.loads(request.body_path.read_text())["parameters"] == {"scale": 2.5, "tag": "x"}
    assert arrays_from_json_request(json.loads(request.body_path.read_text()))["city"].tolist() == [b"Bergen"]


def test_load_user_input_quotes_mlflows_refusal_when_the_body_has_two_formats(column_model, tmp_path):
    mlmodel, _ = column_model
    rows = [{"age": 70.5, "city": "Bergen", "visits": 9}]
    path = write(tmp_path / "input.json", json.dumps({"inputs": rows, "dataframe_records": rows, "params": {}}))

    with pytest.raises(
        InputFileError, match=r"MLflow's scoring server refuses this body: .*\['inputs', 'dataframe_records'\]"
    ):
        load_user_input(path, mlmodel)
