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

A repository speaking MLflow's serving protocol answers MLflow's JSON body in its ``response`` tensor; the oracle is
MLflow's own ``/invocations`` code on the same body (:func:`protocol_outputs`), and the two bodies are parsed and
compared by value (:data:`MLFLOW_BODY`): floats within the float64 tolerances, everything else exactly, and the keys
filled per call in chat, completions and agent answers (:data:`BODY_VOLATILE_KEYS`: ``id``, ``created``,
``created_at``) by what they must be.
"""

import json
import math
import uuid
from pathlib import Path

import numpy as np

from mlflow_triton.repository.config import declarations, read_config, wire_arrays
from mlflow_triton.repository.layout import CONFIG_FILE, MLMODEL_FILE, artifact_directory
from mlflow_triton.runtime.codecs import StructureCodec
from mlflow_triton.runtime.protocol import (
    JSON_CONTENT_TYPE,
    OK,
    MlflowProtocol,
    outside_serving_environment,
    response_tensors,
    serving_environment,
)
from mlflow_triton.shared_contract import MLFLOW_PROTOCOL, RESPONSE_TENSOR

from ._stream import shipped_body

__all__ = [
    "FLOAT_TOLERANCES",
    "compare",
    "differences",
    "expected_outputs",
    "load_input_example",
    "load_input_example_params",
    "output_codec",
    "predict_outputs",
    "protocol_outputs",
    "speaks_mlflow_protocol",
    "volatile_outputs",
]

# Floats are compared with these tolerances (relative, absolute) by the answer's dtype; everything else exactly.
FLOAT_TOLERANCES = {"float16": (1e-2, 1e-3), "float32": (1e-4, 1e-6), "float64": (1e-6, 1e-9)}

# MLflow's LLM tasks answer each row with ``"id": str(uuid.uuid4())`` and ``"created": int(time.time())``
# (mlflow/transformers/llm_inference_utils.py); a ChatModel (task ``agent/v1/chat``, mlflow/pyfunc/model.py) answers
# MLflow's ``created`` and an ``id`` of its own, drawn per call where it is a UUID: output field -> what its value must
# be. A UUID is required only where the oracle's element is one; another value is compared as it is.
UUID, CALL_TIME = "a fresh UUID per row", "the time of the call, in epoch seconds"
VOLATILE = "volatile"  # how a volatile output's comparison begins
VOLATILE_FIELDS = {
    "llm/v1/chat": {"id": UUID, "created": CALL_TIME},
    "llm/v1/completions": {"id": UUID, "created": CALL_TIME},
    "agent/v1/chat": {"id": UUID, "created": CALL_TIME},
}
# How far an answer's ``created`` may be from the oracle's own call (the server answers minutes later at most).
CALL_TIME_WINDOW_SECONDS = 3600
# The rule for the ``response`` of an MLflow-protocol repository: MLflow's JSON body, compared parsed.
MLFLOW_BODY = "MLflow's JSON body, compared as parsed values"
# How a value MLflow's own two answers to one body give differently is judged; the marker of "no second answer".
VARIES = "judged by JSON type (the model draws them anew on every call, in MLflow's server too)"
_ONE_ANSWER = object()
# Keys of that body filled afresh per call, in every chat, completions and agent answer: key -> what it must be. MLflow
# fills a ChatModel answer's ``created`` (``int(time.time())``) and its tool calls' ``id`` (``uuid4``,
# mlflow/types/llm.py); a ChatAgent's messages and a ResponsesAgent's output items must carry an ``id`` the agent
# draws per call (MLflow refuses a ChatAgentResponse without one and says to use ``str(uuid.uuid4())``; its Responses
# helpers draw ``uuid4`` where the source has none, mlflow/types/responses.py), and a Responses answer's
# ``created_at`` is the time of the call in float seconds (mlflow/types/responses_helpers.py). An ``id`` is judged as a
# UUID only where the oracle's is one: any other id is compared by value. A ResponsesAgent's stream events name their
# output item by ``item_id`` (the same per-call uuid4).
BODY_VOLATILE_KEYS = {"id": UUID, "item_id": UUID, "created": CALL_TIME, "created_at": CALL_TIME}


def output_codec(model_dir):
    """The runtime's codec for the outputs configured in ``model_dir/config.pbtxt``."""
    config, contract = read_config(Path(model_dir) / CONFIG_FILE)
    _, outputs = declarations(config)
    return StructureCodec(contract.outputs, {d.name: (d.data_type, d.dims) for d in outputs}, prediction=True)


