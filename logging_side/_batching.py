"""Dynamic batching at logging: the arguments, the batched layout and the proof that rows are independent.

Batching (``max_batch_size=N``) is allowed when every input and every output has a row axis:
column schemas, and tensors whose first axis is ``-1``. The config then leaves the batch axis out
of ``dims`` (a rank-one tensor becomes ``dims: [1]``, sent and answered as ``[rows, 1]``; each input
is reshaped to ``[1, *dims]``: ``repository.config``), and the runtime joins the rows of the requests
one ``execute`` gets.

That is only right for a model that predicts each row on its own. ``prove_row_independence``
predicts the example (and shuffled, repeated and split copies of it) as batches and row by row:
integers, strings and booleans must agree exactly, floats within ``ROW_INDEPENDENCE_ULPS`` units
in the last place of their row's largest magnitude, in the output's float type (BLAS may sum in
another order for another batch size). Otherwise batching is refused, naming the output and the largest difference.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from mlflow_triton.repository.guard import checked_zero_row_guard
from mlflow_triton.repository.layout import unbatchable_tensor
from mlflow_triton.shared_contract import Contract, MlflowTritonError, writer_version

from .errors import BatchingRefusedError, InvalidArgumentError, ValidationError

# Floats predicted in a batch may differ from the same row predicted alone by at most this many units in the last
# place of the row's largest magnitude (``ulps_per_element``), in the output's own float type. The docs quote it.
ROW_INDEPENDENCE_ULPS = 4
# At most this many example rows are predicted one by one for the proof.
MAX_PROOF_ROWS = 64
# The proof needs at least this many distinct rows among them. With one row (or only copies of one) every batch is
# that row again, so a model that centres, ranks or scales by its batch answers each batch like the row alone. Two
# distinct rows show one company (the pair); three give a row two: the whole example, and with the second half (rows
# 2 and 3, the example's own rows) a batch of another composition, so an interaction that cancels in one company is
# seen in the other.
MIN_DISTINCT_ROWS = 3
_SHUFFLE_SEED = 0
# What a batched repository answers a request without rows; recorded in validation.json (docs/batching.md quotes it
# and gives the account: each input is reshaped to [1, *dims], repository.config._row_axis_reshape).
ZERO_ROW_REQUESTS = (
    "a request with 0 rows is answered 400 by Triton itself (its inputs' byte size does not match), and one that "
    "declares 0 rows but carries elements by the model (naming the tensor); requests joined with it are answered "
    "as if it had not been sent, and the server keeps serving"
)


@dataclasses.dataclass(frozen=True)
class Batching:
    """The batching a wrapper call asked for; ``max_batch_size == 0`` is no batching."""

    max_batch_size: int = 0
    max_queue_delay_microseconds: int | None = None
    zero_row_guard: bool = True  # accepted as given; no front model is written either way (docs/batching.md)

    @property
    def enabled(self) -> bool:
        return self.max_batch_size > 0


#: What every wrapper call gets unless it asks for ``max_batch_size``.
NO_BATCHING = Batching()


def check_arguments(
    max_batch_size: object, max_queue_delay_microseconds: object, zero_row_guard: object = True
) -> Batching:
    """The wrapper arguments as ``Batching``, or InvalidArgumentError naming the argument."""
    if isinstance(max_batch_size, bool) or not isinstance(max_batch_size, int) or max_batch_size < 0:
        raise InvalidArgumentError(
            f"max_batch_size must be an integer >= 0 (0: no batching; N: Triton joins requests up to N rows), "
            f"got {max_batch_size!r}"
        )
    if max_queue_delay_microseconds is not None:
        if (
            isinstance(max_queue_delay_microseconds, bool)
            or not isinstance(max_queue_delay_microseconds, int)
            or max_queue_delay_microseconds < 0
        ):
            raise InvalidArgumentError(
                f"max_queue_delay_microseconds must be an integer >= 0 or None, got {max_queue_delay_microseconds!r}"
            )
        if max_batch_size == 0:
            raise InvalidArgumentError(
                "max_queue_delay_microseconds needs batching: pass max_batch_size=N (N >= 1) as well"
            )
    return Batching(max_batch_size, max_queue_delay_microseconds, checked_zero_row_guard(zero_row_guard))


def batched_layout(layout, batching: Batching):
    """``layout`` with a version-3 contract recording ``max_batch_size``; refuses tensors without a row axis."""
    if not batching.enabled:
        return layout
    scalars = [field.tensor for field in layout.contract.outputs.fields if field.scalar]
    if scalars:
        raise BatchingRefusedError(
            f"max_batch_size={batching.max_batch_size}: output tensor `{scalars[0]}` is a scalar prediction (one "
            "value for the whole request, no rows to split among joined requests); log the model with "
            "max_batch_size=0 or return one value per row"
        )
    optional = [field.tensor for field in layout.contract.inputs.fields if field.optional]
    if optional:
        raise BatchingRefusedError(
            f"max_batch_size={batching.max_batch_size}: input column `{optional[0]}` may be left out of a request, "
            "and joined requests must all send the same columns; log the model with max_batch_size=0"
        )
    unbatchable = unbatchable_tensor(layout)
    if unbatchable:
        side, declaration = unbatchable
        raise BatchingRefusedError(
            f"max_batch_size={batching.max_batch_size}: {side} tensor `{declaration.name}` has shape "
            f"{list(declaration.dims)}; batching needs a variable first (row) axis, -1, on every input and "
            "output (DataFrame columns, or tensors declared with shape (-1, ...)); log the model with "
            "max_batch_size=0 or declare the row axis in the signature"
        )
    contract = layout.contract
    batched = Contract(
        flavor=contract.flavor,
        inputs=contract.inputs,
        outputs=contract.outputs,
        version=writer_version(contract.inputs, contract.outputs, batching.max_batch_size),
        max_batch_size=batching.max_batch_size,
    )
    return dataclasses.replace(layout, contract=batched)


def check_example_rows(tensors: dict, batching: Batching) -> None:
    """Triton refuses a request of more rows than ``max_batch_size``: the shipped example must fit."""
    rows = len(next(iter(tensors.values())))
    if batching.enabled and rows > batching.max_batch_size:
        raise BatchingRefusedError(
            f"max_batch_size={batching.max_batch_size}: the input example has {rows} rows, and Triton refuses a "
            f"request of more rows than max_batch_size; pass max_batch_size >= {rows} (the largest request a client "
            "will send) or a smaller example"
        )


def prove_row_independence(predict_tensors, tensors: dict) -> dict:
    """Predict the example as batches and row by row; refuse batching where they disagree.

    ``predict_tensors(input tensors) -> output tensors`` runs the model through the runtime's codecs.
    Returns the record for validation.json.
    """
    rows = min(len(next(iter(tensors.values()))), MAX_PROOF_ROWS)
    distinct = _distinct_rows(tensors, rows)
    if distinct < MIN_DISTINCT_ROWS:
        raise BatchingRefusedError(
            f"Batching refused: the input example has {distinct} distinct row(s) (of {rows}); proving that the model "
            f"predicts each row on its own needs at least {MIN_DISTINCT_ROWS}, since with fewer every batch of the "
            "proof repeats the same company and a model that normalises over its batch passes; pass an "
            f"input_example with at least {MIN_DISTINCT_ROWS} distinct rows (for example df.iloc[:3] of real "
            "inputs), or log the model with max_batch_size=0"
        )
    alone = [predict_tensors(_take(tensors, [row])) for row in range(rows)]
    order = np.random.default_rng(_SHUFFLE_SEED).permutation(rows).tolist()
    half = max(1, rows // 2)
    cases = [
        ("the example as one batch", list(range(rows))),
        ("the example shuffled", order),
        ("the example repeated", list(range(rows)) * 2),
        ("the example's first half", list(range(half))),
        ("the example's second half", list(range(half, rows)) or [0]),
    ]
    largest: dict[str, float] = {}
    for what, indices in cases:
        outputs = predict_tensors(_take(tensors, indices))
        for name, batch in outputs.items():
            if len(batch) != len(indices):
                raise BatchingRefusedError(
                    f"Batching refused: output `{name}` has {len(batch)} row(s) for {what} ({len(indices)} rows); "
                    "a batched model must answer one row per input row"
                )
            expected = np.concatenate([alone[index][name] for index in indices])
            ulps = _difference_in_ulps(name, what, expected, batch)
            largest[name] = max(largest.get(name, 0.0), ulps)
    return {
        "proved": True,
        "rows_predicted_alone": rows,
        "distinct_rows": distinct,
        "min_distinct_rows": MIN_DISTINCT_ROWS,
        "cases": [{"what": what, "rows": len(indices)} for what, indices in cases],
        "float_tolerance_ulps": ROW_INDEPENDENCE_ULPS,
        "largest_difference_ulps": largest,
        "how": "each batch predicted once and compared row by row with the rows predicted alone: integers, "
        f"strings and booleans exactly, floats within {ROW_INDEPENDENCE_ULPS} ulps of their row's largest magnitude",
        "covers": "the example's own rows, alone and in the batches above; no other inputs are made up (rows "
        "recombined from the example's values may be inputs the model never sees). A model whose rows interact only "
        "for other inputs is not caught",
    }


def predictor_of_tensors(predict, input_codec, output_codec):
    """``predict_tensors`` for ``prove_row_independence``: decode, predict, encode, as the runtime does."""

    def predict_tensors(tensors):
        try:
            return output_codec.to_tensors(predict(input_codec.from_tensors(tensors)))
        except MlflowTritonError as error:
            raise ValidationError(f"Batching proof: a batch of the example failed: {error}") from None

    return predict_tensors


def _distinct_rows(tensors, rows):
    """How many of the first ``rows`` rows differ from each other in at least one input value (NaN equals NaN)."""
    keys = zip(*(_row_keys(array[:rows]) for array in tensors.values()))
    return len(set(keys))


def _row_keys(array):
    if array.dtype == object:
        return [repr(row.tolist() if isinstance(row, np.ndarray) else row) for row in array]
    return [np.ascontiguousarray(row).tobytes() for row in array]


def _take(tensors, indices):
    return {name: array[indices] for name, array in tensors.items()}


def ulps_per_element(expected: np.ndarray, got: np.ndarray) -> np.ndarray:
    """How many units in the last place each element of two float arrays of one shape are apart, measured at the
    scale of its row: ``np.spacing`` of the largest finite magnitude of that row (first axis) on either side, in the
    precision the values carry (:func:`carried_float_type`). NaN equals NaN; ``inf`` where one side is not finite
    and the other differs.

    The row's scale, not the element's own: a value derived from others of its row (``1 - p`` of a binary
    ``predict_proba``, a softmax share) carries their rounding, so one ulp of ``p = 0.886`` is eight ulps of
    ``1 - p = 0.114``. The batching proof and the batched soak measure ``ROW_INDEPENDENCE_ULPS`` with this function
    (one rule for both)."""
    expected, got = np.asarray(expected), np.asarray(got)
    same = (expected == got) | (np.isnan(expected) & np.isnan(got))
    carried = carried_float_type(expected, got)
    with np.errstate(all="ignore"):
        magnitude = np.maximum(np.abs(expected), np.abs(got))
        magnitude = np.where(np.isfinite(magnitude), magnitude, 0).astype(carried)
        if magnitude.ndim > 1 and magnitude.size:
            rows = magnitude.reshape(len(magnitude), -1).max(axis=1)
            magnitude = np.broadcast_to(rows.reshape((-1,) + (1,) * (magnitude.ndim - 1)), magnitude.shape)
        spacing = np.spacing(magnitude).astype(np.float64)
        ulps = np.where(same, 0.0, np.abs(expected.astype(np.float64) - got.astype(np.float64)) / spacing)
    return np.where(np.isfinite(ulps), ulps, np.inf)


def carried_float_type(expected: np.ndarray, got: np.ndarray) -> np.dtype:
    """The float type whose ulps measure two arrays: their own, except float32 for float64 arrays whose finite values
    are all float32 values. Those are float32 results widened (a Transformers pipeline's scores reach MLflow as
    Python floats): one rounding step of the float32 computation is 2**29 float64 ulps, so measuring them in float64
    would refuse a one-ulp difference the tolerance promises to allow."""
    kind = np.result_type(expected.dtype, got.dtype)
    if kind != np.float64 or not (_holds_float32_only(expected) and _holds_float32_only(got)):
        return kind
    return np.dtype(np.float32)


def _holds_float32_only(values: np.ndarray) -> bool:
    finite = values[np.isfinite(values)]
    with np.errstate(over="ignore"):
        return bool(np.all(finite.astype(np.float32).astype(np.float64) == finite))


def _difference_in_ulps(name, what, expected, batch):
    """The largest float difference in ulps (0 for exact types); BatchingRefusedError beyond the tolerance."""
    if expected.dtype.kind != "f":
        if expected.shape != batch.shape or not _exactly_equal(expected, batch):
            raise BatchingRefusedError(
                f"Batching refused: output `{name}` differs for {what} from the same rows predicted alone "
                f"({expected.dtype} values must be equal); the model does not predict each row on its own "
                "(for example it normalises over the batch); log it with max_batch_size=0"
            )
        return 0.0
    ulps = ulps_per_element(expected, batch)
    worst = float(ulps.max()) if ulps.size else 0.0
    if worst > ROW_INDEPENDENCE_ULPS:
        index = int(np.argmax(ulps))
        alone, joined = expected.ravel()[index].item(), batch.ravel()[index].item()
        raise BatchingRefusedError(
            f"Batching refused: output `{name}` differs for {what} from the same rows predicted alone by "
            f"{worst:.3g} ulps (largest difference {alone!r} vs {joined!r}; "
            f"allowed: {ROW_INDEPENDENCE_ULPS} ulps); the model does not predict each row on its own (for example "
            "it normalises over the batch); log it with max_batch_size=0"
        )
    return worst


def _exactly_equal(expected, batch):
    return all(a == b for a, b in zip(expected.ravel().tolist(), batch.ravel().tolist()))
