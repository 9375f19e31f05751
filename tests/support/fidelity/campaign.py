"""One serving environment, one real Triton, many generated cases: log, load, compare, unload.

``Campaign.open(work_dir)`` logs three warm-up models (a scikit-learn recipe saved with cloudpickle,
a Pipeline saved with skops, a PyTorch module), builds -- or reuses from the cache -- one serving
environment satisfying all their requirements, and starts ``tritonserver`` in explicit
model-control mode with the warm-ups loaded. Each case then

1. builds its model and logs it with ``mlflow_triton.<framework>.log_model`` to a local sqlite store
   (or, for :meth:`Campaign.reject`, asserts that logging refuses it with the expected message and
   that no LoggedModel was created);
2. fetches the repository with ``triton.load_model(uri, dst_path=...)`` into the served repository,
   checks ``config.pbtxt`` against the README's mapping table and the repository's
   ``requirements.txt`` against the serving environment;
3. asks Triton to load it (``POST /v2/repository/models/<name>/load``) and, while Triton loads, loads
   the logged model with ``mlflow.pyfunc.load_model`` and predicts every input of the case;
4. sends the shipped request exactly as ``curl`` would, then every other input as JSON (where JSON
   can carry it) and with the binary tensor extension, and compares each answer with what
   ``pyfunc.predict`` implies (:mod:`.expectations`);
5. unloads the model in the background.

Timings per phase are kept for the report (:meth:`Campaign.report`).
"""

import collections
import concurrent.futures
import contextlib
import itertools
import json
import os
import shutil
import threading
import time
from pathlib import Path

import mlflow
import numpy as np
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from mlflow_triton import pytorch as triton_pytorch
from mlflow_triton import sklearn as triton_sklearn
from mlflow_triton import triton
from mlflow_triton.local import TritonInstallation, TritonServer, send_shipped_request
from mlflow_triton.local._compare import differences
from mlflow_triton.local.serving_env import (
    ENV_RECORD,
    ensure_env_for_requirements,
    recorded_versions,
    requirement_lines,
)
from mlflow_triton.repository.config import declarations, read_config, wire_arrays

from . import client
from .cases import (
    Case,
    Field,
    Input,
    Output,
    build_model,
    import_fidelity_models,
    is_nested,
    model_value,
    nested_type,
    raw_arrays,
    signature,
)
from .cases import malformed_input as _malformed_input
from .expectations import (
    SCHEMA_REFUSED,
    Answer,
    check_config,
    enforcement_failure,
    exact_arithmetic,
    expected_answer,
    expected_rejection,
    malformed_failure,
    own_prediction,
)

PROGRESS_BAR_VARIABLE = "MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR"
PHASES = ("log", "fetch", "load", "oracle", "requests", "unload")
WARM_UP_CASES = (
    Case(
        "sklearn-recipe",
        "columns",
        (Field("x", "float64"),),
        (Output("y", 0, "echo"),),
        "frame",
        False,
        (Input(((2,),), ((0.5, -1.0),)),),
        (("serialization", "cloudpickle"),),
    ),
    Case(
        "sklearn-pipeline",
        "columns",
        (Field("x", "float64"), Field("t", "text")),
        (Output(None, 0, "predict"),),
        "array",
        False,
        (Input(((2,), (2,)), ((0.5, -1.0), ("a", "b"))),),
        (("estimator", "logistic-labels"), ("serialization", "skops")),
    ),
    Case(
        "pytorch-recipe",
        "tensor",
        (Field(None, "float32", (-1, 2)),),
        (Output(None, 0, "echo"),),
        "array",
        False,
        (Input(((1, 2),), ((0.5, -1.0),)),),
    ),
)


class CaseFailure(AssertionError):
    """Triton's answer differs from what ``pyfunc.predict`` implies (or a step of the case failed)."""


