"""Examples that are not rows yet, normalised as MLflow normalises them (#22.4).

Each was refused although ``mlflow models serve`` answers its serving example with 200: a dict of scalars
(``Tensor `a`: shape [] does not match configured dims [-1]`` once predicted), a single text for a scikit-learn
model (predicted as a bare ``str``), table-question-answering's ``{"query": ..., "table": ...}`` (``Tensor `query`:
shape [] ...``) and a sparse matrix (``element 0 is a csr_matrix, not a number``). Now each logs, ships the request
MLflow's serving example carries (one row; the dense array) and the generated model.py answers it like
``pyfunc.predict`` (judged by the independent oracle). Bytes in an example MLflow saves as JSON are refused: MLflow
keeps them only as base64 text.
"""

import re

import numpy as np
import pandas as pd
import pytest
from mlflow.models import infer_signature

import mlflow_triton.transformers as mt_transformers
from mlflow_triton import _examples, sklearn
from mlflow_triton.errors import InvalidArgumentError
from tests.support import example_forms, tiny_models
from tests.support.oracle import expected_example_tensors

BYTES_REMEDY = "pass a DataFrame instead, e.g. pd.DataFrame([b'...']) for one unnamed column"


def _answer_and_expected(package, read_request):
    [repository] = (package / "model_repository").iterdir()
    _, arrays = read_request(repository)
    return arrays, tiny_models.serve_request(repository, arrays), expected_example_tensors(package, repository)


def test_for_prediction_gives_a_one_row_frame_when_the_example_is_a_dict_of_scalars():
    frame = _examples.for_prediction({"a": 1.5, "b": "x"})

    pd.testing.assert_frame_equal(frame, pd.DataFrame([{"a": 1.5, "b": "x"}]))


def test_for_prediction_gives_a_one_cell_frame_when_the_example_is_a_scalar():
    pd.testing.assert_frame_equal(_examples.for_prediction("text"), pd.DataFrame(["text"]))


def test_for_prediction_keeps_the_example_when_a_dict_holds_columns():
    example = {"a": [1.0, 2.0]}

    assert _examples.for_prediction(example) is example


def test_for_request_gives_one_record_when_a_columns_example_is_a_dict_of_scalars():
    assert _examples.for_request({"a": 1, "b": 2.5}, "columns") == [{"a": 1, "b": 2.5}]


def test_for_request_keeps_a_dict_of_scalars_when_the_mapping_is_named_tensors():
    example = {"a": 1, "b": 2.5}

    assert _examples.for_request(example, "tensors") is example


@pytest.mark.parametrize("kind", ["csr", "csc"])
def test_for_request_gives_the_dense_array_when_the_example_is_sparse(kind):
    dense = _examples.for_request(example_forms.sparse_example(kind), "tensor")

    np.testing.assert_array_equal(dense, example_forms.sparse_example("csr").toarray())


@pytest.mark.parametrize(
    ("example", "where"),
    [
        (b"abc", "is bytes"),
        ({"a": b"abc", "b": 1}, "is a dict holding bytes"),
        ([b"abc"], "is a list holding bytes"),
        ([{"a": 1}, {"a": b"abc"}], "is a list holding bytes"),
    ],
    ids=["bytes", "dict", "list", "records"],
)
def test_check_example_refuses_bytes_when_mlflow_would_save_them_as_base64_text(example, where):
    with pytest.raises(InvalidArgumentError, match=rf"^input_example {where}: .*{re.escape(BYTES_REMEDY)}"):
        _examples.check_example(example)


def test_sklearn_save_model_serves_like_pyfunc_when_the_example_is_a_dict_of_scalars(tmp_path, read_request):
    package = tmp_path / "package"

    sklearn.save_model(example_forms.scalar_record_regressor(), package, input_example=example_forms.SCALAR_RECORD)

    arrays, answer, expected = _answer_and_expected(package, read_request)
    assert {name: array.tolist() for name, array in arrays.items()} == {"a": [1.5], "b": [-2.0]}
    assert answer.keys() == expected.keys()
    for name, array in expected.items():
        np.testing.assert_array_equal(answer[name], array)


def test_sklearn_save_model_ships_one_row_when_a_dict_of_scalars_meets_an_explicit_signature(tmp_path, read_request):
    package = tmp_path / "package"
    model = example_forms.scalar_record_regressor()
    signature = infer_signature(example_forms.SCALAR_RECORD, model.predict(pd.DataFrame([example_forms.SCALAR_RECORD])))

    sklearn.save_model(model, package, input_example=example_forms.SCALAR_RECORD, signature=signature)

    arrays, answer, expected = _answer_and_expected(package, read_request)
    assert {name: array.tolist() for name, array in arrays.items()} == {"a": [1.5], "b": [-2.0]}
    for name, array in expected.items():
        np.testing.assert_array_equal(answer[name], array)


def test_sklearn_save_model_serves_like_pyfunc_when_the_example_is_a_single_text(tmp_path, read_request):
    package = tmp_path / "package"

    sklearn.save_model(example_forms.single_text_regressor(), package, input_example=example_forms.SINGLE_TEXT)

    arrays, answer, expected = _answer_and_expected(package, read_request)
    assert [array.tolist() for array in arrays.values()] == [[example_forms.SINGLE_TEXT.encode()]]
    for name, array in expected.items():
        np.testing.assert_array_equal(answer[name], array)


@pytest.mark.parametrize("kind", ["csr", "csc"])
def test_sklearn_save_model_ships_the_dense_array_when_the_example_is_sparse(tmp_path, read_request, kind):
    package = tmp_path / "package"
    example = example_forms.sparse_example(kind)

    sklearn.save_model(example_forms.sparse_regressor(), package, input_example=example)

    arrays, answer, expected = _answer_and_expected(package, read_request)
    [request] = arrays.values()
    np.testing.assert_array_equal(request, example.toarray())
    assert request.dtype == np.float64
    # pyfunc.predict on the saved (sparse) example and on the dense request may differ in the last bits
    for name, array in expected.items():
        np.testing.assert_allclose(answer[name], array, rtol=1e-12)


def test_transformers_save_model_serves_like_pyfunc_when_the_table_question_example_is_a_dict_of_texts(
    tmp_path, read_request
):
    package = tmp_path / "package"
    pipeline = example_forms.shared_table_question_answering_pipeline()

    mt_transformers.save_model(pipeline, package, input_example=example_forms.TABLE_QUESTION)

    arrays, answer, expected = _answer_and_expected(package, read_request)
    assert {name: [item.decode() for item in array] for name, array in arrays.items()} == {
        name: [value] for name, value in example_forms.TABLE_QUESTION.items()
    }
    assert answer.keys() == expected.keys()
    for name, array in expected.items():
        np.testing.assert_array_equal(answer[name], array)


@pytest.mark.parametrize("example", [b"model text", {"text": b"model text"}], ids=["bytes", "dict-of-bytes"])
def test_log_model_refuses_bytes_and_leaves_nothing_behind_when_mlflow_would_save_them_as_base64_text(
    tracking_store, workspace, example
):
    with pytest.raises(InvalidArgumentError, match=re.escape(BYTES_REMEDY)):
        sklearn.log_model(example_forms.single_text_regressor(), input_example=example, registered_model_name="refused")

    assert list(workspace.iterdir()) == []
    tracking_store.assert_nothing_logged()
