"""Models whose input examples are not rows yet (#22.4), as MLflow's tests log them.

* ``SCALAR_RECORD``: a dict of scalars, the example of a DataFrame model (MLflow predicts it as one row);
* ``SINGLE_TEXT``: one string, the example of a model over one unnamed text column;
* ``sparse_example(kind)``: a scipy ``csr_matrix`` / ``csc_matrix`` for a model whose signature is a float tensor;
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

from tests.support import tiny_models

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

SCALAR_RECORD = {"a": 1.5, "b": -2.0}
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