class Campaign:
    def __init__(self, work_dir, server, env, installation):
        self.work_dir = Path(work_dir)
        self.root = self.work_dir / "repository"
        self.server = server
        self.env = env
        self.installation = installation
        self.installed = recorded_versions(json.loads((Path(env) / ENV_RECORD).read_text()))
        self._numbers = itertools.count(1)
        self._lock = threading.Lock()  # bookkeeping, when cases run in several threads (make fidelity)
        # Logging and pyfunc loads, one at a time: MLflow puts code_paths on sys.path and drops the modules found
        # there from sys.modules while loading; the slow part, Triton loading a model, still overlaps.
        self._mlflow_lock = threading.Lock()
        self.phase_seconds = collections.defaultdict(list)
        self.case_seconds = []  # (total, {phase: seconds}, description)
        self.counts = collections.Counter()
        self.started = time.monotonic()
        self._unloads = []

    # -- set-up ---------------------------------------------------------------------------------------

    @classmethod
    @contextlib.contextmanager
    def open(cls, work_dir, progress=print):
        """A campaign with its server running; stops the server and every stub on exit."""
        from tests.support.environment import preserved_environment
        from tests.support.tiny_models import sqlite_tracking

        import_fidelity_models()
        work_dir = Path(work_dir)
        (work_dir / "repository").mkdir(parents=True, exist_ok=True)
        (work_dir / "store").mkdir(exist_ok=True)
        with sqlite_tracking(work_dir / "store"), preserved_environment((PROGRESS_BAR_VARIABLE,)):
            os.environ[PROGRESS_BAR_VARIABLE] = "false"  # a bar per download would flood the log
            started = time.monotonic()
            warm_ups = []
            for number, case in enumerate(WARM_UP_CASES):
                name = f"warm_up_{number}"
                info = _log(case, name)
                _fetch(info.model_uri, work_dir / "downloads" / name, work_dir / "repository" / name)
                warm_ups.append(name)
            lines = sorted(
                {
                    line
                    for name in warm_ups
                    for line in requirement_lines((work_dir / "repository" / name / "requirements.txt").read_text())
                }
            )
            progress(
                f"fidelity: warm-up models logged in {time.monotonic() - started:.1f}s; serving environment for {lines}"
            )
            installation = TritonInstallation.bundled(progress=None)
            started = time.monotonic()
            env = ensure_env_for_requirements(
                lines,
                installation.serving_constraints,
                progress=progress,
                source="the fidelity campaign",
                reuse_superset=True,
            )
            progress(f"fidelity: serving environment {env} ready in {time.monotonic() - started:.1f}s")
            server = TritonServer(
                work_dir / "repository",
                warm_ups,
                installation=installation,
                serving_env=env,
                log_path=work_dir / "tritonserver.log",
                startup_timeout=300,
            )
            with server:
                progress(
                    f"fidelity: Triton {server.version()} ready with the warm-up models in "
                    f"{server.ready_seconds:.1f}s (log: {server.log_path})"
                )
                campaign = cls(work_dir, server, env, installation)
                try:
                    yield campaign
                finally:
                    campaign.wait_for_unloads()

    # -- one case ----------------------------------------------------------------------------------------

    def expected_rejection(self, case):
        """What ``log_model`` must refuse for ``case`` (None: it must log it); see ``expectations``."""
        model, _ = build_model(case)
        value = model_value(case, case.example)
        try:
            prediction = own_prediction(case, model, value)
        except Exception:  # a model that cannot predict its own example: logging must fail; checked by reject()
            return None
        return expected_rejection(case, prediction)

    def reject(self, case, rejection):
        """Assert that logging ``case`` raises ``rejection`` and creates no LoggedModel."""
        import re

        before = len(mlflow.search_logged_models(output_format="list"))
        try:
            with self._mlflow_lock:
                _log(case, f"case_{next(self._numbers)}")
        except Exception as error:  # the assertion below says which
            if type(error).__name__ != rejection.error or not re.search(rejection.pattern, str(error)):
                raise CaseFailure(
                    f"expected {rejection.error} matching {rejection.pattern!r}, got {type(error).__name__}: {error}"
                ) from error
        else:
            raise CaseFailure(
                f"log_model accepted a case it must reject with {rejection.error} matching {rejection.pattern!r}"
            )
        after = len(mlflow.search_logged_models(output_format="list"))
        if after != before:
            raise CaseFailure(f"the rejected case left {after - before} LoggedModel(s) behind")
        with self._lock:
            self.counts["rejected"] += 1
            self.counts[f"rejected: {rejection.error}"] += 1

    @contextlib.contextmanager
    def loaded(self, case, seconds=None):
        """Log ``case``, fetch and check its repository and start loading it into Triton.

        Yields a :class:`Loaded` (call ``wait()`` before sending requests); unloads the model afterwards.
        ``seconds`` receives the time of each phase.
        """
        seconds = {} if seconds is None else seconds
        name = f"case_{next(self._numbers)}"
        clock = time.monotonic()
        with self._mlflow_lock:
            info = _log(case, name)
        seconds["log"] = _lap(clock)
        clock = time.monotonic()
        model_dir = self.root / name
        with self._mlflow_lock:
            download = _fetch(info.model_uri, self.work_dir / "downloads" / name, model_dir)
        config, contract = read_config(model_dir / "config.pbtxt")
        inputs, outputs = declarations(config)
        check_config(case, contract, inputs, outputs)
        self._check_requirements(model_dir)
        seconds["fetch"] = _lap(clock)
        loading = _Loading(self.server, name)
        try:
            with self._mlflow_lock:
                pyfunc_model = mlflow.pyfunc.load_model(str(download))
            yield Loaded(self, name, model_dir, config, contract, inputs, outputs, pyfunc_model, loading, seconds)
        finally:
            loading.thread.join()
            with self._lock:
                self._unloads.append(_Unloading(self.server, name, model_dir, download))

    def serve(self, case):
        """Log, load, compare every input in both encodings, unload. Raises ``CaseFailure``."""
        seconds = {}
        with self.loaded(case, seconds) as model:
            clock = time.monotonic()
            planned = []
            for number, model_input in enumerate(case.inputs):
                value = model_value(case, model_input)
                arrays = _with_masks(model.contract, dict(zip(model.input_tensors, raw_arrays(case, model_input))))
                try:
                    expected = expected_answer(
                        model.contract, model.outputs, prediction=model.pyfunc_model.predict(value)
                    )
                except Exception as error:  # pyfunc's own failure is the expected answer
                    empty = any(array.size == 0 for array in arrays.values())
                    expected = expected_answer(model.contract, model.outputs, error=error, empty=empty)
                planned.append((number, model_input, arrays, model.as_answered(expected)))
            malformed = [self._malformed_plan(case, model, entry, planned) for entry in case.malformed]
            seconds["oracle"] = _lap(clock)
            model.wait()
            clock = time.monotonic()
            try:
                exact = exact_arithmetic(case)
                self._shipped(model, planned[0][3], exact)
                if model.batched:
                    self._concurrently(model, planned[1:], exact)
                for number, model_input, arrays, expected in planned[1:]:
                    encodings = ["binary"] + (["json"] if client.json_carries(arrays, model.datatypes) else [])
                    for encoding in encodings:
                        status, answer = model.infer(arrays, encoding, ensure_ascii=number % 2 == 0)
                        self._compare(
                            f"input {number} ({model_input.rows} rows, {encoding})", expected, status, answer, exact
                        )
                        with self._lock:
                            self.counts[f"requests: {encoding}"] += 1
                            self.counts[f"answers: {_outcome(expected)}"] += 1
                for entry, arrays, expected in malformed:
                    encodings = ["binary"] + (["json"] if client.json_carries(arrays, model.datatypes) else [])
                    for encoding in encodings:
                        status, answer = model.infer(arrays, encoding)
                        self._compare(
                            f"malformed {entry.problem} request (input {entry.base}, field {entry.field}, row "
                            f"{entry.row} sent as {entry.text!r}, {encoding})",
                            expected,
                            status,
                            answer,
                            exact,
                        )
                        with self._lock:
                            self.counts[f"malformed nested: {entry.problem} -> {_malformed_outcome(expected)}"] += 1
            finally:
                seconds["requests"] = _lap(clock)
        self._record(case, seconds)

    def _malformed_plan(self, case, model, entry, planned):
        """``(entry, arrays, expected)`` for a :class:`~.cases.Malformed` request of ``case``.

        Bad JSON and numbers a narrow leaf cannot hold are the runtime's refusals (the docs' messages);
        for a wrong element type or a missing property ``pyfunc.predict`` of the same value judges: where
        its schema enforcement refuses it, a 400 naming the column and the row, else its prediction.
        """
        base = case.inputs[entry.base]
        if not isinstance(planned[entry.base][3], Answer):
            raise CaseFailure(f"malformed request on input {entry.base}, which itself is not answered (a draw defect)")
        arrays = raw_arrays(case, base)
        texts = arrays[entry.field].copy()
        texts[entry.row] = entry.text.encode("utf-8")
        arrays[entry.field] = texts
        arrays = _with_masks(model.contract, dict(zip(model.input_tensors, arrays)))
        mapped = model.contract.inputs.fields[entry.field]
        if entry.problem in ("bad-json", "narrow"):
            return entry, arrays, malformed_failure(entry, mapped)
        value = model_value(case, _malformed_input(case, entry))
        try:
            expected = expected_answer(model.contract, model.outputs, prediction=model.pyfunc_model.predict(value))
        except Exception as error:
            expected = expected_answer(model.contract, model.outputs, error=error)
            if getattr(expected, "message_start", None) == SCHEMA_REFUSED:
                expected = enforcement_failure(entry, mapped)
        return entry, arrays, model.as_answered(expected)

    # -- checks ------------------------------------------------------------------------------------------

    def _concurrently(self, model, planned, exact):
        """A batched model: send every input at once (binary), so that Triton joins them; compare each answer."""
        if not planned:
            return
        with concurrent.futures.ThreadPoolExecutor(max_workers=len(planned)) as pool:
            answers = list(pool.map(lambda entry: model.infer(entry[2], "binary"), planned))
        for (number, model_input, _, expected), (status, answer) in zip(planned, answers):
            self._compare(
                f"input {number} ({model_input.rows} rows, binary, sent with {len(planned) - 1} others)",
                expected,
                status,
                answer,
                exact,
            )
            with self._lock:
                self.counts["requests: batched (sent at once)"] += 1

    def _shipped(self, model, expected, exact):
        if not isinstance(expected, Answer):
            raise CaseFailure(f"pyfunc does not answer the input example ({expected}), yet logging accepted it")
        try:
            response = send_shipped_request(self.server.url, model.directory, transport="curl")
        except Exception as error:  # InferenceError and transport errors: the shipped request must be answered
            raise CaseFailure(f"the shipped request was not answered: {error}\n{self.server.log_tail(20)}") from error
        with self._lock:
            self.counts[f"shipped: {response.form}"] += 1
        problems = differences(expected.outputs, response.outputs, exact)
        if problems:
            raise CaseFailure(f"the shipped {response.form} request: " + "; ".join(problems))

    def _compare(self, what, expected, status, answer, exact):
        if isinstance(expected, Answer):
            if status != 200:
                raise CaseFailure(f"{what}: expected the prediction, got HTTP {status}: {answer}")
            problems = differences(expected.outputs, answer, exact)
            if problems:
                raise CaseFailure(f"{what}: outputs differ from pyfunc.predict: " + "; ".join(problems))
            return
        if (
            status != expected.status
            or not str(answer).startswith(expected.message_start)
            or expected.contains not in str(answer)
        ):
            raise CaseFailure(
                f"{what}: expected HTTP {expected.status} starting {expected.message_start!r} "
                f"and saying {expected.contains!r}, got HTTP {status}: {str(answer)[:500]}"
            )

    def _check_requirements(self, model_dir):
        unmet = []
        for line in requirement_lines((model_dir / "requirements.txt").read_text()):
            requirement = Requirement(line)
            version = self.installed.get(canonicalize_name(requirement.name))
            if version is None or not requirement.specifier.contains(version, prereleases=True):
                unmet.append(f"{line} (installed: {version})")
        if unmet:
            raise CaseFailure(f"the campaign's serving environment {self.env} does not satisfy {unmet}")

    # -- bookkeeping -------------------------------------------------------------------------------------

    def _record(self, case, seconds):
        with self._lock:
            for phase, value in seconds.items():
                self.phase_seconds[phase].append(value)
            self.case_seconds.append((sum(seconds.values()), seconds, case.describe()))
            self.counts["served"] += 1
            self.counts[f"family: {case.family}/{case.structure}/{case.form}"] += 1
            nested = [_nested_shape(nested_type(field.kind)) for field in case.fields if is_nested(field.kind)]
            if nested:
                self.counts["nested columns: cases"] += 1
                for kind in nested:
                    self.counts[f"nested columns: {kind}"] += 1

    def wait_for_unloads(self):
        with self._lock:
            unloads, self._unloads = self._unloads, []
        for unloading in unloads:
            unloading.wait()
            with self._lock:
                self.phase_seconds["unload"].append(unloading.seconds)

    def report(self, seed, failures=()):
        """The campaign's figures as a dict (written to JSON and printed as a summary)."""
        self.wait_for_unloads()
        phases = {}
        for phase in PHASES:
            values = self.phase_seconds.get(phase, [])
            if values:
                phases[phase] = {
                    "total_s": round(sum(values), 1),
                    "mean_s": round(sum(values) / len(values), 2),
                    "max_s": round(max(values), 2),
                }
        slowest = sorted(self.case_seconds, key=lambda entry: entry[0], reverse=True)[:10]
        return {
            "seed": seed,
            "served": self.counts["served"],
            "rejected": self.counts["rejected"],
            "counts": dict(sorted(self.counts.items())),
            "failures": list(failures),
            "wall_s": round(time.monotonic() - self.started, 1),
            "phases": phases,
            "slowest_cases": [
                {"total_s": round(total, 2), "phases": {k: round(v, 2) for k, v in parts.items()}, "case": description}
                for total, parts, description in slowest
            ],
            "triton_version": self.server.version(),
            "serving_env": str(self.env),
        }


