"""The input example as MLflow normalises it, before it is predicted and shipped as the request.

MLflow accepts examples that are not yet rows (``mlflow.models.utils._Example`` saves them as JSON). Its schema
enforcement (``mlflow.models.utils._enforce_schema``, which ``pyfunc.predict`` and the scoring server apply) turns
them into the DataFrame a model with a column schema is given; :func:`for_prediction` follows it rule for rule
(unchanged from MLflow 3.14 to 3.17):

* a scalar (``"some text"``, ``1.5``) becomes a one-row, one-column DataFrame;
* a dict becomes **one row** (``pd.DataFrame([example])``) when a column of the schema is an Array or Object or
  when every value is a scalar or a list of strings (``{"a": 1.0, "b": 2.0}``, table-question-answering's
  ``{"query": ..., "table": ...}``), otherwise one row per list item (``pd.DataFrame(example)``);
* a list (records ``df.to_dict("records")``, scalars, lists) or a Series becomes ``pd.DataFrame(example)``.

Refused, because MLflow's own enforcement does not give the model rows from them (see :func:`for_prediction`): a
dict of equal-length lists that becomes one row whose cells hold the lists for scalar columns (for Array columns,
as MLflow infers them from such a dict, that one row is what the schema says and is served, unless the model cannot
predict it: :func:`lists_in_one_row` then names the remedy), a list of lists for a single Array column (MLflow logs
such a model without a signature), a datetime on its own, a Series and a tuple other than ``(input, params)``
(MLflow does not take them as examples), and bytes in an example MLflow saves as JSON (:func:`check_example`: MLflow
keeps them only as base64 text).

A scipy sparse matrix (``csr_matrix``, ``csc_matrix``) is predicted as it is, and MLflow's serving example holds its
dense array (``_Example``: ``toarray()``), which is what a request carries.

:func:`for_prediction` gives the value the in-memory model predicts; :func:`for_request` the value the runtime's
codecs encode into the shipped request. The signature is still inferred from the caller's example, as MLflow does.
"""

from __future__ import annotations

import copy
import datetime
import sys
from typing import Any

import numpy as np
import pandas as pd
from mlflow.models import infer_signature
from mlflow.types import DataType, Schema

from .errors import ExampleFormError, InvalidArgumentError

DATAFRAME_REMEDY = "pass pd.DataFrame(input_example) instead: one row per list item"


def is_scalar(value: Any) -> bool:
    """A value MLflow's schema enforcement treats as one cell (``np.isscalar`` or ``None``)."""
    return value is None or bool(np.isscalar(value))


def is_scalar_record(value: Any) -> bool:
    """A non-empty dict of scalars: one row of named columns."""
    return isinstance(value, dict) and bool(value) and all(is_scalar(item) for item in value.values())


def is_sparse(value: Any) -> bool:
    """A scipy sparse matrix or array (scipy not imported: it cannot be one)."""
    sparse = sys.modules.get("scipy.sparse")
    return sparse is not None and bool(sparse.issparse(value))


def check_example(example: Any) -> None:
    """Refuse what MLflow does not take as an example, or keeps in another form (the input of an ``(input, params)``
    example). Bytes in an example MLflow saves as JSON (a scalar, a dict or a list): MLflow writes them as base64
    text and gives that text back (``Model.load_input_example``), so its saved and serving examples no longer hold
    the bytes (``mlflow models serve`` answers the text's prediction) and no check could compare with the example."""
    _check_mlflow_takes(example)
    if isinstance(example, (bytes, bytearray)):
        where = "is bytes"
    elif isinstance(example, dict) and _holds_bytes(example):
        where = "is a dict holding bytes"
    elif isinstance(example, (list, tuple)) and _holds_bytes(example):
        where = "is a list holding bytes"
    else:
        return
    raise InvalidArgumentError(
        f"input_example {where}: MLflow saves such an example as JSON, with the bytes as base64 text, and loads it "
        "back as that text, so the saved example (and MLflow's serving example) would predict another value than "
        "the bytes; pass a DataFrame instead, e.g. pd.DataFrame([b'...']) for one unnamed column or "
        "pd.DataFrame({'name': [b'...']}), whose binary columns MLflow restores as bytes"
    )


def _check_mlflow_takes(example: Any) -> None:
    """Refuse a tuple, a Series (``_Example`` raises "Expected one of the following types") and a datetime on its
    own (``_Example`` saves it, but ``_enforce_schema`` raises "Expected input to be DataFrame. Found: datetime")."""
    if isinstance(example, tuple):
        raise InvalidArgumentError(
            "input_example is a tuple: MLflow takes a tuple only as (input, params dict) and refuses any other; "
            "pass the rows as a list, an np.array or a DataFrame"
        )
    if isinstance(example, pd.Series):
        raise InvalidArgumentError(
            "input_example is a pandas Series, which MLflow does not take as an example; pass "
            "input_example.to_frame() (one column) or input_example.to_frame().T (one row)"
        )
    if isinstance(example, datetime.datetime):
        raise InvalidArgumentError(
            "input_example is a datetime on its own: MLflow saves it, but its schema enforcement refuses it "
            "(Expected input to be DataFrame. Found: datetime), so pyfunc.predict cannot score it; pass "
            "pd.DataFrame({'name': [input_example]}), a datetime column"
        )


def _holds_bytes(value: Any) -> bool:
    """Whether a dict, list or tuple holds bytes, at any depth (records, nested lists; not inside arrays)."""
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, (bytes, bytearray)):
            return True
        if isinstance(item, dict):
            pending.extend(item.values())
        elif isinstance(item, (list, tuple)):
            pending.extend(item)
    return False


