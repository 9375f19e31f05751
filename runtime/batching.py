"""Dynamic batching's rows: requests grouped, their model inputs joined, the joint prediction split back.

``triton_model.py`` reads the requests, decides which are joined and answers them; this
module only groups, counts, joins and splits, so it never sees a Triton request or
response. A model input is what the codecs decode one request into: a DataFrame, an
ndarray or a dict of ndarrays, rows along the first axis; the codecs give every request
of a model the same dtypes, so joining keeps each value as decoded. Row counts that do
not line up raise ``RowCountError``; whose fault that is (the request's tensors or the
model's prediction) is for the caller to say.
"""

import numpy as np
import pandas as pd

# <mlflow-triton package imports: removed when composing model.py>
from ..shared_contract.contract import MlflowTritonError

# </mlflow-triton package imports>


class RowCountError(MlflowTritonError, ValueError):
    """Row counts that do not line up; the message names the tensors and their counts."""


def group_positions(keys):
    """``[[position, ...], ...]``: the positions of equal keys, each group in order, groups by first appearance."""
    groups = {}
    for position, key in enumerate(keys):
        groups.setdefault(key, []).append(position)
    return list(groups.values())


def count_rows(model_input):
    """The row count of a decoded model input: a DataFrame's length or the first axis of its arrays."""
    if isinstance(model_input, dict):
        counts = {name: len(array) for name, array in model_input.items()}
        if len(set(counts.values())) > 1:
            detail = ", ".join(f"{name}: {count}" for name, count in counts.items())
            raise RowCountError(f"Batched input tensors must have the same number of rows (first axis); got {detail}")
        return next(iter(counts.values()))
    return len(model_input)


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
