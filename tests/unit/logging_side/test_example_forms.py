"""Examples that are not rows yet, normalised as MLflow normalises them (#22.4).

Each was refused although ``mlflow models serve`` answers its serving example with 200: a dict of scalars
(``Tensor `a`: shape [] does not match configured dims [-1]`` once predicted), a single text for a scikit-learn
model (predicted as a bare ``str``), table-question-answering's ``{"query": ..., "table": ...}`` (``Tensor `query`:
shape [] ...``) and a sparse matrix (``element 0 is a csr_matrix, not a number``). Now each logs, ships the request
MLflow's serving example carries (one row; the dense array) and the generated model.py answers it like
``pyfunc.predict`` (judged by the independent oracle). Bytes in an example MLflow saves as JSON are refused: MLflow
keeps them only as base64 text.
"""

import copy
import datetime
import json
import re

import numpy as np
import pandas as pd
import pytest
from mlflow.models import infer_signature
from mlflow.models.utils import _enforce_schema as enforce_schema

import mlflow_triton.transformers as mt_transformers
from mlflow_triton import _examples, sklearn
from mlflow_triton.errors import InvalidArgumentError
from tests.support import docs_pages, example_forms, tiny_models
from tests.support.oracle import expected_example_tensors

BYTES_REMEDY = "pass a DataFrame instead, e.g. pd.DataFrame([b'...']) for one unnamed column"


def _answer_and_expected(package, read_request):
    [repository] = (package / "model_repository").iterdir()
    _, arrays = read_request(repository)
    return arrays, tiny_models.serve_request(repository, arrays), expected_example_tensors(package, repository)


def _inferred(example):
    return _examples.input_schema(example)


def test_for_prediction_gives_a_one_row_frame_when_the_example_is_a_dict_of_scalars():
    example = {"a": 1.5, "b": "x"}

    pd.testing.assert_frame_equal(_examples.for_prediction(example, _inferred(example)), pd.DataFrame([example]))


def test_for_prediction_gives_a_one_cell_frame_when_the_example_is_a_scalar():
    pd.testing.assert_frame_equal(_examples.for_prediction("text", _inferred("text")), pd.DataFrame(["text"]))


def test_for_request_gives_one_record_when_a_columns_example_is_a_dict_of_scalars():
    example = {"a": 1, "b": 2.5}

    assert _examples.for_request(example, _inferred(example)) == [{"a": 1, "b": 2.5}]


def test_for_request_keeps_a_dict_when_the_schema_is_named_tensors():
    example = {"a": np.array([1.0]), "b": np.array([2.5])}

    assert _examples.for_request(example, infer_signature(example).inputs) is example


# --- Forms MLflow's schema enforcement turns into rows (#31.3) ---------------------------------------------------
# Each: (example, the input schema MLflow enforces: None = the one it infers from the example).
ROWS = {
    "records": (example_forms.RECORDS, None),
    "records-missing-key": ([{"a": 1.5, "b": -2.0}, {"a": 0.25}], None),
    "list-of-scalars": (example_forms.LIST_OF_SCALARS, None),
    "list-of-texts": (["the model", "serves text"], None),
    "list-of-lists-column-signature": (example_forms.LIST_OF_LISTS, example_forms.unnamed_columns_signature().inputs),
    "columns-scalar-signature": (
        example_forms.COLUMNS,
        infer_signature(pd.DataFrame(example_forms.COLUMNS)).inputs,
    ),
    "dict-of-scalars": (example_forms.SCALAR_RECORD, None),
    "scalar": ("text", None),
}


@pytest.mark.parametrize(("example", "schema"), ROWS.values(), ids=ROWS.keys())
def test_for_prediction_gives_what_mlflow_schema_enforcement_gives_when_the_example_is_not_rows_yet(example, schema):
    schema = schema or _inferred(example)

    expected = enforce_schema(copy.deepcopy(example), schema)

    pd.testing.assert_frame_equal(_examples.for_prediction(copy.deepcopy(example), schema), expected)


SERVED = {
    "records": (example_forms.scalar_record_regressor, example_forms.RECORDS, {}),
    "list-of-scalars": (example_forms.one_column_regressor, example_forms.LIST_OF_SCALARS, {}),
    "list-of-lists-column-signature": (
        example_forms.unnamed_columns_regressor,
        example_forms.LIST_OF_LISTS,
        {"signature": example_forms.unnamed_columns_signature()},
    ),
}


@pytest.mark.parametrize(("model", "example", "options"), SERVED.values(), ids=SERVED.keys())
def test_sklearn_save_model_serves_like_pyfunc_when_the_example_is_a_list_mlflow_turns_into_rows(
    tmp_path, read_request, model, example, options
):
    package = tmp_path / "package"

    sklearn.save_model(model(), package, input_example=example, **options)

    arrays, answer, expected = _answer_and_expected(package, read_request)
    assert [array.tolist() for array in arrays.values()] == pd.DataFrame(example).T.values.tolist()
    assert answer.keys() == expected.keys()
    for name, array in expected.items():
        np.testing.assert_array_equal(answer[name], array)