def load_input_example(model_dir):
    """The input example saved with the MLflow package served under ``model_dir/1/artifact``."""
    from mlflow.models import Model

    artifact = artifact_directory(model_dir)
    return Model.load(str(artifact / MLMODEL_FILE)).load_input_example(str(artifact))


def load_input_example_params(model_dir):
    """The params of an ``(input, params)`` example saved under ``model_dir/1/artifact`` (the shipped request
    carries them as its parameters), or None."""
    from mlflow.models import Model

    artifact = artifact_directory(model_dir)
    return Model.load(str(artifact / MLMODEL_FILE)).load_input_example_params(str(artifact))


def speaks_mlflow_protocol(model_dir):
    """Whether the repository's contract says MLflow's serving protocol (``protocol="mlflow"``)."""
    _, contract = read_config(Path(model_dir) / CONFIG_FILE)
    return contract.protocol == MLFLOW_PROTOCOL


class ScoringRefusal(ValueError):
    """MLflow's scoring code refused a body: the message names the body and says MLflow's status and message."""


def protocol_outputs(pyfunc_model, model_dir, body=None, content_type=JSON_CONTENT_TYPE, what="the shipped body"):
    """What MLflow's scoring server answers to ``body`` (bytes; default: the body of the shipped ``request.json``)
    sent with ``content_type``, as the ``response`` tensor; a refusal is a :class:`ScoringRefusal` naming ``what``
    (which body: the shipped one, the input file's), MLflow's status and message. The body is answered twice: the
    tensor holds both answers, and where they differ (a value the model
    draws at random on every call, as Prophet's intervals) :func:`compare` judges Triton's answer by its JSON type."""
    if body is None:
        body = shipped_body(model_dir).encode("utf-8")
    answers = []
    for _ in range(2):
        with serving_environment():
            answer = MlflowProtocol(pyfunc_model).answer(body, content_type)
        if answer.status != OK:
            raise ScoringRefusal(f"MLflow's scoring code refuses {what}: {answer.reason}")
        answers.append(response_tensors(answer)[RESPONSE_TENSOR].ravel()[0])
    return {RESPONSE_TENSOR: np.array(answers, dtype=object)}


def stream_chunks(pyfunc_model, body):
    """The chunks ``pyfunc.predict_stream`` yields for ``body`` (bytes), each as the JSON text the streaming model
    sends: MLflow's parser and ``predict_stream`` through the runtime's own protocol code, in MLflow's serving mark."""
    with serving_environment():
        return list(MlflowProtocol(pyfunc_model).stream(body))


def volatile_outputs(model_dir):
    """``{output tensor: what it must be}`` for the fields of :data:`VOLATILE_FIELDS` the model under
    ``model_dir/1/artifact`` answers (its MLflow task in the MLmodel's metadata); empty for other models.
    An MLflow-protocol repository's ``response`` is :data:`MLFLOW_BODY`."""
    from mlflow.models import Model

    mlmodel = artifact_directory(model_dir) / MLMODEL_FILE
    if not mlmodel.is_file():  # an export-onnx directory: no MLflow model
        return {}
    if speaks_mlflow_protocol(model_dir):
        return {RESPONSE_TENSOR: MLFLOW_BODY}

    task = (Model.load(str(mlmodel)).metadata or {}).get("task")
    fields = VOLATILE_FIELDS.get(task, {})
    _, contract = read_config(Path(model_dir) / CONFIG_FILE)
    return {f.tensor: fields[f.name] for f in contract.outputs.fields if f.name in fields}


def predict_outputs(pyfunc_model, value, model_dir, params=None):
    """``pyfunc_model.predict(value, params=params)`` encoded into the configured output tensors, in the shapes
    Triton answers (a batched repository answers a rank-one output as ``[rows, 1]``). Predicted outside MLflow's serving
    mark, as the typed repository's model predicts."""
    with outside_serving_environment():
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


def export_tolerance(model_dir):
    """``(rtol, atol)`` of a text export's parity (its network computes in float32; handoff.json records it), for
    every float it answers, FP64 ones and floats inside JSON text too; None for every other model directory."""
    handoff = Path(model_dir) / "handoff.json"
    if not handoff.is_file():
        return None
    recorded = json.loads(handoff.read_text(encoding="utf-8"))
    if "task" not in recorded:
        return None
    floats = recorded["parity"]["tolerances"]["floats"]
    return floats["rtol"], floats["atol"]


def compare(expected, actual, exact=False, volatile=None, tolerance=None):
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
        else _compare_one(want, actual.get(name), exact, tolerance)
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


