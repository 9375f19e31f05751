"""``RecipeEstimator``: a scikit-learn estimator whose predictions are named operations on its input."""

import numpy as np
import pandas as pd
from fidelity_models import ops
from sklearn.base import BaseEstimator

FORMS = ("array", "frame", "series", "dict")


class RecipeEstimator(BaseEstimator):
    """Predicts ``outputs`` -- ``(key, source, operation)`` triples -- from its input.

    ``source`` picks the input field: a column label of a DataFrame, a key of a dict of ndarrays,
    ``None`` for an ndarray. ``form`` says how the outputs are returned: ``array`` (the single
    output's ndarray), ``frame`` (a DataFrame with one column per output, labelled by ``key``),
    ``series`` (the single output as a Series named ``key``) or ``dict`` (``{key: ndarray}``).
    With ``fixed_width=True``, text and binary arrays are returned as fixed-width ``str`` /
    ``bytes`` arrays instead of object arrays (``array`` and ``dict`` forms).
    """

    def __init__(self, outputs=(), form="array", fixed_width=False):
        self.outputs = outputs
        self.form = form
        self.fixed_width = fixed_width

    def fit(self, X, y=None):
        return self

    def predict(self, X):
        results = [
            (key, self._finished(ops.apply(operation, _field(X, source)))) for key, source, operation in self.outputs
        ]
        if self.form == "array":
            [(_, values)] = results
            return values
        if self.form == "series":
            [(key, values)] = results
            return pd.Series(values, name=key)
        if self.form == "frame":
            return pd.DataFrame({key: values for key, values in results})
        return dict(results)

    def _finished(self, values):
        if not self.fixed_width or self.form not in ("array", "dict") or values.dtype != object:
            return values
        binary = any(isinstance(item, bytes) for item in values.flat)
        return values.astype(bytes if binary else str)


def _field(X, source):
    if isinstance(X, pd.DataFrame):
        return X[source].to_numpy()
    if isinstance(X, dict):
        return np.asarray(X[source])
    return np.asarray(X)
