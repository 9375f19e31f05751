"""Log a fitted scikit-learn Pipeline (numeric + text columns) with its Triton repository.

Run directly to log into a local sqlite MLflow store::

    python examples/sklearn_example.py
"""

import mlflow
import numpy as np
import pandas as pd
from sklearn.compose import ColumnTransformer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

from mlflow_triton import sklearn as triton_sklearn


def training_frame(rows=200, seed=0):
    """A small synthetic table: two numeric columns, one text column, a binary label."""
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame(
        {
            "sepal length (cm)": rng.normal(5.8, 0.8, rows),
            "petal_width": rng.normal(1.2, 0.7, rows),
            "colour": rng.choice(["red", "green", "blue"], rows),
        }
    )
    label = ((frame["petal_width"] > 1.2) ^ (frame["colour"] == "blue")).astype(int)
    return frame, label


def fitted_pipeline():
    frame, label = training_frame()
    preprocessing = ColumnTransformer(
        [
            ("numeric", StandardScaler(), ["sepal length (cm)", "petal_width"]),
            ("text", OneHotEncoder(handle_unknown="ignore"), ["colour"]),
        ]
    )
    pipeline = Pipeline([("preprocessing", preprocessing), ("classifier", LogisticRegression())])
    return pipeline.fit(frame, label), frame


def log_example(tracking_uri, registered_model_name="demo-classifier"):
    """Fit the demo Pipeline (no real training data involved) and log it; returns ModelInfo."""
    mlflow.set_tracking_uri(tracking_uri)
    pipeline, frame = fitted_pipeline()
    return triton_sklearn.log_model(
        pipeline,
        input_example=frame.iloc[:3],
        name="classifier",
        pyfunc_predict_fn="predict_proba",
        registered_model_name=registered_model_name,
    )


if __name__ == "__main__":
    info = log_example("sqlite:///mlruns.db")
    print(info.model_uri)