def _compare_one(want, got, exact, tolerance=None):
    if got is None:
        return {"equal": False, "how": "missing from the response"}
    want, got = np.asarray(want), np.asarray(got)
    if got.dtype != want.dtype:
        return {"equal": False, "how": f"dtype {got.dtype} != expected {want.dtype}"}
    if got.shape != want.shape:
        return {"equal": False, "how": f"shape {list(got.shape)} != expected {list(want.shape)}"}
    if want.dtype.kind == "f":
        return _compare_floats(want, got, exact, tolerance)
    if want.dtype == object:
        want = np.array([_as_bytes(v) for v in want.ravel()], dtype=object).reshape(want.shape)
        same = np.array([g == w for g, w in zip(got.ravel(), want.ravel())], dtype=bool)
        if tolerance is not None and not same.all():  # a text export's JSON text: its floats within the tolerance
            same = np.array([_same_json(g, w, tolerance) for g, w in zip(got.ravel(), want.ravel())], dtype=bool)
            if same.all():
                return {"equal": True, "how": f"JSON text, floats allclose rtol={tolerance[0]} atol={tolerance[1]}"}
    else:
        same = (got == want).ravel()
    return {"equal": bool(same.all()), "how": _how(same, got, want, "exact")}


def _compare_volatile(want, got, rule):
    """A field MLflow fills per call: the same dtype and shape, and every element what ``rule`` says."""
    if got is None:
        return {"equal": False, "how": "missing from the response"}
    if rule == MLFLOW_BODY:
        return _compare_body(want, got)
    want, got = np.asarray(want), np.asarray(got)
    if got.dtype != want.dtype or got.shape != want.shape:
        return _compare_one(want, got, exact=True)
    if rule == UUID:
        pairs = zip(got.ravel(), want.ravel())
        same = np.array(
            [_is_uuid(item) if _is_uuid(wanted) else _as_bytes(item) == _as_bytes(wanted) for item, wanted in pairs],
            dtype=bool,
        )
    else:  # CALL_TIME
        same = (np.abs(got.astype(np.int64) - want.astype(np.int64)) <= CALL_TIME_WINDOW_SECONDS).ravel()
    how = f"{VOLATILE} ({rule}): checked as such, not by value"
    if not same.all():
        index = int(np.flatnonzero(~same)[0])
        how = f"{VOLATILE} ({rule}): element {index} is not one (got {_shown(got.ravel()[index])})"
    return {"equal": bool(same.all()), "how": how}


def compare_chunks(want, got):
    """A stream's chunks (JSON texts, in order) against ``pyfunc.predict_stream``'s: ``{"equal": bool, "how": str}``,
    each chunk compared as :data:`MLFLOW_BODY`; ``how`` names the first chunk that differs."""
    if len(got) != len(want):
        return {"equal": False, "how": f"{len(got)} chunk(s), expected {len(want)} (pyfunc.predict_stream's)"}
    how = f"{len(want)} chunk(s) in order, each as {MLFLOW_BODY}"
    for number, (wanted, answered) in enumerate(zip(want, got), start=1):
        result = _compare_body(np.array([wanted.encode()], dtype=object), np.array([answered.encode()], dtype=object))
        if not result["equal"]:
            return {"equal": False, "how": f"chunk {number} of {len(want)}: {result['how']}"}
    return {"equal": True, "how": how}


def _compare_body(want, got):
    """Two MLflow JSON bodies (one-element BYTES arrays), parsed: equal values, per-call keys by their rule."""
    rtol, atol = FLOAT_TOLERANCES["float64"]
    how = (
        f"{MLFLOW_BODY} (floats allclose rtol={rtol} atol={atol}; "
        f"{', '.join(f'{key}: {rule}' for key, rule in BODY_VOLATILE_KEYS.items())})"
    )
    try:
        got_body = json.loads(_as_bytes(np.asarray(got).ravel()[0]))
    except (ValueError, IndexError) as error:
        return {"equal": False, "how": f"{MLFLOW_BODY}: the answer is not one JSON body ({error})"}
    first, *again = (json.loads(_as_bytes(body)) for body in np.asarray(want).ravel())
    varying = []
    where = _body_difference(
        first, got_body, "$", rtol, atol, again=again[0] if again else _ONE_ANSWER, varying=varying
    )
    if varying:
        shown = ", ".join(varying[:3]) + (", ..." if len(varying) > 3 else "")
        how += f"; {len(varying)} value(s) differ between two of MLflow's own answers to the body ({shown}): {VARIES}"
    if where is None:
        return {"equal": True, "how": how}
    return {"equal": False, "how": f"{MLFLOW_BODY}: {where}"}


