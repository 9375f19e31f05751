"""Models whose input examples are not rows yet (#22.4), as MLflow's tests log them.

* ``SCALAR_RECORD``: a dict of scalars, the example of a DataFrame model (MLflow predicts it as one row);
* ``SINGLE_TEXT``: one string, the example of a model over one unnamed text column;
* ``sparse_example(kind)``: a scipy ``csr_matrix`` / ``csc_matrix`` for a model whose signature is a float tensor;
* ``RECORDS``: ``df.to_dict("records")``, for ``scalar_record_regressor()`` (MLflow predicts it as its rows);
* ``LIST_OF_SCALARS``: a list of numbers, the example of ``one_column_regressor()`` (one unnamed column);
* ``LIST_OF_LISTS``: rows as lists, for ``unnamed_columns_regressor()`` with ``unnamed_columns_signature()`` (MLflow
  infers an Array column from them, so a column model needs that signature);
* ``COLUMNS``: a dict of equal-length lists (MLflow infers Array columns), with ``RowSum``, a custom estimator that
  sums whatever a row holds, as MLflow logs it;
* ``TABLE_QUESTION`` / ``shared_table_question_answering_pipeline()``: a Transformers
  ``table-question-answering`` pipeline (a tiny random TAPAS with a local WordPiece vocabulary, no model hub)
  and its ``{"query": ..., "table": ...}`` example, the table as JSON text as MLflow's tests pass it.

The scikit-learn models hold only scikit-learn classes, so they reload where Triton loads them.
"""

import atexit
import functools
import json
import os
import pathlib
import shutil
import tempfile

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator

from tests.support import tiny_models

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

SCALAR_RECORD = {"a": 1.5, "b": -2.0}
RECORDS = [{"a": 1.5, "b": -2.0}, {"a": 0.25, "b": 3.0}, {"a": -1.0, "b": 0.5}]
LIST_OF_SCALARS = [1.5, 0.25, -1.0]
LIST_OF_LISTS = [[1.5, -2.0], [0.25, 3.0], [-1.0, 0.5]]
COLUMNS = {"a": [1.5, 0.25, -1.0], "b": [-2.0, 3.0, 0.5]}
SINGLE_TEXT = "the model serves text"
TABLE_QUESTION = {
    "query": "how many people",
    "table": json.dumps({"name": ["oslo", "pune"], "people": ["1", "2"]}),
}
_TAPAS_WORDS = "[PAD] [UNK] [CLS] [SEP] [MASK] [EMPTY] how many people name oslo pune the model serves text".split()


@functools.cache
def scalar_record_regressor():
    """A LinearRegression over the double columns ``a`` and ``b``."""
    from sklearn.linear_model import LinearRegression

    frame = pd.DataFrame({"a": [1.0, 2.0, 3.0, 0.5], "b": [2.0, 1.0, 0.0, -1.0]})
    return LinearRegression().fit(frame, [1.0, 2.0, 3.5, 0.25])


@functools.cache
def one_column_regressor():
    """A LinearRegression over one unnamed double column (fitted on an array)."""
    from sklearn.linear_model import LinearRegression

    return LinearRegression().fit(np.array([[1.0], [2.0], [3.0], [0.5]]), [1.0, 2.0, 3.5, 0.25])


@functools.cache
def unnamed_columns_regressor():
    """A LinearRegression over two unnamed double columns (fitted on an array)."""
    from sklearn.linear_model import LinearRegression

    return LinearRegression().fit(np.array(LIST_OF_LISTS + [[2.0, 1.0]]), [1.0, 2.0, 3.5, 0.25])


def unnamed_columns_signature():
    """Columns ``0`` and ``1`` (double), the signature MLflow infers from ``pd.DataFrame(LIST_OF_LISTS)``."""
    from mlflow.models import infer_signature

    frame = pd.DataFrame(LIST_OF_LISTS)
    return infer_signature(frame, unnamed_columns_regressor().predict(frame.to_numpy()))


class RowSum(BaseEstimator):
    """A custom scikit-learn-style estimator: the sum of everything a row holds (lists included)."""

    def fit(self, features, target=None):
        return self

    def predict(self, features):
        frame = pd.DataFrame(features)
        return np.array([float(sum(np.sum(value) for value in row)) for row in frame.itertuples(index=False)])


@functools.cache
def text_column_regressor():
    """Word counts of the string column ``text``, then a LinearRegression."""
    from sklearn.compose import ColumnTransformer
    from sklearn.feature_extraction.text import CountVectorizer
    from sklearn.linear_model import LinearRegression
    from sklearn.pipeline import make_pipeline

    texts = pd.DataFrame({"text": ["the model", "serves text", "the text", "model serves the text"]})
    words = ColumnTransformer([("words", CountVectorizer(), "text")])
    return make_pipeline(words, LinearRegression()).fit(texts, [1.0, 2.0, 3.0, 4.0])


@functools.cache
def single_text_regressor():
    """Word counts of the first (unnamed) column, then a LinearRegression."""
    from sklearn.compose import ColumnTransformer
    from sklearn.feature_extraction.text import CountVectorizer
    from sklearn.linear_model import LinearRegression
    from sklearn.pipeline import make_pipeline

    texts = pd.DataFrame({0: ["the model", "serves text", "the text", "model serves the text"]})
    words = ColumnTransformer([("words", CountVectorizer(), 0)])
    return make_pipeline(words, LinearRegression()).fit(texts, [1.0, 2.0, 3.0, 4.0])


def sparse_example(kind):
    """A 3x4 float64 ``csr`` or ``csc`` matrix, mostly zeros."""
    from scipy import sparse

    dense = np.array([[0.0, 1.5, 0.0, 0.0], [2.0, 0.0, 0.0, -0.5], [0.0, 0.0, 3.25, 0.0]])
    return {"csr": sparse.csr_matrix, "csc": sparse.csc_matrix}[kind](dense)


@functools.cache
def sparse_regressor():
    """A LinearRegression fitted on a sparse matrix (its signature: a float64 tensor ``[-1, 4]``)."""
    from sklearn.linear_model import LinearRegression

    training = sparse_example("csr")
    return LinearRegression().fit(training, [1.0, 2.0, 3.0])


@functools.cache
def shared_table_question_answering_pipeline():
    """A table-question-answering pipeline: TAPAS with 1 layer, 16-dim hidden size. Do not change it."""
    from transformers import TapasConfig, TapasForQuestionAnswering, TapasTokenizer, pipeline

    directory = tempfile.mkdtemp(prefix="mlflow-triton-tapas-")
    atexit.register(shutil.rmtree, directory, ignore_errors=True)
    vocabulary = pathlib.Path(directory) / "vocab.txt"
    vocabulary.write_text("\n".join(_TAPAS_WORDS) + "\n", encoding="utf-8")
    tokenizer = TapasTokenizer(vocab_file=str(vocabulary))
    config = TapasConfig(
        vocab_size=len(_TAPAS_WORDS),
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=64,
    )
    model = tiny_models.seeded(lambda: TapasForQuestionAnswering(config))
    return pipeline("table-question-answering", model=model, tokenizer=tokenizer)
