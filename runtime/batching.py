"""Dynamic batching's rows: requests grouped, their decoded fields joined, the joint prediction split back.

``triton_model.py`` reads the requests, decides which are joined and answers them; this
module only groups, counts, joins and splits, so it never sees a Triton request or
response. The codecs decode each request into its fields' arrays, rows along the first
axis (``{field: array}``), and build the model input (a DataFrame, an ndarray or a dict of
ndarrays) from them. Requests are joined field by field (:func:`join_fields`), so the model
input is built once; where that could give another value than joining each request's own
model input as before (:func:`join_inputs`, ``pd.concat`` for a DataFrame), it is not done.
Row counts that do not line up raise ``RowCountError``; whose fault that is (the request's
tensors or the model's prediction) is for the caller to say.
"""

import numpy as np
import pandas as pd

# <mlflow-triton package imports: removed when composing model.py>
from .errors import RowCountError

# </mlflow-triton package imports>


def group_positions(keys):
    """``[[position, ...], ...]``: the positions of equal keys, each group in order, groups by first appearance."""
    groups = {}
    for position, key in enumerate(keys):
        groups.setdefault(key, []).append(position)
    return list(groups.values())


def count_rows(arrays):
    """The row count of decoded arrays ``{name: array}``: their first axis, the same in all (0 without any)."""
    counts = {name: len(array) for name, array in arrays.items()}
    if len(set(counts.values())) > 1:
        detail = ", ".join(f"{name}: {count}" for name, count in counts.items())
        raise RowCountError(f"Batched input tensors must have the same number of rows (first axis); got {detail}")
    return next(iter(counts.values()), 0)


def join_fields(parts, alike=None):
    """The decoded fields ``{field: array}`` of several requests as one, each field's rows joined in order; None
    where a model input built once from them could differ from the requests' own model inputs joined
    (:func:`join_inputs`): the requests sent other fields, or a field's arrays differ in dtype, or ``alike(field,
    arrays)``, where given, says no (a DataFrame's object column is typed by pandas from its values)."""
    first = parts[0]
    if any(list(part) != list(first) for part in parts):
        return None
    joined = {}
    for field in first:
        arrays = [part[field] for part in parts]
        if any(array.dtype != arrays[0].dtype for array in arrays) or (alike and not alike(field, arrays)):
            return None
        joined[field] = np.concatenate(arrays)
    return joined


def join_inputs(values):
    """Model inputs of the same structure as one, rows in order (the codecs gave them equal dtypes)."""
    first = values[0]
    if isinstance(first, pd.DataFrame):
        return pd.concat(values, ignore_index=True)
    if isinstance(first, dict):
        return {name: np.concatenate([value[name] for value in values]) for name in first}
    return np.concatenate(values)


def check_output_rows(outputs, rows):
    """Every encoded output tensor ``{name: array}`` has ``rows`` rows: one per input row."""
    for name, array in outputs.items():
        if array.shape[0] != rows:
            raise RowCountError(
                f"Output tensor `{name}` has {array.shape[0]} row(s) for {rows} input row(s); a batched model must "
                "answer one row per input row"
            )


def split_outputs(outputs, counts):
    """``[{name: rows of one request}]`` in request order, ``counts`` rows each."""
    offsets = np.cumsum(counts)[:-1]
    parts = {name: np.split(array, offsets) for name, array in outputs.items()}
    return [{name: pieces[index] for name, pieces in parts.items()} for index in range(len(counts))]