def _with_masks(contract, arrays):
    """``arrays`` plus the missing-value mask of each optional input column: ``True`` where a float is NaN
    (the value sent there stays NaN: the runtime must ignore it, docs/repository.md)."""
    masks = {}
    for field in contract.inputs.fields:
        if field.missing is not None:
            values = arrays[field.tensor]
            masks[field.missing] = np.isnan(values) if values.dtype.kind == "f" else np.zeros(values.shape, bool)
    return {**arrays, **masks}


class Loaded:
    """A case's model as Triton serves it: its repository, mapping, ``pyfunc`` model and a client."""

    def __init__(self, campaign, name, directory, config, contract, inputs, outputs, pyfunc_model, loading, seconds):
        self.campaign, self.name, self.directory, self.config = campaign, name, directory, config
        self.batched = config.max_batch_size > 0
        self.contract, self.inputs, self.outputs = contract, inputs, outputs
        self.pyfunc_model, self._loading, self._seconds = pyfunc_model, loading, seconds
        self.input_tensors = [field.tensor for field in contract.inputs.fields]
        self.datatypes = {d.name: d.data_type for d in inputs}
        self.output_types = [(d.name, d.data_type) for d in outputs]
        self.binary_outputs = {f.tensor for f in contract.outputs.fields if f.content == "binary"}

    def wait(self):
        """Until Triton has loaded the model; ``CaseFailure`` with Triton's reason if it could not."""
        self._loading.wait(self.campaign)
        self._seconds["load"] = self._loading.seconds

    def as_answered(self, expected):
        """``expected`` in the shapes Triton answers (a batched rank-one output is ``[rows, 1]``)."""
        if isinstance(expected, Answer):
            return Answer(wire_arrays(self.config, "output", expected.outputs))
        return expected

    def infer(self, arrays, encoding, ensure_ascii=True):
        """``(status, outputs or error text)`` for ``arrays`` (``{tensor: array}``, logged shapes) sent as
        ``encoding``, in the shapes the config declares (a batched rank-one tensor goes as ``[rows, 1]``)."""
        arrays = wire_arrays(self.config, "input", arrays)
        if encoding == "json":
            body, headers = client.json_body(
                arrays, self.datatypes, self.output_types, ensure_ascii=ensure_ascii, binary_outputs=self.binary_outputs
            )
        else:
            body, headers = client.binary_body(arrays, self.datatypes, self.output_types)
        return client.infer(self.campaign.server.http_port, self.name, body, headers)


