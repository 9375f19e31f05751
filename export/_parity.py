"""Parity: onnxruntime against ``pyfunc.predict`` of the logged model, before anything is written.

Inputs are compared in the *logged* form (the tensors a client of the generated
repository sends). ``pyfunc`` answers each request on its own, through the
generated repository's codecs; onnxruntime answers the requests of one batch
concatenated, exactly as the exported Python-backend model runs Triton's
dynamic batches, and its rows are split back per request. Compared:

1. the saved input example;
2. its rows sent as separate one-row requests and batched together;
3. the example repeated to ``max_batch_size`` rows (the largest batch Triton forms);
4. for tree-based sklearn models reading the raw columns, every split threshold
   and its float32 / float64 neighbours (``probes``, built by the converter);
5. Hypothesis-generated batches of 1-4 requests of 1-8 rows each (every variable
   axis drawn too): floats within the example's range widened by its span on
   each side (finite values only), integers within the example's range widened
   the same way, booleans, text from the example's values or short ASCII strings.
   Generation is derandomized, so the same model is always compared on the same inputs.

Integers, booleans and text must be equal; floats within
``|onnx - pyfunc| <= atol + rtol * |pyfunc|`` (``tolerance``: FP64 as
``mlflow-triton check`` compares it, unless the graph computes the output in
FP32 and a Cast widens it, then FP32's); equal infinities are equal. A mismatch
raises ``ParityError`` with the output, the worst element, the tolerance and
the (shrunk) input that caused it.
"""

import json
import string

import numpy as np

from mlflow_triton.shared_contract import BYTES_TYPE, TRITON_TO_NUMPY

from . import _config, _deps
from ._errors import ExportError, ParityError

# (rtol, atol) per datatype the graph computes an output in; every other datatype is compared exactly.
# FP64 is mlflow-triton check's FP64 tolerance (local_triton/_compare.py).
FLOAT_TOLERANCES = {"TYPE_FP16": (1e-2, 1e-3), "TYPE_FP32": (1e-4, 1e-5), "TYPE_FP64": (1e-6, 1e-9)}
THRESHOLD_PROBES = "the trees' split thresholds and their float32 / float64 neighbours"
GENERATED_EXAMPLES = 40
MAX_REQUESTS_PER_BATCH = 4
MAX_ROWS_PER_REQUEST = 8
MAX_VARIABLE_AXIS = 16
_TEXT_ALPHABET = string.ascii_letters + string.digits + " "


def session(onnx_bytes):
    """An onnxruntime session over ``onnx_bytes`` set up as the served ``model.py`` sets its own."""
    ort = _deps.require("onnxruntime")
    return ort.InferenceSession(onnx_bytes, _config.session_options(ort), providers=["CPUExecutionProvider"])


class OnnxPredictor:
    """An onnxruntime session over the exported graph, taking and returning logged-form tensors."""

    def __init__(self, onnx_model, inputs, outputs):
        self.session = session(onnx_model.SerializeToString())
        self.inputs, self.outputs = inputs, outputs

    def predict(self, tensors):
        feeds = {t.name: t.to_graph(tensors[t.name]) for t in self.inputs}
        results = self.session.run([t.name for t in self.outputs], feeds)
        return {t.name: t.from_graph(result) for t, result in zip(self.outputs, results)}


def tolerance(tensor):
    """``(rtol, atol)`` for an output, or None when it is compared exactly: the looser of its two datatypes."""
    found = [FLOAT_TOLERANCES[t] for t in (tensor.data_type, tensor.computed_as) if t in FLOAT_TOLERANCES]
    if tensor.data_type not in FLOAT_TOLERANCES or not found:
        return None
    return max(found)


