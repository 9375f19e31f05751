"""Soak: a generated repository on the real Triton under valid and hostile load, checked against pyfunc.

    .venv/bin/python -m benchmarks.soak                         # 10,000 requests (make soak), ~3 min
    .venv/bin/python -m benchmarks.soak --requests 1000         # the size CI runs (tests/e2e/test_soak.py)
    .venv/bin/python -m benchmarks.soak --batched               # a batched repository (make soak-batched)

The example Pipeline (``examples/sklearn_example.py``: two FP64 columns and a text column,
``predict_proba``) is saved with ``mlflow_triton.sklearn.save_model``; its generated repository is
served by the bundled Triton 2.51 with the sklearn serving environment (cached). After a warm-up
of every request kind, ``--clients`` threads send ``--requests`` requests, HTTP (JSON and binary)
and gRPC, ``--hostile`` of them hostile (``benchmarks/soak_requests.py`` lists the kinds and the
answer each must get), plus two requests of ``--huge-mb`` MiB. Then every answer is checked:

* an answer (200 / OK) must equal ``pyfunc.predict`` of the same input (check's tolerances), and
  only requests that must be answered may get one -- **0 wrong answers**;
* an error the runtime detected as the client's must be 400 / INVALID_ARGUMENT -- **0 x 5xx**;
* every request gets the class of answer its kind must get (no transport errors, no unclassified
  messages);
* Triton's own statistics count exactly the requests classed as having reached the model (answered,
  runtime-400, model-500): the ``triton-*`` classes were refused before any model code ran;
* afterwards the server and the model are ready, the same stub process is alive, and valid
  requests are answered correctly;
* the stub's RSS after the run exceeds its RSS before it by at most ``--max-rss-growth-mb``. Both
  figures are taken after the same settling requests (both huge requests, then 100 small valid
  ones): the Python backend's shared-memory pool grows to the largest request and stays, and the
  allocator keeps part of what a large request freed, so a figure taken right after a 50 MiB
  request and one taken after small ones differ by tens of MiB without any leak.

With ``--batched`` the example is logged with ``max_batch_size`` (``--max-batch-size``, default 64)
and the same traffic is sent in the batched shapes; ``benchmarks/soak_batched.py`` says what
changes (the request kinds, the ulp tolerance, Triton's statistics).

Prints a report (and writes it with ``--results``; JSON beside it in the work directory); exit
status 1 when any check failed.
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import datetime
import json
import shutil
import sys
import threading
import time
import urllib.request
from pathlib import Path

import numpy as np

from mlflow_triton.repository.guard import files_directory, served_directories

from .soak_batched import (
    batched_section,
    batched_violations,
    check_batched_settings,
    kinds_by_transport,
    make_oracle,
)
from .soak_client import RUNTIME_CLIENT_ERROR_AS_5XX, Client, memory_mb, rss_mb, stub_pids
from .soak_requests import (
    ANSWERED,
    GRPC,
    HUGE,
    KINDS,
    MODEL_500,
    RUNTIME_400,
    TRANSPORTS,
    VALID,
    Layout,
    Request,
    build_request,
    hostile_kinds,
    huge_request,
)

ROOT = Path(__file__).resolve().parent.parent
# Classes whose requests reach model.py; Triton's own checks and parsers stop the others before it.
REACHED_MODEL = (ANSWERED, RUNTIME_400, MODEL_500)
MODEL_NAME = "soak"
MIN_HOSTILE_FRACTION = 0.3
# The stub's RSS growth allowed in CI's 1,000-request soak (tests/e2e/test_soak.py) on 2 shared cores: the RSS
# sampled after each tenth of a 10,000-request run moved within 282-295 MiB (benchmarks/soak-results.md), so a
# 20 MiB limit sits inside the noise of one before/after pair; 40 MiB does not, and still catches a stub that
# keeps what either 50 MiB request held.
CI_MAX_RSS_GROWTH_MB = 40.0


@dataclasses.dataclass
class SoakSettings:
    requests: int = 10_000
    clients: int = 4
    hostile_fraction: float = 0.4
    seed: int = 13
    huge_mb: float = 50.0
    max_rss_growth_mb: float = 20.0
    warmup_rounds: int = 2
    work_dir: Path = ROOT / ".work" / "soak"
    max_batch_size: int = 0  # > 0: the batched soak (benchmarks/soak_batched.py)
    max_queue_delay_microseconds: int = 5000  # with max_batch_size: how long Triton may gather a batch


@dataclasses.dataclass
class Checked:
    """Outcomes checked: counts by kind, transport and class, and every answer that breaks a rule."""

    requests: int = 0
    hostile: int = 0
    by_kind: dict = dataclasses.field(default_factory=dict)  # kind -> {"expected", "what", "transports", "classes"}
    by_transport: dict = dataclasses.field(default_factory=dict)  # transport -> count
    messages: dict = dataclasses.field(default_factory=dict)  # class -> {message shape: count}
    answers_compared: int = 0
    max_abs_diff: float = 0.0
    wrong_answers: list = dataclasses.field(default_factory=list)
    runtime_client_errors_5xx: list = dataclasses.field(default_factory=list)
    unexpected: list = dataclasses.field(default_factory=list)

    def violations(self, label):
        failed = []
        if self.wrong_answers:
            failed.append(f"{label}: {len(self.wrong_answers)} wrong answer(s): {self.wrong_answers[:3]}")
        if self.runtime_client_errors_5xx:
            failed.append(
                f"{label}: {len(self.runtime_client_errors_5xx)} runtime-detected client error(s) answered "
                f"5xx: {self.runtime_client_errors_5xx[:3]}"
            )
        if self.unexpected:
            failed.append(
                f"{label}: {len(self.unexpected)} request(s) got another class of answer than their kind "
                f"must: {self.unexpected[:3]}"
            )
        return failed


@dataclasses.dataclass
class SoakReport:
    settings: dict
    machine: dict = dataclasses.field(default_factory=dict)
    triton_version: str = ""
    started: str = ""
    seconds: dict = dataclasses.field(default_factory=dict)
    warmup: Checked = dataclasses.field(default_factory=Checked)
    run: Checked = dataclasses.field(default_factory=Checked)
    settle: Checked = dataclasses.field(default_factory=Checked)  # the requests sent after the run
    ready_after: dict = dataclasses.field(default_factory=dict)
    stub: dict = dataclasses.field(default_factory=dict)
    server_memory_mb: dict = dataclasses.field(default_factory=dict)  # "before"/"after" -> memory_mb()
    latency_ms: dict = dataclasses.field(default_factory=dict)
    requests_per_second: float = 0.0
    triton_statistics: dict = dataclasses.field(default_factory=dict)
    log_bytes: int = 0
    batching: dict = dataclasses.field(default_factory=dict)  # the batched soak's figures (soak_batched.py)

    def reached_model(self):
        """Requests whose class says they reached the model (warm-up and settling included)."""
        return sum(
            kind["classes"].get(answer_class, 0)
            for checked in (self.warmup, self.run, self.settle)
            for kind in checked.by_kind.values()
            for answer_class in REACHED_MODEL
        )

    def violations(self):
        """Each failed check, in words; empty when the soak passed."""
        failed = (
            self.warmup.violations("warm-up") + self.run.violations("run") + self.settle.violations("after the run")
        )
        if self.run.requests < self.settings["requests"]:
            failed.append(f"only {self.run.requests} of {self.settings['requests']} requests were sent")
        if not all(status == 200 for status in self.ready_after.values()):
            failed.append(f"not ready after the run: {self.ready_after}")
        reached = self.reached_model()
        if self.settings.get("max_batch_size"):
            failed.extend(batched_violations(self))
        elif reached != self.triton_statistics.get("inference_count"):
            failed.append(
                f"{reached} requests were classed as having reached the model (answered, runtime-400, "
                f"model-500) but Triton counted {self.triton_statistics.get('inference_count')} inferences"
            )
        if self.settle.answers_compared != len(settle_plan()):
            failed.append(
                f"{self.settle.answers_compared} of the {len(settle_plan())} valid requests sent after the "
                "run were answered like pyfunc.predict"
            )
        if self.stub.get("pid_before") != self.stub.get("pid_after"):
            failed.append(f"the stub process changed or died: {self.stub}")
        limit = self.settings["max_rss_growth_mb"]
        growth = self.stub.get("rss_growth_mb")
        if growth is None or growth > limit:
            failed.append(f"stub RSS grew by {growth} MiB over the run (limit {limit} MiB)")
        return failed


# -- the model and the server ---------------------------------------------------------------------------------


def save_soak_model(work_dir, max_batch_size=0, max_queue_delay_microseconds=None):
    """The example Pipeline saved with mlflow-triton; returns (MLflow package, served copy of its repository)."""
    sys.path.insert(0, str(ROOT))  # examples/ is a folder of the checkout, not of the installed package
    from examples.sklearn_example import fitted_pipeline
    from mlflow_triton import sklearn as triton_sklearn

    package, repository = work_dir / "package", work_dir / "repository"
    shutil.rmtree(package, ignore_errors=True)
    shutil.rmtree(repository, ignore_errors=True)
    pipeline, frame = fitted_pipeline()
    triton_sklearn.save_model(
        pipeline,
        package,
        input_example=frame.iloc[:3],
        pyfunc_predict_fn="predict_proba",
        triton_model_name=MODEL_NAME,
        max_batch_size=max_batch_size,
        max_queue_delay_microseconds=max_queue_delay_microseconds if max_batch_size else None,
    )
    repository.mkdir(parents=True)
    for directory in served_directories(package / "model_repository" / MODEL_NAME):
        shutil.copytree(directory, repository / directory.name)
    return package, repository / MODEL_NAME


def start_server(model_dir, log_path, progress, stop_timeout=15.0):
    """A started ``TritonServer`` with the model (explicit model control: the repository API can load others)."""
    from mlflow_triton.local import TritonInstallation, TritonServer, ensure_serving_env

    installation = TritonInstallation.bundled(progress=progress)
    requirements = files_directory(model_dir) / "requirements.txt"
    env = ensure_serving_env(requirements, installation.serving_constraints, progress=progress)
    server = TritonServer(
        model_dir.parent,
        [directory.name for directory in served_directories(model_dir)],
        installation=installation,
        serving_env=env,
        log_path=log_path,
        stop_timeout=stop_timeout,
    )
    server.__enter__()
    return server


def _http_status(url):
    try:
        with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(url, timeout=10) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code
    except OSError:
        return None


# -- load ---------------------------------------------------------------------------------------------------------


class StubMonitor(threading.Thread):
    """Samples the stub's RSS twice a second; ``peak_mb`` is the highest sample."""

    def __init__(self, pid):
        super().__init__(daemon=True)
        self.pid, self.peak_mb, self._finished = pid, 0.0, threading.Event()

    def run(self):
        while not self._finished.wait(0.5):
            self.peak_mb = max(self.peak_mb, rss_mb(self.pid) or 0.0)

    def stop(self):
        self._finished.set()
        self.join()