class _Loading:
    """``POST /v2/repository/models/<name>/load`` in a thread: Triton loads while the oracle runs."""

    def __init__(self, server, name):
        self.server, self.name = server, name
        self.started = time.monotonic()
        self.result = None
        self.seconds = None
        self.thread = threading.Thread(target=self._load, daemon=True)
        self.thread.start()

    def _load(self):
        try:
            self.result = client.post(
                self.server.http_port, f"/v2/repository/models/{self.name}/load", b"{}", client.JSON_HEADERS
            )
        except Exception as error:  # reported by wait()
            self.result = (None, {}, repr(error).encode())
        self.seconds = time.monotonic() - self.started

    def wait(self, campaign):
        self.thread.join()
        status, _, body = self.result
        if status != 200:
            raise CaseFailure(
                f"Triton did not load {self.name} (HTTP {status}): {body.decode(errors='replace')}\n"
                f"--- last lines of the Triton log ---\n{campaign.server.log_tail(30)}"
            )


class _Unloading:
    """Unload in a thread; then remove the served copy and the download."""

    def __init__(self, server, name, *directories):
        self.started = time.monotonic()
        self.seconds = None
        self.thread = threading.Thread(target=self._unload, args=(server, name, directories), daemon=True)
        self.thread.start()

    def _unload(self, server, name, directories):
        try:
            client.post(server.http_port, f"/v2/repository/models/{name}/unload", b"{}", client.JSON_HEADERS)
        except OSError:
            pass  # the server is gone; the campaign's failure says why
        self.seconds = time.monotonic() - self.started
        for directory in directories:
            shutil.rmtree(directory, ignore_errors=True)

    def wait(self):
        self.thread.join()


