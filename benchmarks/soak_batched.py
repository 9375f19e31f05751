"""The soak against a batched repository: what ``python -m benchmarks.soak --batched`` changes.

The example Pipeline is logged with ``max_batch_size`` (docs/batching.md): one model directory whose columns are
declared ``dims: [1]``, none reshaped to ``[]``. It gets the same valid and hostile traffic, in the batched shapes
(every column ``[rows, 1]``; ``soak_requests.hostile_kinds`` translates the hostile kinds and adds the batched
ones). A 0-row request (``empty-batch``, over each transport) reaches no model code: Triton refuses it (400,
``triton-400``) because its tensors hold fewer bytes or strings than the one row it then expects. A request whose
shapes claim 0 rows but whose binary tensors carry a row (``claimed-zero-with-bytes``) passes Triton's checks and gets
the runtime's 400 naming the tensor; a column sent as ``[n]`` (``rank-1``) is Triton's 400; a decimal request
parameter (``decimal-params``) is the runtime's 400, as the unbatched model answers it (the soak model declares no
params). ``BY_TRANSPORT`` lists those kinds: each must be sent over each of its transports, and the report counts
their classes by transport. The zero-tolerance checks stay; three change:

* an answer is compared with ``pyfunc.predict`` of that request alone, floats within
  ``ROW_INDEPENDENCE_ULPS`` units in the last place of their row's largest magnitude (the rule and
  the function batching is proven with at logging: joined requests may be summed in another order),
  everything else exactly; the report counts the answers by how many ulps they were off;
* Triton's ``inference_count`` counts rows for a batched model, so the requests classed as having
  reached the model are compared with its request statistics (success + fail) instead;
* Triton's statistics must show fewer executions than requests: requests were joined.

One exception to the ulp tolerance, which is Triton's and not batching's: Triton 2.51's JSON front end
does not read every double exactly. A number with more than 15 significant digits (the soak rounds
its numbers to 1-16 decimals) can arrive a few ulps off, so its prediction is too (seen: 5 ulps for
a request sent alone; the same request over binary HTTP and gRPC: 0). Such ``http-json`` answers are
compared with ``check``'s tolerances, as in the unbatched soak, and counted apart; every other answer
is held to the ulps.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np

from mlflow_triton._batching import ROW_INDEPENDENCE_ULPS, ulps_per_element

from .soak_requests import BATCHED_CLASSES, EXCLUDED_WHEN_BATCHED, HTTP_JSON, KINDS, TRANSPORTS, Layout

DEFAULT_MAX_BATCH_SIZE = 64
#: The kinds a batched repository answers as docs/batching.md's "Requests without rows" says, counted by transport.
BY_TRANSPORT = ("empty-batch", "claimed-zero-with-bytes", "rank-1", "decimal-params")
LARGEST_VALID_ROWS = 64  # soak_requests.random_frame sends at most 64 rows in a request that must be answered


def check_batched_settings(settings: object) -> None:
    """Refuse a ``max_batch_size`` below the largest request that must be answered (Triton would refuse it)."""
    size = settings.max_batch_size
    if size and size < LARGEST_VALID_ROWS:
        raise ValueError(
            f"--max-batch-size must be 0 (unbatched) or at least {LARGEST_VALID_ROWS} (the largest "
            f"request the soak must get answered), not {size}"
        )
    if size < 0:
        raise ValueError(f"--max-batch-size must be 0 (unbatched) or at least {LARGEST_VALID_ROWS}, not {size}")


# How the report groups the answers held to the ulps: by their largest float difference, in ulps.
ULPS_SEEN_BINS = ("0", "1", "2", f"3-{ROW_INDEPENDENCE_ULPS}", f"over {ROW_INDEPENDENCE_ULPS}")


def ulps_bin(ulps: float) -> str:
    """The ``ULPS_SEEN_BINS`` label of an answer whose largest float difference is ``ulps``."""
    if ulps > ROW_INDEPENDENCE_ULPS:
        return ULPS_SEEN_BINS[-1]
    return ULPS_SEEN_BINS[min(int(np.ceil(ulps)), 3)]


def make_oracle(settings: object, package: Path, model_dir: Path) -> BatchedOracle:
    return BatchedOracle(package, model_dir, settings.max_batch_size)


def read_exactly_from_json(frame: object) -> bool:
    """Whether every number of ``frame`` has at most 15 significant digits, which Triton's JSON reader reads
    exactly (a double's guaranteed decimal precision)."""
    numbers = frame.select_dtypes("number").to_numpy(dtype=np.float64).ravel()
    return all(float(f"{value:.15g}") == value for value in numbers[np.isfinite(numbers)].tolist())


def ulps_apart(expected: np.ndarray, got: np.ndarray) -> float:
    """The largest difference of two float arrays of one shape in units in the last place of each row's largest
    magnitude, as the batching proof measures it (NaN equals NaN; ``inf`` where one side is not finite and the
    other differs)."""
    ulps = ulps_per_element(expected, got)
    return float(ulps.max()) if ulps.size else 0.0


class BatchedOracle:
    """``pyfunc.predict`` of each request alone, as the output tensors a batched repository answers, built by the
    tests' independent encoder (``tests/support/oracle.py``, not the runtime's codecs); floats within
    ``ROW_INDEPENDENCE_ULPS``, everything else exactly."""

    def __init__(self, package: Path, model_dir: Path, max_batch_size: int) -> None:
        from tests.support.oracle import ExpectedAnswers

        self.expected_answers = ExpectedAnswers(package, model_dir)
        self.model_dir = model_dir
        self.max_batch_size = max_batch_size
        self.compared = 0
        self.max_ulps = 0.0
        self.answers_off_by_ulps = 0  # answers equal within the tolerance but not bit for bit
        self.ulps_seen: Counter[str] = Counter()  # answers held to the ulps, by how far off (ULPS_SEEN_BINS)
        self.json_inexact = {"answers": 0, "max_ulps": 0.0}  # http-json numbers Triton may read inexactly

    def differences(self, frame: object, outputs: dict | None) -> tuple[bool, float]:
        """``(equal, largest absolute float difference)`` of ``outputs`` against the prediction for ``frame``."""
        from mlflow_triton.local._compare import compare

        expected = self.expected_answers.for_input(frame)
        outputs = outputs or {}
        equal, largest, worst_ulps = set(outputs) == set(expected), 0.0, 0.0
        for name, want in expected.items():
            want, got = np.asarray(want), outputs.get(name)
            if got is None or got.dtype != want.dtype or got.shape != want.shape:
                equal = False
            elif want.dtype.kind == "f":
                worst_ulps = max(worst_ulps, ulps_apart(want, got))
                finite = np.isfinite(want) & np.isfinite(got)
                gaps = np.abs(want[finite].astype(np.float64) - got[finite].astype(np.float64))
                largest = max(largest, float(gaps.max()) if gaps.size else 0.0)
            else:
                equal = equal and compare({name: want}, {name: got}, exact=True)[name]["equal"]
        self.compared += 1
        if frame.attrs.get("transport") == HTTP_JSON and not read_exactly_from_json(frame):
            self.json_inexact["answers"] += 1
            self.json_inexact["max_ulps"] = max(self.json_inexact["max_ulps"], worst_ulps)
            return equal and all(result["equal"] for result in compare(expected, outputs).values()), largest
        self.max_ulps = max(self.max_ulps, worst_ulps)
        self.answers_off_by_ulps += 0 < worst_ulps <= ROW_INDEPENDENCE_ULPS
        self.ulps_seen[ulps_bin(worst_ulps)] += 1
        return equal and worst_ulps <= ROW_INDEPENDENCE_ULPS, largest

    def figures(self, layout: Layout) -> dict:
        """What the batched soak records besides the unbatched report's figures."""
        return {
            "max_batch_size": layout.max_batch_size,
            "tolerance_ulps": ROW_INDEPENDENCE_ULPS,
            "answers_compared": self.compared,
            "max_ulps": self.max_ulps,
            "answers_off_by_ulps": self.answers_off_by_ulps,
            "ulps_seen": {label: self.ulps_seen[label] for label in ULPS_SEEN_BINS if self.ulps_seen[label]},
            "json_inexact": dict(self.json_inexact),
            "excluded_kinds": dict(EXCLUDED_WHEN_BATCHED),
            "by_transport": {},  # set by the soak from the outcomes (kinds_by_transport)
        }


def kinds_by_transport(outcome_lists) -> dict:
    """``{kind: {transport: {class: count}}}`` of the ``BY_TRANSPORT`` kinds in these lists of outcomes."""
    counts = {name: {} for name in BY_TRANSPORT}
    for outcomes in outcome_lists:
        for outcome in outcomes:
            if outcome.kind in counts:
                classes = counts[outcome.kind].setdefault(outcome.transport, {})
                classes[outcome.answer_class] = classes.get(outcome.answer_class, 0) + 1
    return counts


def batched_violations(report: object) -> list[str]:
    """The batched soak's own failed checks: Triton's request count, joining, each ``BY_TRANSPORT`` kind sent over each
    of its transports, no excluded kind sent."""
    failed = []
    statistics = report.triton_statistics
    requests, executions = statistics.get("request_count"), statistics.get("execution_count")
    if report.reached_model() != requests:
        failed.append(
            f"{report.reached_model()} requests were classed as having reached the model (answered, "
            f"runtime-400, model-500) but Triton counted {requests} requests (success + fail)"
        )
    if requests is None or executions is None or executions >= requests:
        failed.append(f"no requests were joined: Triton counted {executions} executions for {requests} requests")
    sent = {name for checked in (report.warmup, report.run, report.settle) for name in checked.by_kind}
    by_transport = report.batching.get("by_transport", {})
    for name in BY_TRANSPORT:
        missing = [t for t in KINDS[name].transports if not by_transport.get(name, {}).get(t)]
        if missing:
            failed.append(f"no `{name}` request was sent over {', '.join(missing)}")
    for name in sorted(sent & set(EXCLUDED_WHEN_BATCHED)):
        failed.append(f"the kind `{name}` must not be sent to a batched repository: {EXCLUDED_WHEN_BATCHED[name]}")
    return failed


def batched_section(report: object) -> list[str]:
    """Markdown lines about batching for the report (none for the unbatched soak)."""
    figures = report.batching
    if not figures:
        return []
    statistics = report.triton_statistics
    requests, executions = statistics.get("request_count") or 0, statistics.get("execution_count") or 0
    seen = ", ".join(f"{count:,} × {label} ulps" for label, count in figures.get("ulps_seen", {}).items()) or "none"
    lines = [
        f"Batched repository: `max_batch_size: {figures['max_batch_size']}`, `dynamic_batching "
        f"{{ max_queue_delay_microseconds: {report.settings.get('max_queue_delay_microseconds')} }}`; every column "
        "sent as `[rows, 1]`. Triton counted "
        f"{requests:,} requests ({statistics.get('inference_count', 0):,} rows: its `inference_count` counts rows for "
        f"a batched model) in {executions:,} executions: "
        f"**{requests / max(executions, 1):.2f} requests per execution** (warm-up and settling included). "
        f"Every answer was compared with `pyfunc.predict` of that request alone, floats within "
        f"{figures['tolerance_ulps']} ulps of their row's largest magnitude (`ROW_INDEPENDENCE_ULPS`), the rest "
        "exactly: "
        f"{figures['answers_compared']:,} answers (warm-up, run and settling), the largest float difference "
        f"{figures['max_ulps']:.3g} ulps, "
        f"{figures['answers_off_by_ulps']:,} answers not bit for bit equal (within the tolerance); answers by their "
        f"largest float difference: {seen}. "
        f"{figures['json_inexact']['answers']:,} of the answers were to `http-json` requests holding a number of more "
        "than 15 significant digits, which Triton 2.51's JSON reader does not always read exactly: those were "
        "compared with `check`'s tolerances, as in the unbatched soak (largest difference "
        f"{figures['json_inexact']['max_ulps']:.3g} ulps; over binary HTTP and gRPC the same numbers arrive exactly).",
        "",
        "Requests without rows, rank-one columns and decimal parameters, by transport (warm-up, run and settling; "
        "— where the kind is not sent over that transport; the server stayed up: see the checks above):",
        "",
        *by_transport_table(figures.get("by_transport", {})),
        "",
        "Not sent to the batched repository:",
        "",
    ]
    lines.extend(f"- `{name}`: {why}" for name, why in figures["excluded_kinds"].items())
    return lines + [""]


def by_transport_table(by_transport: dict) -> list[str]:
    """Markdown table lines: each ``BY_TRANSPORT`` kind, the class it must get and what it got over each transport."""
    header = ["kind", "must get", *TRANSPORTS]
    rows = []
    for name, transports in by_transport.items():
        cells = [
            ", ".join(f"{count:,} {answer_class}" for answer_class, count in sorted(transports[t].items()))
            if t in transports
            else "—"  # not one of the kind's transports (an unsent one is a failed check: batched_violations)
            for t in TRANSPORTS
        ]
        rows.append([f"`{name}`", " or ".join(_must_get(name)), *cells])
    return ["| " + " | ".join(header) + " |", "| " + " | ".join("---" for _ in header) + " |"] + [
        "| " + " | ".join(row) + " |" for row in rows
    ]


def _must_get(name: str) -> tuple[str, ...]:
    return (BATCHED_CLASSES.get(name) or KINDS[name]).expected