WARMUP_MIXED = 300
SETTLE_VALID = 100
WARMUP, SETTLE = 1, 2  # request streams outside the run; their indices are negative


def settle_plan():
    """Both huge requests, then ``SETTLE_VALID`` small valid ones: sent before each RSS figure, so that the stub's
    shared-memory pool and allocator are in the same state for both (the Python backend's pool grows to the
    largest request and stays; the allocator keeps some of what a large request freed)."""
    return [(HUGE, transport) for transport in HUGE.transports] + [
        (VALID, TRANSPORTS[number % len(TRANSPORTS)]) for number in range(SETTLE_VALID)
    ]


def warmup_plan(settings, layout):
    """Every kind over every transport it uses (``warmup_rounds`` times), ``WARMUP_MIXED`` requests mixed like the
    run's, then the settling requests."""
    plan = [
        (kind, transport)
        for _ in range(settings.warmup_rounds)
        for kind in (VALID, *hostile_kinds(layout))
        for transport in kind.transports
    ]
    return plan + [(None, None)] * WARMUP_MIXED + settle_plan()


def planned_request(layout, settings, stream, number):
    """Request ``number`` of the warm-up or the settling after the run; its index is negative, unique per stream."""
    kind, transport = (warmup_plan(settings, layout) if stream == WARMUP else settle_plan())[number]
    index = -(stream * 10**6 + number)
    if kind is HUGE:
        return huge_request(layout, transport, settings.seed + stream, index, settings.huge_mb)
    if kind is None:
        request = build_request(layout, settings.seed + stream, number, settings.hostile_fraction)
        request.index = index
        return request
    rng = np.random.default_rng([settings.seed, stream, number])
    return Request(index, kind.name, transport, kind.expected, **kind.build(rng, layout, transport))


