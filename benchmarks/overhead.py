"""Runtime overhead in process: the runtime's decode + encode versus ``predict``.

A sklearn Pipeline over 20 columns (15 numeric, 5 text; StandardScaler + OneHotEncoder ->
LogisticRegression, ``predict_proba``) is saved with ``mlflow_triton.sklearn.save_model``. The
runtime pieces are then built exactly as the generated ``model.py`` builds them in
``initialize``: the contract and tensor types from the generated ``config.pbtxt`` (as the JSON
model config Triton passes), the two ``StructureCodec``s, and the predictor from
``runtime.loading.load_predictor`` on ``1/artifact``.

A 1,000-row request is encoded into the tensors a client sends (BYTES as object arrays of
``bytes``, as ``pb_utils.Tensor.as_numpy`` hands them to ``execute``) and, per iteration::

    model_input = inputs.from_tensors(arrays)      # decode
    prediction  = predictor.predict(model_input)   # predict (MLflow pyfunc, schema enforcement included)
    outputs     = outputs.to_tensors(prediction)   # encode

Overhead = median(decode + encode) / median(decode + predict + encode). Triton's own tensor
transport (``as_numpy``, ``pb_utils.Tensor``) is the same for any Python-backend model and is
not counted. When the overhead exceeds the target, the decode + encode path is profiled with
cProfile and the top functions are returned.
"""

from __future__ import annotations

import cProfile
import io
import pstats
import shutil
import time
from pathlib import Path

import numpy as np

TARGET_FRACTION = 0.05
NUMERIC_COLUMNS = 15
TEXT_COLUMNS = 5


def mixed_frame(rows: int, seed: int = 0):
    import pandas as pd

    rng = np.random.default_rng(seed)
    data = {f"num_{i:02d}": rng.normal(i, 1.0 + i / 10, rows) for i in range(NUMERIC_COLUMNS)}
    for j in range(TEXT_COLUMNS):
        vocabulary = np.array([f"category {j}-{k}" for k in range(4 + 3 * j)])
        data[f"text_{j}"] = vocabulary[rng.integers(0, len(vocabulary), rows)]
    return pd.DataFrame(data)


def fitted_mixed_pipeline(rows: int = 400):
    from sklearn.compose import ColumnTransformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    frame = mixed_frame(rows)
    numeric = [c for c in frame.columns if c.startswith("num_")]
    text = [c for c in frame.columns if c.startswith("text_")]
    label = ((frame["num_03"] > 3) ^ (frame["text_0"] == "category 0-1")).astype(int)
    pipeline = Pipeline(
        [
            (
                "preprocessing",
                ColumnTransformer(
                    [("numeric", StandardScaler(), numeric), ("text", OneHotEncoder(handle_unknown="ignore"), text)]
                ),
            ),
            ("classifier", LogisticRegression(max_iter=500)),
        ]
    )
    return pipeline.fit(frame, label), frame


def build_runtime(work_dir: Path):
    """(input codec, output codec, predictor) as ``TritonPythonModel.initialize`` builds them."""
    from google.protobuf import json_format

    from mlflow_triton import sklearn as triton_sklearn
    from mlflow_triton.repository.config import read_config
    from mlflow_triton.runtime.codecs import StructureCodec, tensor_types_from_model_config
    from mlflow_triton.runtime.loading import load_predictor
    from mlflow_triton.shared_contract.contract import contract_from_model_config

    package = Path(work_dir) / "mixed"
    shutil.rmtree(package, ignore_errors=True)
    pipeline, frame = fitted_mixed_pipeline()
    triton_sklearn.save_model(pipeline, package, input_example=frame.iloc[:3], pyfunc_predict_fn="predict_proba")
    (model_dir,) = (package / "model_repository").iterdir()
    config, _ = read_config(model_dir / "config.pbtxt")
    # Triton hands model.py its config as JSON with enum names, like protobuf's JSON mapping.
    model_config = json_format.MessageToDict(config, preserving_proto_field_name=True)
    contract = contract_from_model_config(model_config)
    inputs = StructureCodec(contract.inputs, tensor_types_from_model_config(model_config, "input"))
    outputs = StructureCodec(contract.outputs, tensor_types_from_model_config(model_config, "output"))
    predictor = load_predictor(model_dir / "1" / "artifact", contract.flavor, "cpu")
    return inputs, outputs, predictor


def measure(
    work_dir: Path,
    *,
    rows: int = 1000,
    seconds: float = 5.0,
    max_iterations: int = 2000,
    min_iterations: int = 20,
    progress=print,
) -> dict:
    progress("[overhead] saving a 20-column mixed Pipeline and loading it like model.py does ...")
    inputs, outputs, predictor = build_runtime(work_dir)
    arrays = inputs.to_tensors(mixed_frame(rows, seed=1))  # what a client sends
    for _ in range(3):  # warm-up
        outputs.to_tensors(predictor.predict(inputs.from_tensors(arrays)))

    decode, predict, encode = [], [], []
    deadline = time.monotonic() + seconds
    while len(decode) < max_iterations and (len(decode) < min_iterations or time.monotonic() < deadline):
        t0 = time.perf_counter()
        model_input = inputs.from_tensors(arrays)
        t1 = time.perf_counter()
        prediction = predictor.predict(model_input)
        t2 = time.perf_counter()
        outputs.to_tensors(prediction)
        t3 = time.perf_counter()
        decode.append(t1 - t0)
        predict.append(t2 - t1)
        encode.append(t3 - t2)
    d, p, e = (float(np.median(x)) for x in (decode, predict, encode))
    fraction = (d + e) / (d + p + e)
    result = {
        "rows": rows,
        "columns": NUMERIC_COLUMNS + TEXT_COLUMNS,
        "iterations": len(decode),
        "decode_ms": d * 1e3,
        "predict_ms": p * 1e3,
        "encode_ms": e * 1e3,
        "fraction": fraction,
        "target": TARGET_FRACTION,
        "met": fraction <= TARGET_FRACTION,
        "profile": None,
    }
    if not result["met"]:
        result["profile"] = profile(inputs, outputs, arrays, prediction)
    return result


def profile(inputs, outputs, arrays, prediction, repeat: int = 50, top: int = 12) -> str:
    """cProfile of decode + encode (``repeat`` times), top functions by internal time."""
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(repeat):
        inputs.from_tensors(arrays)
        outputs.to_tensors(prediction)
    profiler.disable()
    buffer = io.StringIO()
    pstats.Stats(profiler, stream=buffer).sort_stats("tottime").print_stats(top)
    return buffer.getvalue()