COLUMNS_REMEDY = "pass pd.DataFrame(input_example) instead: one row per list item"


def test_log_model_refuses_a_dict_of_equal_length_lists_naming_the_array_column_when_the_model_cannot_predict_it(
    tracking_store, workspace
):
    with pytest.raises(
        InvalidArgumentError,
        match=rf"^input_example is a dict of equal-length lists: .* column `a` as Array\(double\), not one row per "
        rf"item, which the model failed to predict \(ValueError\(.*\)\); {re.escape(COLUMNS_REMEDY)}",
    ):
        sklearn.log_model(
            example_forms.scalar_record_regressor(),
            input_example=example_forms.COLUMNS,
            registered_model_name="refused",
        )

    assert list(workspace.iterdir()) == []
    tracking_store.assert_nothing_logged()


def test_save_model_serves_one_row_of_array_cells_like_pyfunc_when_the_model_predicts_a_dict_of_lists(
    tmp_path, read_request
):
    package = tmp_path / "package"

    sklearn.save_model(
        example_forms.RowSum(), package, input_example=example_forms.COLUMNS, serialization_format="cloudpickle"
    )

    arrays, answer, expected = _answer_and_expected(package, read_request)
    # one row, each cell the JSON text of its list (nested columns)
    assert {name: [json.loads(cell) for cell in array.tolist()] for name, array in arrays.items()} == {
        "a": [[1.5, 0.25, -1.0]],
        "b": [[-2.0, 3.0, 0.5]],
    }
    assert answer.keys() == expected.keys()
    for name, array in expected.items():
        np.testing.assert_array_equal(answer[name], array)


def test_save_model_refuses_a_dict_of_text_lists_when_mlflow_makes_it_one_row_for_a_string_column(tmp_path):
    texts = pd.DataFrame({"text": ["the model", "serves text"]})
    model = example_forms.text_column_regressor()
    signature = infer_signature(texts, model.predict(texts))

    with pytest.raises(InvalidArgumentError, match=r"column `text` as string, not one row per item; pass pd.DataFrame"):
        sklearn.save_model(
            model, tmp_path / "package", input_example=texts.to_dict("list"), signature=signature, protocol="tensors"
        )

    assert list(tmp_path.iterdir()) == []


def test_save_model_refuses_a_list_of_lists_when_mlflow_infers_an_array_column(tmp_path):
    with pytest.raises(
        InvalidArgumentError,
        match=r"^input_example is a list of lists: MLflow infers one column of type Array\(double\) .*"
        r"pass np.array\(input_example\) for a tensor, or pd.DataFrame\(input_example\)",
    ):
        sklearn.save_model(
            example_forms.unnamed_columns_regressor(),
            tmp_path / "package",
            input_example=example_forms.LIST_OF_LISTS,
            protocol="tensors",
        )

    assert list(tmp_path.iterdir()) == []


MLFLOW_REFUSES = {
    "tuple": (tuple(example_forms.LIST_OF_LISTS), r"^input_example is a tuple: MLflow takes a tuple only as \(input, "),
    "series": (pd.Series([1.5, 0.25], name="a"), r"^input_example is a pandas Series, .*input_example.to_frame\(\)"),
    "datetime": (datetime.datetime(2026, 12, 1), r"^input_example is a datetime on its own: .*Found: datetime"),
}


@pytest.mark.parametrize(("example", "message"), MLFLOW_REFUSES.values(), ids=MLFLOW_REFUSES.keys())
def test_save_model_refuses_an_example_mlflow_does_not_score_naming_the_form_and_the_remedy(tmp_path, example, message):
    with pytest.raises(InvalidArgumentError, match=message):
        sklearn.save_model(example_forms.one_column_regressor(), tmp_path / "package", input_example=example)

    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("kind", ["csr", "csc"])
def test_for_request_gives_the_dense_array_when_the_example_is_sparse(kind):
    example = example_forms.sparse_example(kind)

    dense = _examples.for_request(example, infer_signature(example).inputs)

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


