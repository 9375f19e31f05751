"""The input example as MLflow normalises it, before it is predicted and shipped as the request.

MLflow accepts examples that are not yet rows. Its schema enforcement (``mlflow.models.utils._enforce_schema``,
which ``pyfunc.predict`` and the scoring server apply) turns them into what a column-based model is given:

* a dict whose values are all scalars (``{"a": 1.0, "b": 2.0}``, table-question-answering's
  ``{"query": ..., "table": ...}``) becomes a one-row DataFrame;
* a scalar (``"some text"``, ``1.5``) becomes a one-row, one-column DataFrame.

Bytes are the exception: an example MLflow saves as JSON (a scalar, a dict, a list) keeps them only as base64 text,
so :func:`check_example` refuses one that holds bytes and names the DataFrame that keeps them.

A scipy sparse matrix (``csr_matrix``, ``csc_matrix``) is predicted as it is, and MLflow's serving example holds its
dense array (``_Example``: ``toarray()``), which is what a request carries.

:func:`for_prediction` gives the value the in-memory model predicts; :func:`for_request` the value the runtime's
codecs encode into the shipped request. The signature is still inferred from the caller's example, as MLflow does.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np
import pandas as pd

from .errors import InvalidArgumentError


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
    """Refuse bytes in an example MLflow saves as JSON (a scalar, a dict or a list): MLflow writes them as base64
    text and gives that text back (``Model.load_input_example``), so its saved and serving examples no longer hold
    the bytes (``mlflow models serve`` answers the text's prediction) and no check could compare with the example."""
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


def for_prediction(example: Any) -> Any:
    """``example`` as MLflow's schema enforcement hands it to a column-based model: a dict of scalars or a scalar
    as a one-row DataFrame; anything else unchanged."""
    if is_scalar_record(example):
        return pd.DataFrame([example])
    if is_scalar(example):
        return pd.DataFrame([example])
    return example


def for_request(example: Any, structure: str) -> Any:
    """``example`` as the runtime's codecs encode it into the request for a ``structure`` (``tensor``, ``tensors``,
    ``columns``) mapping: a dict of scalars or a scalar as one row (a list, so values keep their exact Python
    types), a sparse matrix as its dense array; anything else unchanged."""
    if is_sparse(example):
        return example.toarray()
    if structure == "columns" and (is_scalar_record(example) or is_scalar(example)):
        return [example]
    return example
