"""Optional and datetime columns on the real Triton 2.51 (#22.6): answered like ``pyfunc.predict``.

An sklearn Pipeline whose input example holds NaN (a double column), ``None`` (a string column) and a
``datetime64`` column with NaT -- columns MLflow infers as optional or datetime, which mlflow-triton
used to refuse -- is logged with ``mlflow_triton.sklearn``, served, and judged with the tests' own
oracle (``tests/support/oracle.py``): the shipped request (JSON: placeholders and ``<column>__missing``
masks), a binary request carrying NaN in the FP64 column itself, a request without a mask (400), and masks
written 0/1 instead of true/false (Triton's own 500, as docs/repository.md says; #31.5).
"""

import json

import numpy as np
import pandas as pd
import pytest

from mlflow_triton import sklearn
from mlflow_triton.local import TritonInstallation, TritonServer, ensure_serving_env, send_shipped_request
from mlflow_triton.local.errors import InferenceError
from mlflow_triton.local.send import RequestFiles, send_request
from mlflow_triton.repository import request_files
from tests.support.column_models import NANOSECONDS_2020, example_frame, pipeline
from tests.support.oracle import ExpectedAnswers, expected_example_tensors

pytestmark = [pytest.mark.triton, pytest.mark.filterwarnings("ignore")]

NAME = "columns"


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """(server, repository, MLflow package) for the Pipeline logged with the example above."""
    package = tmp_path_factory.mktemp("columns") / "package"
    sklearn.save_model(
        pipeline(), package, input_example=example_frame(), triton_model_name=NAME, serialization_format="cloudpickle"
    )
    repository = package / "model_repository" / NAME
    installation = TritonInstallation.bundled(progress=None)
    env = ensure_serving_env(repository / "requirements.txt", installation.serving_constraints, progress=None)
    with TritonServer(repository.parent, NAME, installation=installation, serving_env=env) as server:
        yield server, repository, package


def test_real_triton_answers_the_shipped_request_like_pyfunc_when_columns_are_optional_and_datetime(served):
    server, repository, package = served

    response = send_shipped_request(server.url, repository)

    assert response.form == "json"
    expected = expected_example_tensors(package, repository)
    assert response.outputs["output_0"].tobytes() == expected["output_0"].tobytes()


def test_real_triton_keeps_nan_in_a_binary_fp64_column_when_its_mask_marks_no_row(served, tmp_path):
    server, repository, package = served
    when = pd.to_datetime(
        ["2020-03-01T12:00:00.000000001", "2020-01-01", "2262-04-11T23:47:16.854775807"], format="ISO8601"
    )
    frame = example_frame().fillna({"city": "b"}).assign(when=when.as_unit("ns"))
    tensors = {
        "size": frame["size"].to_numpy(),
        "size__missing": np.zeros(3, dtype=bool),
        "city": np.array([text.encode() for text in frame["city"]], dtype=object),
        "city__missing": np.zeros(3, dtype=bool),
        "when": frame["when"].to_numpy().view(np.int64),
        "when__missing": np.zeros(3, dtype=bool),
    }
    datatypes = {name: "TYPE_BOOL" for name in tensors} | {
        "size": "TYPE_FP64",
        "city": "TYPE_STRING",
        "when": "TYPE_INT64",
    }
    body, headers = request_files.binary_request(tensors, datatypes, ["output_0"])
    (tmp_path / "nan.bin").write_bytes(body)

    response = send_request(server.url, NAME, RequestFiles("binary", tmp_path / "nan.bin", list(headers.items())))

    expected = ExpectedAnswers(package, repository).for_input(frame)
    assert np.isnan(frame["size"][1])
    assert response.outputs["output_0"].tobytes() == expected["output_0"].tobytes()


def test_real_triton_answers_400_when_a_request_lacks_a_missing_value_mask(served, tmp_path):
    server, _, _ = served
    body = {
        "inputs": [
            {"name": "size", "datatype": "FP64", "shape": [1], "data": [1.0]},
            {"name": "city", "datatype": "BYTES", "shape": [1], "data": ["a"]},
            {"name": "city__missing", "datatype": "BOOL", "shape": [1], "data": [False]},
            {"name": "when", "datatype": "INT64", "shape": [1], "data": [NANOSECONDS_2020]},
            {"name": "when__missing", "datatype": "BOOL", "shape": [1], "data": [False]},
        ]
    }
    path = tmp_path / "no-mask.json"
    path.write_text(json.dumps(body), encoding="utf-8")

    with pytest.raises(InferenceError, match="size__missing"):
        send_request(server.url, NAME, RequestFiles("json", path, [("Content-Type", "application/json")]))


def test_real_triton_reads_int64_min_as_nat_when_a_json_request_sends_it_unmasked(served, tmp_path):
    server, repository, package = served
    frame = pd.DataFrame({"size": [1.0], "city": ["a"], "when": pd.Series([pd.NaT], dtype="datetime64[ns]")})
    body = {
        "inputs": [
            {"name": "size", "datatype": "FP64", "shape": [1], "data": [1.0]},
            {"name": "size__missing", "datatype": "BOOL", "shape": [1], "data": [False]},
            {"name": "city", "datatype": "BYTES", "shape": [1], "data": ["a"]},
            {"name": "city__missing", "datatype": "BOOL", "shape": [1], "data": [False]},
            {"name": "when", "datatype": "INT64", "shape": [1], "data": [-(2**63)]},
            {"name": "when__missing", "datatype": "BOOL", "shape": [1], "data": [False]},
        ]
    }
    path = tmp_path / "nat.json"
    path.write_text(json.dumps(body), encoding="utf-8")

    response = send_request(server.url, NAME, RequestFiles("json", path, [("Content-Type", "application/json")]))

    expected = ExpectedAnswers(package, repository).for_input(frame)
    assert response.outputs["output_0"].tobytes() == expected["output_0"].tobytes()


def test_real_triton_answers_its_own_500_when_a_json_mask_is_sent_as_0_and_1_as_the_docs_say(served, tmp_path):
    """docs/repository.md: write a mask as JSON true/false; Triton 2.51 refuses 0/1 before the model sees it."""
    server, _, _ = served
    body = {
        "inputs": [
            {"name": "size", "datatype": "FP64", "shape": [1], "data": [1.0]},
            {"name": "size__missing", "datatype": "BOOL", "shape": [1], "data": [0]},
            {"name": "city", "datatype": "BYTES", "shape": [1], "data": ["a"]},
            {"name": "city__missing", "datatype": "BOOL", "shape": [1], "data": [0]},
            {"name": "when", "datatype": "INT64", "shape": [1], "data": [NANOSECONDS_2020]},
            {"name": "when__missing", "datatype": "BOOL", "shape": [1], "data": [1]},
        ]
    }
    path = tmp_path / "numeric-masks.json"
    path.write_text(json.dumps(body), encoding="utf-8")

    with pytest.raises(InferenceError) as error:
        send_request(server.url, NAME, RequestFiles("json", path, [("Content-Type", "application/json")]))

    assert (error.value.status, error.value.triton_error) == (
        500,
        "Unable to parse 'data': attempt to access JSON non-boolean as boolean",
    )
