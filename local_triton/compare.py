"""What Triton should answer, and whether it did.

The oracle is MLflow itself: ``mlflow.pyfunc.load_model(...).predict(value)`` encoded into the
configured output tensors by the runtime's own output codec. Answers are compared exactly for
integers, booleans and strings, and within :data:`FLOAT_TOLERANCES` for floats.
"""

from pathlib import Path

import numpy as np

from mlflow_triton._config import declarations, read_config
from mlflow_triton.runtime.codecs import StructureCodec

__all__ = ["FLOAT_TOLERANCES", "compare", "expected_outputs", "load_input_example", "output_codec", "predict_outputs"]

# Floats are compared with these tolerances (relative, absolute); everything else exactly.
FLOAT_TOLERANCES = {"float16": (1e-2, 1e-3), "float32": (1e-4, 1e-6), "float64": (1e-6, 1e-9)}


def output_codec(model_dir):
    """The runtime's codec for the outputs configured in ``model_dir/config.pbtxt``."""
    config, contract = read_config(Path(model_dir) / "config.pbtxt")
    _, outputs = declarations(config)
    return StructureCodec(contract.outputs, {d.name: (d.data_type, d.dims) for d in outputs})


def load_input_example(model_dir):
    """The input example saved with the MLflow package served under ``model_dir/1/artifact``."""
    from mlflow.models import Model

    artifact = Path(model_dir) / "1" / "artifact"
    return Model.load(str(artifact / "MLmodel")).load_input_example(str(artifact))


def predict_outputs(pyfunc_model, value, model_dir):
    """``pyfunc_model.predict(value)`` encoded into the configured output tensors."""
    return output_codec(model_dir).to_tensors(pyfunc_model.predict(value))


def expected_outputs(model_uri, model_dir):
    """``pyfunc.predict`` on the saved input example, encoded into the configured output tensors."""
    import mlflow.pyfunc

    return predict_outputs(mlflow.pyfunc.load_model(str(model_uri)), load_input_example(model_dir), model_dir)


def compare(expected, actual):
    """Per output: ``{"equal": bool, "how": ..., "max_abs_diff": ...}``; missing outputs are unequal."""
    results = {}
    for name, want in expected.items():
        got = actual.get(name)
        if got is None:
            results[name] = {"equal": False, "how": "missing from the response"}
            continue
        if got.shape != want.shape:
            results[name] = {"equal": False, "how": f"shape {list(got.shape)} != expected {list(want.shape)}"}
            continue
        if want.dtype.kind == "f":
            rtol, atol = FLOAT_TOLERANCES.get(want.dtype.name, (1e-6, 1e-9))
            got = got.astype(want.dtype)
            equal = bool(np.allclose(got, want, rtol=rtol, atol=atol, equal_nan=True))
            diff = float(np.nanmax(np.abs(got - want))) if want.size else 0.0
            results[name] = {"equal": equal, "how": f"allclose rtol={rtol} atol={atol}", "max_abs_diff": diff}
        else:
            if want.dtype == object:
                want = np.array([_as_bytes(v) for v in want.ravel()], dtype=object).reshape(want.shape)
            results[name] = {"equal": bool(np.array_equal(got, want)), "how": "exact"}
    return results


def _as_bytes(value):
    return value if isinstance(value, bytes) else str(value).encode("utf-8")