def _log(case, name):
    model, options = build_model(case)
    wrapper = triton_pytorch if case.family == "pytorch-recipe" else triton_sklearn
    return wrapper.log_model(
        model,
        input_example=model_value(case, case.example),
        signature=signature(case),
        name=name,
        triton_model_name=name,
        protocol="tensors",  # the campaign's oracle (expectations) judges the typed tensor mapping
        **options,
    )


def _fetch(model_uri, download, served):
    """Download the logged model; move its Triton directory to ``served``; return the MLflow model dir."""
    repository = triton.load_model(model_uri, dst_path=str(download))
    shutil.move(str(repository), str(served))
    return repository.parent.parent


def _outcome(expected):
    if isinstance(expected, Answer):
        return "prediction"
    if expected.contains:
        return f"HTTP {expected.status} empty request the model cannot predict"
    return f"HTTP {expected.status} {expected.message_start.split(':')[0]}"


def _malformed_outcome(expected):
    if isinstance(expected, Answer):
        return "prediction (pyfunc.predict accepts the row)"
    if expected.message_start == SCHEMA_REFUSED:
        return f"HTTP {expected.status} MLflow's enforcement, naming the column and row"
    if expected.message_start.startswith("Tensor `"):
        return f"HTTP {expected.status} the runtime's refusal, naming the tensor and row"
    return _outcome(expected)


def _nested_shape(mlflow_type):
    """``array(<leaf>)``, ``object`` or ``array(object)``, for the counts."""
    if mlflow_type["type"] == "array":
        return f"array({mlflow_type['items']['type']})"
    return mlflow_type["type"]


def _lap(started):
    return time.monotonic() - started


__all__ = ["Campaign", "CaseFailure"]