def input_schema(example: Any) -> Schema | None:
    """The input schema MLflow infers from ``example`` (``infer_signature``), for the forms whose rows depend on
    it (a dict of other values than arrays, a list, a scalar); None for the others, which MLflow passes as they
    are."""
    if _is_json_object(example):
        return infer_signature(example).inputs
    return None


def _is_json_object(example: Any) -> bool:
    """What ``_Example`` saves as ``json_object``: a scalar, a list or a dict that holds no ndarray."""
    if isinstance(example, dict):
        return not any(isinstance(value, np.ndarray) for value in example.values())
    return isinstance(example, list) or bool(np.isscalar(example))


def for_prediction(example: Any, schema: Schema | None) -> Any:
    """``example`` as MLflow's schema enforcement hands it to a model with the input ``schema`` (the DataFrame
    ``_enforce_schema`` builds before it checks types); unchanged for a tensor schema, a DataFrame, an array.

    Raises InvalidArgumentError where that enforcement gives no rows to serve: a dict of equal-length lists made
    one row (each cell the whole list), a list of lists for one Array column."""
    if schema is None or schema.is_tensor_spec():
        return example
    if is_scalar(example):
        return pd.DataFrame([example])
    if isinstance(example, dict):
        if not _dict_is_one_row(example, schema):
            return pd.DataFrame(example)
        _refuse_lists_in_one_row(example, schema)
        return pd.DataFrame([example])
    if isinstance(example, list):
        _refuse_rows_for_an_array_column(example, schema)
        return pd.DataFrame(example)
    return example


def _dict_is_one_row(example: dict, schema: Schema) -> bool:
    """``_enforce_schema``'s choice for a dict: one row when a column is an Array or Object, or when every value
    is a scalar or a list of strings."""
    return any(not isinstance(spec.type, DataType) for spec in schema.inputs) or all(
        is_scalar(value) or (isinstance(value, list) and all(isinstance(item, str) for item in value))
        for value in example.values()
    )


def _refuse_lists_in_one_row(example: dict, schema: Schema) -> None:
    """A dict of equal-length lists made one row for scalar columns: each cell holds a whole list, where the lists
    were columns. For Array columns, as MLflow infers them from such a dict, that one row is what the schema says
    and is served; the prediction decides (:func:`lists_in_one_row` names the remedy where it fails)."""
    name = _first_list_column(example)
    if name is None:
        return
    kind = _column_type(name, schema)
    if kind is not None and not isinstance(kind, DataType):
        return
    raise ExampleFormError(f"{lists_in_one_row(example, schema)}; {DATAFRAME_REMEDY}")


def lists_in_one_row(example: Any, schema: Schema | None) -> str | None:
    """Where ``example`` is a dict of equal-length lists that MLflow's schema enforcement makes one row, what it
    became (the start of a refusal, without the remedy); None for any other example."""
    if not isinstance(example, dict) or schema is None or schema.is_tensor_spec():
        return None
    name = _first_list_column(example)
    if name is None or not _dict_is_one_row(example, schema):
        return None
    kind = _column_type(name, schema)
    inferred = f"column `{name}` holding a list" if kind is None else f"column `{name}` as {_type_name(kind)}"
    return (
        "input_example is a dict of equal-length lists: MLflow's schema enforcement makes it one row whose cells "
        f"hold the whole lists (pd.DataFrame([input_example])), with {inferred}, not one row per item"
    )


def _first_list_column(example: dict) -> Any:
    """The first key of a dict whose values are all lists of one length (None otherwise: nested values, a list
    beside scalars, lists of unequal lengths are the mapping's to decide)."""
    lengths = {len(value) for value in example.values() if isinstance(value, list)}
    if len(lengths) != 1 or not all(isinstance(value, list) for value in example.values()):
        return None
    return next(iter(example))


def _column_type(name: Any, schema: Schema) -> Any:
    return schema.input_dict()[name].type if schema.has_input_names() and name in schema.input_dict() else None


def _type_name(kind: Any) -> str:
    return kind.name if isinstance(kind, DataType) else str(kind)


def _refuse_rows_for_an_array_column(example: list, schema: Schema) -> None:
    """A list of lists for a single Array column: ``pd.DataFrame(example)`` has scalar columns, which MLflow's own
    enforcement refuses for that column (MLflow logs such a model without a signature)."""
    kinds = [spec.type for spec in schema.inputs if not isinstance(spec.type, DataType)]
    if not kinds or not all(isinstance(item, list) for item in example):
        return
    raise ExampleFormError(
        f"input_example is a list of lists: MLflow infers one column of type {kinds[0]} from it, and its own schema "
        "enforcement refuses the example for that column (it splits the lists into scalar columns: "
        "pd.DataFrame(input_example)), so MLflow logs such a model without a signature; pass "
        "np.array(input_example) for a tensor, or pd.DataFrame(input_example) for columns 0, 1, ..."
    )


def example_columns(example: Any, schema: Schema | None) -> set[Any] | None:
    """The column names ``example`` gives for a column ``schema`` (as its schema enforcement frames it), or None
    where it is no frame (a tensor schema, an array)."""
    if schema is None or schema.is_tensor_spec():
        return None
    framed = for_prediction(copy.deepcopy(example), schema)
    return set(framed.columns) if isinstance(framed, pd.DataFrame) else None


def for_request(example: Any, schema: Schema | None) -> Any:
    """``example`` as the runtime's codecs encode it into the request for the input ``schema``: a dict of scalars
    or a scalar as one row (a list, so values keep their exact Python types), a sparse matrix as its dense array,
    any other form as :func:`for_prediction` gives it."""
    if is_sparse(example):
        return example.toarray()
    columns = schema is not None and not schema.is_tensor_spec()
    if columns and (is_scalar_record(example) or is_scalar(example)):
        return [example]
    return for_prediction(example, schema)