def send_planned(server, layout, settings, stream):
    """Send a whole stream from one client; returns the outcomes."""
    plan = warmup_plan(settings, layout) if stream == WARMUP else settle_plan()
    sender = Client(server.http_port, server.grpc_url, MODEL_NAME)
    try:
        return [sender.send(planned_request(layout, settings, stream, number)) for number in range(len(plan))]
    finally:
        sender.close()


def huge_indices(settings):
    """Where the two huge requests go: a third and two thirds into the run (HTTP first, then gRPC)."""
    return {settings.requests // 3: "http-binary", 2 * settings.requests // 3: GRPC}


def request_number(layout, settings, index):
    transport = huge_indices(settings).get(index)
    if transport is not None:
        return huge_request(layout, transport, settings.seed, index, settings.huge_mb)
    return build_request(layout, settings.seed, index, settings.hostile_fraction)


def run_clients(server, layout, settings, progress, stub):
    """Send requests 0..N-1 from ``settings.clients`` threads (client c sends c, c+C, ...).

    Returns the outcomes and the stub's memory after each tenth of the requests.
    """
    outcomes, lock, samples = [], threading.Lock(), []
    barrier = threading.Barrier(settings.clients)
    done = [0]
    step = max(1, settings.requests // 10)

    def client(number):
        sender = Client(server.http_port, server.grpc_url, MODEL_NAME)
        mine = []
        try:
            barrier.wait()
            for index in range(number, settings.requests, settings.clients):
                request = request_number(layout, settings, index)
                outcome = sender.send(request)
                del request
                mine.append(outcome)
                with lock:
                    done[0] += 1
                    if done[0] % step == 0:
                        samples.append({"requests": done[0], **memory_mb(stub)})
                        progress(f"  {done[0]:>6}/{settings.requests} requests, stub RSS {samples[-1].get('rss')} MiB")
        finally:
            sender.close()
            with lock:
                outcomes.extend(mine)

    threads = [
        threading.Thread(target=client, args=(number,), name=f"soak-client-{number}")
        for number in range(settings.clients)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return sorted(outcomes, key=lambda outcome: outcome.index), samples


# -- checking -----------------------------------------------------------------------------------------------------


class Oracle:
    """``pyfunc.predict`` of the saved package as the configured output tensors, built without the runtime's codecs.

    The expectation comes from the tests' independent encoder (``tests/support/oracle.py``): the runtime's
    own output codec produced Triton's answer, so it cannot also produce the answer it is judged against.
    """

    def __init__(self, package, model_dir):
        from tests.support.oracle import ExpectedAnswers

        self.expected = ExpectedAnswers(package, model_dir)

    def differences(self, frame, outputs):
        """``(equal, largest float difference)`` of ``outputs`` against the prediction for ``frame``."""
        from mlflow_triton.local._compare import compare

        results = compare(self.expected.for_input(frame), outputs or {})
        return all(r["equal"] for r in results.values()), max(
            (r.get("max_abs_diff", 0.0) for r in results.values()), default=0.0
        )


def _settled_statistics(url, model, *, settle_s=0.5, timeout_s=15.0):
    """``model``'s inference and execution counts once they stop changing.

    The Python backend reports an execution's statistics after its responses have been sent, so a
    client can hold its last answer before Triton has counted it (seen on a loaded 2-CPU machine)."""
    deadline = time.monotonic() + timeout_s
    previous = None
    while True:
        with urllib.request.urlopen(f"{url}/v2/models/{model}/stats", timeout=10) as response:
            stats = json.loads(response.read())["model_stats"][0]
        counts = {
            "inference_count": int(stats.get("inference_count", 0)),
            "execution_count": int(stats.get("execution_count", 0)),
            "request_count": sum(
                int(stats.get("inference_stats", {}).get(outcome, {}).get("count", 0))
                for outcome in ("success", "fail")
            ),
        }
        if counts == previous or time.monotonic() > deadline:
            return counts
        previous = counts
        time.sleep(settle_s)


def check_outcomes(outcomes, rebuild, oracle):
    """Count the outcomes and find every answer that breaks a rule; ``rebuild(index)`` gives the request again."""
    checked = Checked(requests=len(outcomes), hostile=sum(1 for o in outcomes if o.kind != VALID.name))
    by_kind = collections.defaultdict(collections.Counter)
    expected = {}  # kind -> the classes its requests must get (a batched repository's may differ: BATCHED_CLASSES)
    messages = collections.defaultdict(collections.Counter)
    for outcome in outcomes:
        by_kind[outcome.kind][outcome.answer_class] += 1
        expected[outcome.kind] = tuple(outcome.expected)
        checked.by_transport[outcome.transport] = checked.by_transport.get(outcome.transport, 0) + 1
        if outcome.message:
            messages[outcome.answer_class][_message_shape(outcome.message)] += 1
        summary = outcome.as_dict()
        if outcome.answer_class == ANSWERED:
            if ANSWERED not in outcome.expected:
                checked.wrong_answers.append({**summary, "why": "answered, but the request must be refused"})
            else:
                equal, difference = oracle.differences(rebuild(outcome.index).frame, outcome.outputs)
                checked.answers_compared += 1
                checked.max_abs_diff = max(checked.max_abs_diff, difference)
                if not equal:
                    checked.wrong_answers.append({**summary, "why": f"differs from pyfunc.predict by {difference}"})
        if outcome.answer_class == RUNTIME_CLIENT_ERROR_AS_5XX:
            checked.runtime_client_errors_5xx.append(summary)
        if outcome.answer_class not in outcome.expected:
            checked.unexpected.append(summary)
    for name, classes in by_kind.items():
        kind = KINDS[name]
        checked.by_kind[name] = {
            "expected": expected[name],
            "what": kind.what,
            "transports": list(kind.transports),
            "classes": dict(classes),
        }
    checked.messages = {answer_class: dict(shapes) for answer_class, shapes in messages.items()}
    return checked


def _message_shape(message):
    """A message with its variable parts (numbers, quoted names, references) blanked, for counting kinds."""
    import re

    shape = re.sub(r"\(reference [0-9a-f]+\)", "(reference …)", message)
    shape = re.sub(r"'[^']*'", "'…'", shape)
    shape = re.sub(r"\d+", "N", shape)
    return shape[:160]


def latency_summary(outcomes):
    summary = {}
    valid = [o for o in outcomes if o.kind == VALID.name and o.answer_class == ANSWERED]
    for label, chosen in [("all", valid), *((t, [o for o in valid if o.transport == t]) for t in TRANSPORTS)]:
        seconds = np.array([o.seconds for o in chosen])
        if seconds.size:
            summary[label] = {
                "count": int(seconds.size),
                "p50": float(np.percentile(seconds, 50) * 1e3),
                "p99": float(np.percentile(seconds, 99) * 1e3),
            }
    return summary


# -- the whole soak -----------------------------------------------------------------------------------------------


def run_soak(settings, progress=print):
    """Run the soak; returns the :class:`SoakReport` (``report.violations()`` is empty when it passed)."""
    if settings.hostile_fraction < MIN_HOSTILE_FRACTION:
        raise ValueError(f"--hostile must be at least {MIN_HOSTILE_FRACTION}")
    if settings.clients < 1 or settings.requests < 1:
        raise ValueError("--clients and --requests must be at least 1")
    check_batched_settings(settings)
    from .run import machine

    work_dir = Path(settings.work_dir).resolve()
    work_dir.mkdir(parents=True, exist_ok=True)
    report = SoakReport(
        settings={**dataclasses.asdict(settings), "work_dir": str(work_dir)},
        machine=machine(),
        started=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
    )
    clock = time.monotonic()
    package, model_dir = save_soak_model(work_dir, settings.max_batch_size, settings.max_queue_delay_microseconds)
    layout = Layout.from_repository(model_dir)
    files = files_directory(model_dir)  # the model's files (its own directory: the soak writes no guard front)
    oracle = make_oracle(settings, package, files) if settings.max_batch_size else Oracle(package, files)
    report.seconds["save_model"] = round(time.monotonic() - clock, 1)

    clock = time.monotonic()
    server = start_server(model_dir, work_dir / "tritonserver.log", progress)
    try:
        report.seconds["server_ready"] = round(time.monotonic() - clock, 1)
        report.triton_version = server.version()
        outcomes, warmup_outcomes, settle_outcomes = _load(server, files.name, layout, settings, report, progress)
        report.triton_statistics = _settled_statistics(server.url, files.name)
    finally:
        server.__exit__(None, None, None)
    report.log_bytes = (work_dir / "tritonserver.log").stat().st_size

    clock = time.monotonic()
    report.warmup = check_outcomes(warmup_outcomes, _rebuild(layout, settings, WARMUP), oracle)
    report.settle = check_outcomes(settle_outcomes, _rebuild(layout, settings, SETTLE), oracle)
    report.run = check_outcomes(outcomes, lambda index: request_number(layout, settings, index), oracle)
    report.latency_ms = latency_summary(outcomes)
    if settings.max_batch_size:
        report.batching = oracle.figures(layout)
        report.batching["by_transport"] = kinds_by_transport((warmup_outcomes, outcomes, settle_outcomes))
    report.seconds["check"] = round(time.monotonic() - clock, 1)
    report.machine["load_average_end"] = _load_average()
    return report


def _load_average():
    import os

    return " ".join(f"{value:.2f}" for value in os.getloadavg())


def _rebuild(layout, settings, stream):
    return lambda index: planned_request(layout, settings, stream, -index - stream * 10**6)


def _load(server, model, layout, settings, report, progress):
    """Warm-up, RSS, the run (RSS sampled), settling, RSS; returns the outcomes of the run, warm-up and settling.
    ``model``: the model that predicts, whose stub is watched."""
    [stub] = stub_pids(server.pid, model)
    report.stub = {"pid_before": stub, "at_start": memory_mb(stub)}
    clock = time.monotonic()
    warmup_outcomes = send_planned(server, layout, settings, WARMUP)
    report.seconds["warmup"] = round(time.monotonic() - clock, 1)
    report.stub["before"] = memory_mb(stub)
    report.server_memory_mb["before"] = memory_mb(server.pid)

    progress(
        f"soak: {settings.requests} requests from {settings.clients} clients "
        f"({settings.hostile_fraction:.0%} hostile) on Triton {report.triton_version} ..."
    )
    monitor = StubMonitor(stub)
    monitor.start()
    clock = time.monotonic()
    outcomes, report.stub["during"] = run_clients(server, layout, settings, progress, stub)
    report.seconds["load"] = round(time.monotonic() - clock, 1)
    report.requests_per_second = round(len(outcomes) / report.seconds["load"], 1)
    monitor.stop()
    report.stub["at_end_of_run"] = memory_mb(stub)
    report.ready_after = {
        path: _http_status(server.url + path) for path in ("/v2/health/ready", f"/v2/models/{MODEL_NAME}/ready")
    }

    settle_outcomes = send_planned(server, layout, settings, SETTLE)
    report.stub.update(after=memory_mb(stub), rss_peak_mb=max(monitor.peak_mb, rss_mb(stub) or 0.0))
    after = stub_pids(server.pid, model)
    report.stub["pid_after"] = after[0] if len(after) == 1 else after
    if "rss" in report.stub["after"]:
        report.stub["rss_growth_mb"] = round(report.stub["after"]["rss"] - report.stub["before"]["rss"], 1)
    report.server_memory_mb["after"] = memory_mb(server.pid)
    return outcomes, warmup_outcomes, settle_outcomes


# -- the report -----------------------------------------------------------------------------------------------


def _table(header, rows):
    widths = [max(len(str(h)), *(len(str(r[i])) for r in rows)) for i, h in enumerate(header)]
    line = lambda cells: "| " + " | ".join(str(c).ljust(w) for c, w in zip(cells, widths)) + " |"  # noqa: E731
    return "\n".join([line(header), "| " + " | ".join("-" * w for w in widths) + " |", *map(line, rows)])


def _memory(figures):
    """``312.4 MiB (heap 190.1, shared memory 70.2)`` from ``memory_mb``'s figures."""
    if not figures:
        return "gone"
    return f"{figures['rss']:.1f} MiB (heap {figures.get('anon', 0):.1f}, shared memory {figures.get('shmem', 0):.1f})"


CLASS_ORDER = ("answered", "triton-400", "triton-parse-500", "runtime-400", "model-500")


def render(report):
    """The report as markdown."""
    s, m, run = report.settings, report.machine, report.run
    classes = list(CLASS_ORDER) + sorted({c for k in run.by_kind.values() for c in k["classes"]} - set(CLASS_ORDER))
    rows = []
    for name in KINDS:
        entry = run.by_kind.get(name)
        if entry is None:
            continue
        rows.append(
            [
                f"`{name}`",
                entry["what"],
                ", ".join(entry["transports"]),
                " or ".join(entry["expected"]),
                *(entry["classes"].get(c, "") for c in classes),
            ]
        )
    totals = collections.Counter()
    for entry in run.by_kind.values():
        totals.update(entry["classes"])
    rows.append(["**total**", "", "", "", *(totals.get(c, "") for c in classes)])
    latency = _table(
        ["valid requests", "count", "p50 ms", "p99 ms"],
        [[label, v["count"], f"{v['p50']:.2f}", f"{v['p99']:.2f}"] for label, v in report.latency_ms.items()],
    )
    stub = report.stub
    violations = report.violations()
    lines = [
        f"## Soak: {run.requests:,} requests, {report.started}",
        "",
        f"Triton {report.triton_version}, {m.get('nproc')} CPUs ({m.get('cpu')}), {m.get('memory')} RAM, "
        f"Python {m.get('python')}, " + ", ".join(f"{k} {v}" for k, v in m.get("packages", {}).items()) + "; "
        f"load average {m.get('load_average_start')} at the start, {m.get('load_average_end')} at the end (the "
        "server, the clients and the checks share the CPUs).",
        f"{s['clients']} concurrent clients (threads; each one keep-alive HTTP connection and one gRPC channel), "
        f"{run.hostile:,} hostile requests ({run.hostile / max(run.requests, 1):.0%}), seed {s['seed']}; "
        f"transports: " + ", ".join(f"{t} {n:,}" for t, n in sorted(run.by_transport.items())) + ". "
        f"Before the run, a warm-up of {report.warmup.requests} requests (every kind over every transport, "
        f"{WARMUP_MIXED} mixed like the run, then the settling requests); after it, the {report.settle.requests} "
        "settling requests again (both huge requests, then small valid ones) before the RSS is taken. Both are "
        f"checked like the run ({report.warmup.answers_compared + report.settle.answers_compared} more answers "
        "compared, "
        f"{len(report.warmup.violations('') + report.settle.violations(''))} failed checks) and not counted below.",
        "",
        "**Verdict: " + ("PASSED" if not violations else "FAILED") + "**" + ("" if not violations else ":"),
        *(f"- {v}" for v in violations),
        "",
        "| check | result |",
        "| --- | --- |",
        f"| answers equal to `pyfunc.predict` | {run.answers_compared:,} compared, {len(run.wrong_answers)} wrong "
        f"(largest float difference {run.max_abs_diff:.3g}) |",
        f"| runtime-detected client errors answered 5xx | {len(run.runtime_client_errors_5xx)} |",
        f"| requests answered with another class than their kind must get | {len(run.unexpected)} |",
        f"| ready after the run | {', '.join(f'{p} {c}' for p, c in report.ready_after.items())}; the "
        f"{report.settle.answers_compared} answers to the settling requests after it equal pyfunc's: "
        f"{'yes' if not report.settle.violations('') else 'NO'} |",
        f"| stub process (pid {stub.get('pid_before')}) RSS | {_memory(stub.get('at_start'))} at start; "
        f"{_memory(stub.get('before'))} after the warm-up; {_memory(stub.get('after'))} after the run and the settling "
        f"requests: growth **{stub.get('rss_growth_mb')} MiB** (limit {s['max_rss_growth_mb']:g}). During the run, "
        "after "
        "each tenth: "
        + ", ".join(f"{sample.get('rss')}" for sample in stub.get("during", []))
        + f" MiB; peak {stub.get('rss_peak_mb', 0):.1f} MiB. The same process after the run: "
        f"{'yes' if stub.get('pid_after') == stub.get('pid_before') else 'NO'} |",
        f"| tritonserver RSS | {_memory(report.server_memory_mb.get('before'))} after the warm-up, "
        f"{_memory(report.server_memory_mb.get('after'))} after the run |",
        f"| throughput | {report.requests_per_second} requests/s over {report.seconds.get('load')} s |",
        f"| who answered, by Triton's statistics | Triton counted {report.triton_statistics.get('inference_count')} "
        f"inferences; requests classed answered, runtime-400 or model-500 (warm-up and settling included): "
        f"{report.reached_model()} -- the `triton-*` ones never reached the model |",
        f"| server log | {report.log_bytes / 1e6:.1f} MB |",
        "",
        *batched_section(report),
        "Answers by kind and class (who answered: `triton-400` Triton's front end or config checks, before model code; "
        "`triton-parse-500` Triton's front end could not parse the body, before model code; `runtime-400` the "
        "generated runtime; `model-500` the model's `predict` raised):",
        "",
        _table(["kind", "what", "transports", "must get", *classes], rows),
        "",
        latency,
        "",
        "Timings (s): " + ", ".join(f"{k} {v}" for k, v in report.seconds.items()) + ".",
        "",
        "Error messages by class (numbers and quoted names blanked):",
        "",
    ]
    for answer_class, shapes in sorted(run.messages.items()):
        for shape, count in sorted(shapes.items(), key=lambda item: -item[1]):
            lines.append(f"- `{answer_class}` × {count}: `{shape}`")
    return "\n".join(lines) + "\n"


def parse_args(argv):
    parser = argparse.ArgumentParser(prog="python -m benchmarks.soak", description=__doc__.splitlines()[0])
    defaults = SoakSettings()
    parser.add_argument("--requests", type=int, default=defaults.requests)
    parser.add_argument("--clients", type=int, default=defaults.clients)
    parser.add_argument("--hostile", type=float, default=defaults.hostile_fraction, help="fraction of hostile requests")
    parser.add_argument("--seed", type=int, default=defaults.seed)
    parser.add_argument("--huge-mb", type=float, default=defaults.huge_mb, help="size of the two huge requests (MiB)")
    parser.add_argument("--max-rss-growth-mb", type=float, default=defaults.max_rss_growth_mb)
    parser.add_argument("--work-dir", type=Path, default=defaults.work_dir)
    parser.add_argument("--results", type=Path, help="write the markdown report here too")
    parser.add_argument("--batched", action="store_true", help="log the example with max_batch_size (batched soak)")
    parser.add_argument("--max-batch-size", type=int, default=64, help="with --batched (default 64)")
    parser.add_argument(
        "--max-queue-delay-us",
        type=int,
        default=defaults.max_queue_delay_microseconds,
        help="with --batched: dynamic_batching's max_queue_delay_microseconds",
    )
    args = parser.parse_args(argv)
    settings = SoakSettings(
        requests=args.requests,
        clients=args.clients,
        hostile_fraction=args.hostile,
        seed=args.seed,
        huge_mb=args.huge_mb,
        max_rss_growth_mb=args.max_rss_growth_mb,
        work_dir=args.work_dir,
        max_batch_size=args.max_batch_size if args.batched else 0,
        max_queue_delay_microseconds=args.max_queue_delay_us,
    )
    return settings, args.results


def main(argv=None):
    settings, results = parse_args(argv)
    report = run_soak(settings, progress=lambda line: print(line, file=sys.stderr, flush=True))
    text = render(report)
    print(text)
    (Path(report.settings["work_dir"]) / "soak-results.json").write_text(
        json.dumps(dataclasses.asdict(report), indent=1, default=str)
    )
    if results is not None:
        results.write_text(text)
    return 1 if report.violations() else 0


if __name__ == "__main__":
    sys.exit(main())