# --- docs/logging.md's tables of example forms: each row names the cases that check it ------------------------------
HERE = "tests/unit/logging_side/test_example_forms.py"
SERVED_CASE = f"{HERE}::test_sklearn_save_model_serves_like_pyfunc_when_the_example_is_a_list_mlflow_turns_into_rows"
REFUSED_CASE = f"{HERE}::test_save_model_refuses_an_example_mlflow_does_not_score_naming_the_form_and_the_remedy"
ROWS_CASE = f"{HERE}::test_for_prediction_gives_what_mlflow_schema_enforcement_gives_when_the_example_is_not_rows_yet"
FORMS_CHECKED_BY = {
    "DataFrame": [
        "tests/unit/logging_side/test_sklearn_save_model.py::test_save_model_writes_the_logged_layout_when_path_is_new"
    ],
    'list of records, e.g. `df.to_dict("records")`': [
        f"{SERVED_CASE}[records]",
        f"{ROWS_CASE}[records-missing-key]",
        "tests/e2e/test_scalar_sparse_examples_triton.py::"
        "test_real_triton_answers_like_pyfunc_when_the_example_is_records_a_dict_a_text_or_a_sparse_matrix[sklearn]",
    ],
    'list of scalars, e.g. `[1.5, 0.25]` or `["text", "more text"]`': [
        f"{SERVED_CASE}[list-of-scalars]",
        f"{ROWS_CASE}[list-of-texts]",
    ],
    "list of lists with an explicit column signature (e.g. columns `0`, `1`)": [
        f"{SERVED_CASE}[list-of-lists-column-signature]"
    ],
    "dict of equal-length lists with an explicit signature of scalar (not string) columns": [
        f"{ROWS_CASE}[columns-scalar-signature]"
    ],
    (
        'dict of scalars, e.g. `{"a": 1.0, "b": 2.0}` or '
        'table-question-answering\'s `{"query": "...", "table": "<JSON>"}`'
    ): [
        f"{HERE}::test_sklearn_save_model_serves_like_pyfunc_when_the_example_is_a_dict_of_scalars",
        f"{HERE}::test_transformers_save_model_serves_like_pyfunc_when_the_table_question_example_is_a_dict_of_texts",
    ],
    'a scalar, e.g. `"some text"` (one string column)': [
        f"{HERE}::test_sklearn_save_model_serves_like_pyfunc_when_the_example_is_a_single_text"
    ],
    "ndarray, dict of ndarrays, torch tensor": [
        "tests/unit/logging_side/test_mapping_edge_cases.py::test_save_model_serves_a_single_named_input_tensor_when_the_example_is_an_ndarray",
        f"{HERE}::test_for_request_keeps_a_dict_when_the_schema_is_named_tensors",
    ],
    "scipy `csr_matrix` / `csc_matrix` (signature: a float tensor)": [
        f"{HERE}::test_sklearn_save_model_ships_the_dense_array_when_the_example_is_sparse"
    ],
    "dict of equal-length lists, signature inferred": [
        f"{HERE}::test_save_model_serves_one_row_of_array_cells_like_pyfunc_when_the_model_predicts_a_dict_of_lists",
        f"{HERE}::test_log_model_refuses_a_dict_of_equal_length_lists_naming_the_array_column_when_the_model_cannot_"
        "predict_it",
    ],
    "dict of equal-length lists of strings": [
        f"{HERE}::test_save_model_refuses_a_dict_of_text_lists_when_mlflow_makes_it_one_row_for_a_string_column"
    ],
    "list of lists, signature inferred": [
        f"{HERE}::test_save_model_refuses_a_list_of_lists_when_mlflow_infers_an_array_column"
    ],
    "a tuple other than `(input, params)`, a pandas Series": [
        f"{REFUSED_CASE}[tuple]",
        f"{REFUSED_CASE}[series]",
    ],
    "a datetime on its own": [f"{REFUSED_CASE}[datetime]"],
    "bytes in a scalar, dict or list": [
        f"{HERE}::test_log_model_refuses_bytes_and_leaves_nothing_behind_when_mlflow_would_save_them_as_base64_text"
    ],
}


def _docs_table_forms():
    """The first cells of the tables under docs/logging.md's "Accepted examples" heading."""
    text = (docs_pages.DOCS / "logging.md").read_text(encoding="utf-8")
    section = text.split("## Accepted examples", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ") and not line.startswith("| ---")]
    return [row[2:].split(" | ", 1)[0] for row in rows if not row.startswith("| example |")]


def test_logging_docs_tables_list_exactly_the_forms_the_tests_check():
    forms = _docs_table_forms()

    assert sorted(forms) == sorted(FORMS_CHECKED_BY)
    assert [r for refs in FORMS_CHECKED_BY.values() for r in refs if not docs_pages.test_exists(r.split("[")[0])] == []
    assert [r for refs in FORMS_CHECKED_BY.values() for r in refs if "[" in r and not _case_exists(r)] == []


def _case_exists(reference):
    """Whether a ``test[id]`` reference names a case of this module's id tables (other files: the test exists)."""
    name, case = reference[:-1].split("[")
    tables = {SERVED_CASE: SERVED, ROWS_CASE: ROWS, REFUSED_CASE: MLFLOW_REFUSES}
    return case in tables[name] if name in tables else docs_pages.test_exists(name)
