"""Real scikit-learn Pipelines for ``sklearn-pipeline`` cases, fitted on seeded synthetic data.

Numeric columns (bool, integer, long, float, double) are scaled, text columns one-hot encoded
(unknown categories ignored); columns are chosen by boolean masks, so any labels work. The estimator and
``pyfunc_predict_fn`` come from the case's options:

* ``logistic-labels`` / ``logistic-proba``: LogisticRegression, integer classes 0/1;
* ``string-labels``: LogisticRegression with the classes ``"no"`` / ``"yes"`` (a text output);
* ``ridge``: Ridge regression (float64);
* ``tree-labels``: DecisionTreeClassifier (skops needs its tree types trusted).

A ``max_batch_size`` option logs the Pipeline with dynamic batching (without the zero-row guard's front).
"""

import numpy as np
import pandas as pd
from sklearn.compose import ColumnTransformer
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler
from sklearn.tree import DecisionTreeClassifier

from .cases import field_array

ESTIMATORS = ("logistic-labels", "logistic-proba", "string-labels", "ridge", "tree-labels")
TRAINING_ROWS = 24
# How long Triton holds a request of a batched case to join it with others sent at the same time.
BATCHING_QUEUE_DELAY_MICROSECONDS = 20_000
VOCABULARY = ("a", "b", "ü", "", "名前")


def build_pipeline(case):
    """The fitted Pipeline of ``case`` and its ``log_model`` options (serialization, predict fn)."""
    estimator = case.option("estimator")
    frame = training_frame(case)
    numeric = frame.iloc[:, 0]
    target = (numeric > numeric.median()).astype(np.int64).to_numpy().copy()
    target[:2] = (0, 1)  # both classes, whatever the data
    if estimator == "string-labels":
        target = np.where(target == 1, "yes", "no")
    text = [field.kind == "text" for field in case.fields]  # boolean masks: integer labels are not positions
    columns = ColumnTransformer(
        [
            ("numbers", StandardScaler(), [not is_text for is_text in text]),
            ("text", OneHotEncoder(handle_unknown="ignore"), text),
        ]
    )
    final = {
        "ridge": Ridge(alpha=0.5),
        "tree-labels": DecisionTreeClassifier(max_depth=3, random_state=0),
    }.get(estimator, LogisticRegression(max_iter=500))
    pipeline = make_pipeline(columns, final).fit(frame, target)
    options = {"pyfunc_predict_fn": "predict_proba" if estimator == "logistic-proba" else "predict"}
    if case.option("max_batch_size"):
        options["max_batch_size"] = case.option("max_batch_size")
        options["max_queue_delay_microseconds"] = BATCHING_QUEUE_DELAY_MICROSECONDS
        # The campaign judges the batched model's answers, served as one directory; the zero-row guard's front
        # forwards them unchanged (tests/e2e/test_batching_triton.py and the batched soak judge them through it).
        options["zero_row_guard"] = False
    if case.option("serialization", "skops") == "skops":
        import skops.io

        options["serialization_format"] = "skops"
        options["skops_trusted_types"] = skops.io.get_untrusted_types(data=skops.io.dumps(pipeline))
    else:
        options["serialization_format"] = "cloudpickle"
    return pipeline, options


def training_frame(case):
    """Seeded synthetic training data with the case's columns (the first one numeric)."""
    generator = np.random.default_rng(case.option("seed", 0))
    columns = {}
    for field in case.fields:
        if field.kind == "text":
            values = tuple(generator.choice(VOCABULARY) for _ in range(TRAINING_ROWS))
            columns[field.name] = pd.Series(values, dtype="str")
        elif field.kind == "bool":
            columns[field.name] = pd.Series(generator.random(TRAINING_ROWS) > 0.5)
        else:
            values = generator.normal(0.0, 10.0, TRAINING_ROWS)
            if field.kind.startswith("int"):
                values = np.round(values)
            columns[field.name] = pd.Series(field_array(field.kind, (TRAINING_ROWS,), tuple(values)))
    return pd.DataFrame(columns)
