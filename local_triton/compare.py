"""What Triton should answer, and whether it did.

The oracle is MLflow itself: ``mlflow.pyfunc.load_model(...).predict(value)`` encoded into the
configured output tensors by the runtime's own output codec. :func:`compare` checks every output
for its presence, shape and dtype first; then values: exactly for integers, booleans and strings,
and within :data:`FLOAT_TOLERANCES` for floats, where NaN equals NaN at the same position, NaN
against a number is a difference, and -0.0 equals 0.0 (``exact=True`` compares floats bit for bit
instead: NaN equal to NaN, the sign of zero counts). An output Triton sent but nobody configured
is a difference too. The recorded figures are finite, so a report is standard JSON.
"""

from pathlib import Path

import numpy as np

from mlflow_triton._config import declarations, read_config, wire_arrays
from mlflow_triton.runtime.codecs import StructureCodec

__all__ = [
    "FLOAT_TOLERANCES",
    "compare",
    "differences",
    "expected_outputs",
    "load_input_example",
    "load_input_example_params",
    "output_codec",
    "predict_outputs",
]

# Floats are compared with these tolerances (relative, absolute) by the answer's dtype; everything else exactly.
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


def load_input_example_params(model_dir):
    """The params of an ``(input, params)`` example saved under ``model_dir/1/artifact`` (the shipped request
    carries them as its parameters), or None."""
    from mlflow.models import Model

    artifact = Path(model_dir) / "1" / "artifact"
    return Model.load(str(artifact / "MLmodel")).load_input_example_params(str(artifact))


def predict_outputs(pyfunc_model, value, model_dir, params=None):
    """``pyfunc_model.predict(value, params=params)`` encoded into the configured output tensors, in the shapes
    Triton answers (a batched repository answers a rank-one output as ``[rows, 1]``)."""
    prediction = pyfunc_model.predict(value) if params is None else pyfunc_model.predict(value, params=params)
    config, _ = read_config(Path(model_dir) / "config.pbtxt")
    return wire_arrays(config, "output", output_codec(model_dir).to_tensors(prediction))


def expected_outputs(model_uri, model_dir):
    """``pyfunc.predict`` on the saved input example (and its params), encoded into the configured output tensors."""
    import mlflow.pyfunc

    return predict_outputs(
        mlflow.pyfunc.load_model(str(model_uri)),
        load_input_example(model_dir),
        model_dir,
        load_input_example_params(model_dir),
    )


def compare(expected, actual, exact=False):
    """Per output name: ``{"equal": bool, "how": str}`` (+ ``"max_abs_diff"`` for floats).

    ``expected`` and ``actual`` map tensor names to arrays. ``how`` says how an equal output was
    compared, or why an output is unequal: missing from ``actual``, not expected at all, another
    shape or dtype, or how many elements differ and the first of them. ``max_abs_diff`` is the
    largest absolute difference between finite elements of the same shape and dtype (0.0 when
    there are none): always a finite float.
    """
    results = {name: _compare_one(want, actual.get(name), exact) for name, want in expected.items()}
    for name in sorted(set(actual) - set(expected), key=str):
        results[name] = {"equal": False, "how": f"not a configured output: expected only {sorted(expected)}"}
    return results


def differences(expected, actual, exact=False):
    """``["<name>: <why>", ...]`` for every unequal output of :func:`compare`; empty when all are equal."""
    return [
        f"{name}: {result['how']}" for name, result in compare(expected, actual, exact).items() if not result["equal"]
    ]


def _compare_one(want, got, exact):
    if got is None:
        return {"equal": False, "how": "missing from the response"}
    want, got = np.asarray(want), np.asarray(got)
    if got.dtype != want.dtype:
        return {"equal": False, "how": f"dtype {got.dtype} != expected {want.dtype}"}
    if got.shape != want.shape:
        return {"equal": False, "how": f"shape {list(got.shape)} != expected {list(want.shape)}"}
    if want.dtype.kind == "f":
        return _compare_floats(want, got, exact)
    if want.dtype == object:
        want = np.array([_as_bytes(v) for v in want.ravel()], dtype=object).reshape(want.shape)
        same = np.array([g == w for g, w in zip(got.ravel(), want.ravel())], dtype=bool)
    else:
        same = (got == want).ravel()
    return {"equal": bool(same.all()), "how": _how(same, got, want, "exact")}


def _compare_floats(want, got, exact):
    wide_want, wide_got = want.astype(np.float64), got.astype(np.float64)
    both_nan = np.isnan(wide_want) & np.isnan(wide_got)
    with np.errstate(all="ignore"):
        if exact:
            same = ((wide_got == wide_want) & (np.signbit(wide_got) == np.signbit(wide_want))) | both_nan
            method = "bit for bit (NaN equal to NaN)"
        else:
            rtol, atol = FLOAT_TOLERANCES.get(want.dtype.name, FLOAT_TOLERANCES["float64"])
            same = np.isclose(wide_got, wide_want, rtol=rtol, atol=atol, equal_nan=True)
            method = f"allclose rtol={rtol} atol={atol}"
        finite = np.isfinite(wide_want) & np.isfinite(wide_got)
        gaps = np.abs(wide_got[finite] - wide_want[finite])
    gaps = gaps[np.isfinite(gaps)]
    largest = float(gaps.max()) if gaps.size else 0.0
    same = same.ravel()
    return {"equal": bool(same.all()), "how": _how(same, got, want, method), "max_abs_diff": largest}


def _how(same, got, want, method):
    if same.all():
        return method
    unequal = np.flatnonzero(~same)
    index = int(unequal[0])
    return (
        f"{unequal.size} of {same.size} element(s) differ ({method}), first at flat index {index}: "
        f"got {_shown(got.ravel()[index])}, expected {_shown(want.ravel()[index])}"
    )


def _shown(item):
    text = repr(item.item()) if isinstance(item, np.generic) else repr(item)
    return text if len(text) <= 60 else text[:57] + "..."


def _as_bytes(value):
    return value.encode("utf-8") if isinstance(value, str) else value
