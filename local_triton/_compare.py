"""What Triton should answer, and whether it did.

The oracle is MLflow itself: ``mlflow.pyfunc.load_model(...).predict(value)`` encoded into the
configured output tensors by the runtime's own output codec. :func:`compare` checks every output
for its presence, shape and dtype first; then values: exactly for integers, booleans and strings,
and within :data:`FLOAT_TOLERANCES` for floats, where NaN equals NaN at the same position, NaN
against a number is a difference, and -0.0 equals 0.0 (``exact=True`` compares floats bit for bit
instead: NaN equal to NaN, the sign of zero counts). An output Triton sent but nobody configured
is a difference too. The recorded figures are finite, so a report is standard JSON.

Fields MLflow fills afresh on every call cannot equal the oracle's: :data:`VOLATILE_FIELDS` names
them per MLflow task, and :func:`volatile_outputs` finds them in a repository; they are compared by
what they must be (a UUID, a time close to the oracle's own call), never skipped.
"""

import uuid
from pathlib import Path

import numpy as np

from mlflow_triton.repository.config import declarations, read_config, wire_arrays
from mlflow_triton.repository.layout import CONFIG_FILE
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
    "volatile_outputs",
]

# Floats are compared with these tolerances (relative, absolute) by the answer's dtype; everything else exactly.
FLOAT_TOLERANCES = {"float16": (1e-2, 1e-3), "float32": (1e-4, 1e-6), "float64": (1e-6, 1e-9)}

# MLflow's LLM tasks answer each row with ``"id": str(uuid.uuid4())`` and ``"created": int(time.time())``
# (mlflow/transformers/llm_inference_utils.py): output field -> what its value must be.
UUID, CALL_TIME = "a fresh UUID per row", "the time of the call, in epoch seconds"
VOLATILE = "volatile"  # how a volatile output's comparison begins
VOLATILE_FIELDS = {
    "llm/v1/chat": {"id": UUID, "created": CALL_TIME},
    "llm/v1/completions": {"id": UUID, "created": CALL_TIME},
}
# How far an answer's ``created`` may be from the oracle's own call (the server answers minutes later at most).
CALL_TIME_WINDOW_SECONDS = 3600


def output_codec(model_dir):
    """The runtime's codec for the outputs configured in ``model_dir/config.pbtxt``."""
    config, contract = read_config(Path(model_dir) / CONFIG_FILE)
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


def volatile_outputs(model_dir):
    """``{output tensor: what it must be}`` for the fields of :data:`VOLATILE_FIELDS` the model under
    ``model_dir/1/artifact`` answers (its MLflow task in the MLmodel's metadata); empty for other models."""
    from mlflow.models import Model

    task = (Model.load(str(Path(model_dir) / "1" / "artifact" / "MLmodel")).metadata or {}).get("task")
    fields = VOLATILE_FIELDS.get(task, {})
    _, contract = read_config(Path(model_dir) / CONFIG_FILE)
    return {f.tensor: fields[f.name] for f in contract.outputs.fields if f.name in fields}


def predict_outputs(pyfunc_model, value, model_dir, params=None):
    """``pyfunc_model.predict(value, params=params)`` encoded into the configured output tensors, in the shapes
    Triton answers (a batched repository answers a rank-one output as ``[rows, 1]``)."""
    prediction = pyfunc_model.predict(value) if params is None else pyfunc_model.predict(value, params=params)
    config, _ = read_config(Path(model_dir) / CONFIG_FILE)
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


def compare(expected, actual, exact=False, volatile=None):
    """Per output name: ``{"equal": bool, "how": str}`` (+ ``"max_abs_diff"`` for floats).

    ``expected`` and ``actual`` map tensor names to arrays. ``how`` says how an equal output was
    compared, or why an output is unequal: missing from ``actual``, not expected at all, another
    shape or dtype, or how many elements differ and the first of them. ``max_abs_diff`` is the
    largest absolute difference between finite elements of the same shape and dtype (0.0 when
    there are none): always a finite float. ``volatile`` (:func:`volatile_outputs`) names the outputs
    compared by what their values must be instead.
    """
    volatile = volatile or {}
    results = {
        name: _compare_volatile(want, actual.get(name), volatile[name])
        if name in volatile
        else _compare_one(want, actual.get(name), exact)
        for name, want in expected.items()
    }
    for name in sorted(set(actual) - set(expected), key=str):
        results[name] = {"equal": False, "how": f"not a configured output: expected only {sorted(expected)}"}
    return results


def differences(expected, actual, exact=False, volatile=None):
    """``["<name>: <why>", ...]`` for every unequal output of :func:`compare`; empty when all are equal."""
    return [
        f"{name}: {result['how']}"
        for name, result in compare(expected, actual, exact, volatile).items()
        if not result["equal"]
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


def _compare_volatile(want, got, rule):
    """A field MLflow fills per call: the same dtype and shape, and every element what ``rule`` says."""
    if got is None:
        return {"equal": False, "how": "missing from the response"}
    want, got = np.asarray(want), np.asarray(got)
    if got.dtype != want.dtype or got.shape != want.shape:
        return _compare_one(want, got, exact=True)
    if rule == UUID:
        same = np.array([_is_uuid(item) for item in got.ravel()], dtype=bool)
    else:  # CALL_TIME
        same = (np.abs(got.astype(np.int64) - want.astype(np.int64)) <= CALL_TIME_WINDOW_SECONDS).ravel()
    how = f"{VOLATILE} ({rule}): checked as such, not by value"
    if not same.all():
        index = int(np.flatnonzero(~same)[0])
        how = f"{VOLATILE} ({rule}): element {index} is not one (got {_shown(got.ravel()[index])})"
    return {"equal": bool(same.all()), "how": how}


def _is_uuid(item):
    try:
        uuid.UUID(item.decode("utf-8") if isinstance(item, bytes) else str(item))
    except ValueError:
        return False
    return True


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