def check_parity(source, onnx, max_batch_size, examples=GENERATED_EXAMPLES, probes=None):
    """Compare; returns the parity section of handoff.json or raises ParityError.

    ``probes``: ``(tensors, thresholds)``, one logged-form request of rows at split thresholds, or None.
    """
    comparison = _Comparison(source, onnx)
    example = source.example_tensors
    rows = _rows(example)
    comparison.batch([example], "the saved input example")
    comparison.batch(
        [_take(example, slice(r, r + 1)) for r in range(rows)],
        "the saved example's rows as separate requests batched together",
    )
    repeats = -(-max_batch_size // rows)
    tiled = {name: np.concatenate([array] * repeats)[:max_batch_size] for name, array in example.items()}
    comparison.batch([tiled], f"the saved example repeated to max_batch_size ({max_batch_size}) rows")
    probed, not_probed = [], None
    if probes is not None:
        tensors, thresholds = probes
        try:
            expected = [source.predict(tensors)]
        except Exception as error:  # noqa: BLE001 - the logged model refuses these values: nothing to compare
            not_probed = (
                f"Tree splits: pyfunc.predict refused the rows at the split thresholds "
                f"({type(error).__name__}), so they were not probed specifically"
            )
        else:
            comparison.compare([tensors], expected, THRESHOLD_PROBES)
            probed = [{"what": THRESHOLD_PROBES, "requests": 1, "rows": _rows(tensors), "thresholds": thresholds}]
    generated = _generated(source, comparison, examples)
    result = {
        "passed": True,
        "reference": "mlflow.pyfunc predict of the logged model (its 1/artifact), through the generated "
        "repository's codecs, one request at a time",
        "tolerances": {
            "floats": {t: {"rtol": r, "atol": a} for t, (r, a) in FLOAT_TOLERANCES.items()},
            "outputs": {t.name: _tolerance_entry(t) for t in onnx.outputs},
            "rule": "|onnxruntime - pyfunc| <= atol + rtol * |pyfunc|, with the tolerance of the datatype the graph "
            "computes the output in; equal infinities are equal; integers, booleans and text exactly",
        },
        "inputs_compared": [
            {"what": "the saved input example", "requests": 1, "rows": rows},
            {"what": "the example's rows as separate requests, batched together", "requests": rows, "rows": rows},
            {"what": "the example repeated to max_batch_size rows", "requests": 1, "rows": max_batch_size},
            *probed,
            generated,
        ],
        "largest_differences": comparison.largest,
    }
    if not_probed:
        result["not_probed"] = not_probed
    return result


def _tolerance_entry(tensor):
    found = tolerance(tensor)
    if found is None:
        return "exact"
    return {"rtol": found[0], "atol": found[1], "computed_as": tensor.computed_as or tensor.data_type}


class _Comparison:
    def __init__(self, source, onnx):
        self.source, self.onnx = source, onnx
        self.largest = {t.name: 0.0 for t in onnx.outputs}
        self.requests = 0
        self.rows = set()

    def batch(self, requests, where):
        """pyfunc per request; onnxruntime on the concatenated batch, split back; compare."""
        expected = [self.source.predict(request) for request in requests]
        self.compare(requests, expected, where)

    def compare(self, requests, expected, where):
        batch = {name: np.concatenate([r[name] for r in requests]) for name in requests[0]}
        try:
            actual = self.onnx.predict(batch)
        except Exception as error:
            raise ParityError(
                f"Parity check failed on {where}: onnxruntime raised {type(error).__name__}: {error} where "
                f"pyfunc.predict answers. Input: {_render(requests, self.source)}. Nothing was written"
            ) from None
        offsets = np.cumsum([0, *(_rows(r) for r in requests)])
        for index, want in enumerate(expected):
            for tensor in self.onnx.outputs:
                got = actual[tensor.name][offsets[index] : offsets[index + 1]]
                self._check(tensor, want[tensor.name], got, where, requests, index)
        self.requests += len(requests)
        self.rows.update(_rows(r) for r in requests)

    def _check(self, tensor, want, got, where, requests, index):
        label = f"Parity check failed on {where}: output `{tensor.name}` of request {index + 1} of {len(requests)}"
        if got.shape != want.shape:
            raise ParityError(
                f"{label} has shape {list(got.shape)} from onnxruntime but {list(want.shape)} from pyfunc.predict. "
                f"Input: {_render(requests, self.source)}. Nothing was written"
            )
        if tolerance(tensor) is not None:
            rtol, atol = tolerance(tensor)
            want64, got64 = want.astype(np.float64), got.astype(np.float64)
            both_nan = (np.isnan(got64) & np.isnan(want64)) | (np.isinf(want64) & (got64 == want64))
            with np.errstate(invalid="ignore"):  # inf - inf: NaN, masked by both_nan
                difference = np.abs(got64 - want64)
                excess = np.where(
                    both_nan, -np.inf, np.nan_to_num(difference - (atol + rtol * np.abs(want64)), nan=np.inf)
                )
            if want.size:
                self.largest[tensor.name] = max(
                    self.largest[tensor.name], float(np.nanmax(np.where(both_nan, 0, difference)))
                )
            if want.size and excess.max() > 0:
                at = np.unravel_index(int(np.argmax(excess)), want.shape)
                raise ParityError(
                    f"{label}, element {list(map(int, at))}, is {_scalar(got[at])!r} from onnxruntime but "
                    f"{_scalar(want[at])!r} from "
                    f"pyfunc.predict: difference {difference[at]:.3g} exceeds the tolerance "
                    f"{atol:g} + {rtol:g} * |pyfunc|. Input: {_render(requests, self.source)}. Nothing was written"
                )
            return
        unequal = np.asarray(got != want)
        if unequal.any():
            at = tuple(int(i) for i in np.argwhere(unequal)[0])
            raise ParityError(
                f"{label}, element {list(at)}, is {_scalar(got[at])!r} from onnxruntime but "
                f"{_scalar(want[at])!r} from pyfunc.predict "
                f"(compared exactly). Input: {_render(requests, self.source)}. Nothing was written"
            )


def generation_settings(examples):
    """Hypothesis settings of every parity check: derandomized (the same model, the same inputs), quiet, no database."""
    from hypothesis import HealthCheck, Phase, Verbosity, settings

    return settings(
        max_examples=examples,
        derandomize=True,
        database=None,
        deadline=None,
        verbosity=Verbosity.quiet,
        suppress_health_check=list(HealthCheck),
        report_multiple_bugs=False,
        phases=[Phase.explicit, Phase.generate, Phase.shrink],
    )


def _generated(source, comparison, examples):
    """Run the Hypothesis-generated comparisons; returns their entry of ``inputs_compared``."""
    hypothesis = _deps.require("hypothesis")
    from hypothesis import given

    rejected = []
    before_requests, before_rows = comparison.requests, set(comparison.rows)
    comparison.rows = set()

    @generation_settings(examples)
    @given(_batches(source))
    def compare_generated(requests):
        expected = []
        for request in requests:
            try:
                expected.append(source.predict(request))
            except Exception:
                expected.append(None)
        if any(e is None for e in expected):
            rejected.append(len(requests))
            hypothesis.reject()
        comparison.compare(requests, expected, "generated inputs")

    try:
        compare_generated()
    except hypothesis.errors.Unsatisfiable:
        raise ExportError(
            "pyfunc.predict rejected every generated input, so parity could not be checked beyond the saved "
            "example; nothing was written"
        ) from None
    generated_rows = sorted(comparison.rows)
    comparison.rows |= before_rows
    return {
        "what": "Hypothesis-generated batches (derandomized)",
        "examples": examples,
        "requests": comparison.requests - before_requests,
        "rows_per_request": generated_rows,
        "batches_rejected_by_pyfunc": len(rejected),
        "values": "floats in the example's range widened by its span on each side (finite only); integers in the "
        "example's range widened by its span (at least 10) on each side; booleans; text from the example "
        "or short ASCII strings",
    }


def _batches(source):
    """A strategy of batches: lists of logged-form requests that share their variable axes."""
    from hypothesis import strategies as st
    from hypothesis.extra.numpy import arrays

    declarations = source.layout.inputs
    example = source.example_tensors

    @st.composite
    def batches(draw):
        trailing = {}
        for d in declarations:
            sizes = example[d.name].shape
            trailing[d.name] = tuple(
                draw(st.integers(1, min(MAX_VARIABLE_AXIS, max(2, 2 * sizes[axis])))) if size == -1 else size
                for axis, size in enumerate(d.dims[1:], start=1)
            )
        requests = []
        for _ in range(draw(st.integers(1, MAX_REQUESTS_PER_BATCH))):
            rows = draw(st.integers(1, MAX_ROWS_PER_REQUEST))
            requests.append(
                {
                    d.name: draw(
                        arrays(
                            np.dtype(TRITON_TO_NUMPY[d.data_type]),
                            (rows, *trailing[d.name]),
                            elements=_values(d, example[d.name]),
                        )
                    )
                    for d in declarations
                }
            )
        return requests

    return batches()


def _values(declaration, example):
    from hypothesis import strategies as st

    if declaration.data_type == BYTES_TYPE:
        known = sorted({bytes(v) for v in example.ravel()})
        return st.one_of(st.sampled_from(known), st.text(_TEXT_ALPHABET, max_size=12).map(str.encode))
    dtype = np.dtype(TRITON_TO_NUMPY[declaration.data_type])
    if dtype.kind == "b":
        return st.booleans()
    if dtype.kind in "iu":
        return st.integers(*_integer_range(example, dtype))
    finite = example[np.isfinite(example)].astype(np.float64)
    low, high = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
    span = max(high - low, abs(low), abs(high), 1.0)
    low, high = dtype.type(low - span), dtype.type(high + span)
    if not (np.isfinite(low) and np.isfinite(high)):
        low, high = np.finfo(dtype).min / 2, np.finfo(dtype).max / 2
    return st.floats(float(low), float(high), allow_nan=False, allow_infinity=False, width=dtype.itemsize * 8)


def _integer_range(example, dtype):
    """The example's range widened by its span (at least 10) on each side, within the datatype."""
    info = np.iinfo(dtype)
    low, high = (int(example.min()), int(example.max())) if example.size else (0, 0)
    span = max(high - low, 10)
    return max(int(info.min), low - span), min(int(info.max), high + span)


def _rows(tensors):
    return len(next(iter(tensors.values())))


def _take(tensors, rows):
    return {name: array[rows] for name, array in tensors.items()}


def _render(requests, source, limit=8):
    """The input as ``{field: [first rows]}`` per request, for error messages."""
    fields = {f.tensor: (f.name if f.name is not None else f.tensor) for f in source.layout.contract.inputs.fields}
    rendered = []
    for request in requests:
        rendered.append(
            {
                fields.get(name, name): [_plain(v) for v in array[:limit].tolist()]
                + (["..."] if len(array) > limit else [])
                for name, array in request.items()
            }
        )
    return json.dumps(rendered if len(rendered) > 1 else rendered[0], ensure_ascii=False, default=repr)


def _scalar(value):
    """A numpy scalar as the Python value it holds (numpy 2 would show ``np.float64(1.0)``)."""
    return value.item() if isinstance(value, np.generic) else value


def _plain(value):
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="backslashreplace")
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value
