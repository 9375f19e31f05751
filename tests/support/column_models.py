"""A scikit-learn Pipeline over optional and datetime columns, and its example (#22.6); an identity model.

The example holds NaN (a double column), ``None`` (a string column) and NaT (a datetime column): MLflow
infers all three columns as optional. The Pipeline imputes the first two and reads the datetimes as int64
nanoseconds, so its prediction depends on every value. Saved with cloudpickle (skops refuses
``operator.methodcaller``).
"""

from __future__ import annotations

import operator

import numpy as np
import pandas as pd
from sklearn.compose import ColumnTransformer
from sklearn.impute import SimpleImputer
from sklearn.linear_model import LinearRegression
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import FunctionTransformer, OneHotEncoder

__all__ = ["NANOSECONDS_2020", "example_frame", "pipeline", "training_frame"]

NANOSECONDS_2020 = 1_577_836_800_000_000_000


def training_frame() -> pd.DataFrame:
    times = pd.to_datetime(["2020-01-01", "2020-06-01", "2021-01-01", "2021-06-01"]).as_unit("ns")
    return pd.DataFrame({"size": [1.0, 2.0, 3.0, 4.0], "city": ["a", "b", "a", "c"], "when": times})


def example_frame() -> pd.DataFrame:
    # Whole seconds: MLflow's own reading of the saved example (the oracle's input) parses one format per column.
    when = pd.to_datetime(["2020-03-01T12:00:00", None, "2021-02-01T00:00:07"])
    return pd.DataFrame({"size": [1.5, np.nan, 2.5], "city": ["a", None, "b"], "when": when})


def pipeline() -> Pipeline:
    """Imputes the double and the text column; the datetime column is read as int64 nanoseconds."""
    columns = ColumnTransformer(
        [
            ("size", SimpleImputer(), ["size"]),
            (
                "city",
                make_pipeline(
                    SimpleImputer(strategy="constant", fill_value="?"), OneHotEncoder(handle_unknown="ignore")
                ),
                ["city"],
            ),
            ("when", FunctionTransformer(operator.methodcaller("astype", "int64")), ["when"]),
        ]
    )
    frame = training_frame()
    target = frame["size"] * 2 + frame["when"].astype("int64") / NANOSECONDS_2020
    return make_pipeline(columns, LinearRegression()).fit(frame, target)


def identity_model():
    """A scikit-learn model that predicts its input frame, as MLflow's ``test_input_examples_with_nan`` model does:
    its prediction keeps the example's missing values (optional output columns). The class is defined here, inside
    the function, so cloudpickle stores it by value and Triton's environment needs no ``tests`` package."""
    from sklearn.base import BaseEstimator

    class Identity(BaseEstimator):
        def fit(self, X, y=None):
            return self

        def predict(self, X):
            return X

    return Identity()