def _body_difference(want, got, path, rtol, atol, key=None, again=_ONE_ANSWER, varying=None):
    """Where two parsed JSON values first differ (a JSON path and both values), or None. ``again``: a second answer
    of MLflow's to the same body (default :data:`_ONE_ANSWER`: none); where it differs from ``want``, ``got`` is
    judged by its JSON type only and the path is added to ``varying``."""
    if again is not _ONE_ANSWER and not _same_frame(want, again):
        return _varies(want, got, path, varying)
    rule = BODY_VOLATILE_KEYS.get(key)
    if rule == UUID and isinstance(want, str) and _is_uuid(want):
        return None if isinstance(got, str) and _is_uuid(got) else f"{path} is not {rule} (got {_shown(got)})"
    if rule == CALL_TIME and type(want) in (int, float):  # ``created`` is int seconds, ``created_at`` float
        close = type(got) is type(want) and abs(got - want) <= CALL_TIME_WINDOW_SECONDS
        return None if close else f"{path} is not {rule} (got {_shown(got)}, the oracle's {want})"
    if isinstance(want, dict) and isinstance(got, dict):
        if list(want) != list(got):
            return f"{path} has keys {list(got)}, expected {list(want)}"
        for name in want:
            other = again[name] if again is not _ONE_ANSWER else _ONE_ANSWER
            found = _body_difference(want[name], got[name], f"{path}.{name}", rtol, atol, name, other, varying)
            if found is not None:
                return found
        return None
    if isinstance(want, list) and isinstance(got, list):
        if len(want) != len(got):
            return f"{path} has {len(got)} items, expected {len(want)}"
        for index, (one, other) in enumerate(zip(want, got)):
            second = again[index] if again is not _ONE_ANSWER else _ONE_ANSWER
            found = _body_difference(one, other, f"{path}[{index}]", rtol, atol, again=second, varying=varying)
            if found is not None:
                return found
        return None
    if again is not _ONE_ANSWER and _body_difference(want, again, path, rtol, atol, key) is not None:
        return _varies(want, got, path, varying)
    if type(want) is float and type(got) in (int, float):
        if math.isclose(got, want, rel_tol=rtol, abs_tol=atol) or (math.isnan(want) and math.isnan(got)):
            return None
    elif type(want) is type(got) and want == got:
        return None
    return f"{path} is {_shown(got)}, expected {_shown(want)}"


def _same_frame(want, again):
    """Whether two of MLflow's answers have the same frame here: dicts with the same keys, lists of the same length,
    or two values that are neither."""
    if isinstance(want, dict) or isinstance(again, dict):
        return isinstance(want, dict) and isinstance(again, dict) and list(want) == list(again)
    if isinstance(want, list) or isinstance(again, list):
        return isinstance(want, list) and isinstance(again, list) and len(want) == len(again)
    return True


def _json_kind(value):
    if isinstance(value, bool) or value is None:
        return type(value).__name__
    return "number" if isinstance(value, (int, float)) else type(value).__name__


def _varies(want, got, path, varying):
    """A value MLflow's own two answers give differently: ``got`` must be of its JSON kind."""
    if varying is not None:
        varying.append(path)
    if _json_kind(got) == _json_kind(want):
        return None
    return f"{path} is {_shown(got)}, not a {_json_kind(want)} as in MLflow's answers (which differ there per call)"


def _is_uuid(item):
    try:
        uuid.UUID(item.decode("utf-8") if isinstance(item, bytes) else str(item))
    except ValueError:
        return False
    return True


def _same_json(got, want, tolerance):
    try:
        got_value, want_value = json.loads(_as_bytes(got)), json.loads(_as_bytes(want))
    except ValueError:
        return got == want
    return _body_difference(want_value, got_value, "$", *tolerance) is None


def _compare_floats(want, got, exact, tolerance=None):
    wide_want, wide_got = want.astype(np.float64), got.astype(np.float64)
    both_nan = np.isnan(wide_want) & np.isnan(wide_got)
    with np.errstate(all="ignore"):
        if exact:
            same = ((wide_got == wide_want) & (np.signbit(wide_got) == np.signbit(wide_want))) | both_nan
            method = "bit for bit (NaN equal to NaN)"
        else:
            rtol, atol = tolerance or FLOAT_TOLERANCES.get(want.dtype.name, FLOAT_TOLERANCES["float64"])
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
