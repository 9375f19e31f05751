"""``mlflow-triton check``: prove a generated repository on a real Triton server.

For each model: fetch the repository (:func:`~mlflow_triton.local.sources.resolve_model`),
compute the expected outputs with ``mlflow.pyfunc`` on the saved input example (and on a
user's ``--input`` file), serve a copy of the repository from a fresh directory with a cached
serving environment, send the shipped request exactly as ``curl`` would, compare, and report.
A model's failure is a FAIL report with the reason, never an exception; only an interruption
(Ctrl-C, SIGTERM) stops the whole check, after stopping what it started.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, cast

from tritonclient.grpc import model_config_pb2

from mlflow_triton.command_line import ProgressLike, as_progress, without_user_info
from mlflow_triton.repository.config import DEVICE_KINDS, ENV_PATH_PARAMETER, read_model_config
from mlflow_triton.repository.guard import files_directory, served_directories, stream_model
from mlflow_triton.repository.layout import (
    CONFIG_FILE,
    MLMODEL_FILE,
    REQUIREMENTS_FILE,
    VALIDATION_FILE,
    artifact_directory,
)
from mlflow_triton.repository.tracing import UNTRACED_SERVER_ENVIRONMENT, untraced
from mlflow_triton.runtime.protocol import JSON_CONTENT_TYPE
from mlflow_triton.shared_contract import MlflowTritonError

from . import _oracle_env
from ._compare import (
    MLFLOW_BODY,
    VOLATILE,
    ScoringRefusal,
    compare,
    compare_chunks,
    expected_outputs,
    export_tolerance,
    load_input_example,
    load_input_example_params,
    predict_outputs,
    protocol_outputs,
    speaks_mlflow_protocol,
    stream_chunks,
    volatile_outputs,
)
from ._download import empty_download_dir
from ._server import BARE_PATH, TritonServer
from ._stream import grpc_chunks, http_chunks, shipped_body
from .errors import InferenceError, ModelSourceError, OraclePredictionError, TritonStartError
from .installation import TritonInstallation
from .send import RequestFiles, send_request, shipped_request
from .serving_env import ensure_serving_env, env_summary
from .sources import resolve_model
from .user_input import body_request, input_request, load_user_input, rows_of, split_params

__all__ = [
    "ValidationReport",
    "check_models",
    "expected_outputs",
    "packed_environment",
    "validate_model",
    "validate_repository",
    "write_report",
]

#: The streaming transports ``check`` proves a streaming model over (the report's ``streams`` keys).
GRPC_STREAM = "gRPC stream"
HTTP_STREAM = "HTTP generate_stream"
#: The Python backend's parameter naming an environment the model directory carries (``mlflow-triton pack``).
_MODEL_DIRECTORY = "$$TRITON_MODEL_DIRECTORY"


@dataclasses.dataclass
class ValidationReport:
    """One model's real-Triton validation, as written to the JSON report."""

    model: str
    passed: bool = False
    reason: str = ""
    model_uri: str | None = None
    triton_model: str | None = None
    repository: str | None = None
    triton_version: str | None = None
    device: str = "cpu"
    request_form: str | None = None
    comparison: dict = dataclasses.field(default_factory=dict)
    inputs: list = dataclasses.field(default_factory=list)
    seconds: dict = dataclasses.field(default_factory=dict)
    serving_env: dict = dataclasses.field(default_factory=dict)
    environment_note: str | None = None  # where the serving, oracle and logging environments differ (_oracle_env)
    logs: dict = dataclasses.field(default_factory=dict)
    triton_log_tail: str | None = None
    streams: dict = dataclasses.field(default_factory=dict)  # a streaming model's chunks per transport, compared

    def line(self) -> str:
        """``PASS|FAIL <model>: <reason>`` on one line (a multi-line reason is joined with `` | ``)."""
        verdict = "PASS" if self.passed else "FAIL"
        reason = " | ".join(part.strip() for part in self.reason.strip().splitlines() if part.strip())
        return without_user_info(f"{verdict} {self.model}: {reason}")

    def to_dict(self) -> dict[str, Any]:
        """The report's JSON form; no URL in it carries user info (an error may have quoted one)."""
        facts = json.loads(without_user_info(json.dumps(dataclasses.asdict(self))))
        return {"real_triton_validation": True, **facts}


@dataclasses.dataclass(frozen=True)
class StreamCheck:
    """A streaming repository's ``<name>_stream`` (``model``: ``None`` for a repository without one whose model
    streams the shipped body: ``check`` then says how to add it): the body and the chunks ``predict_stream`` yields."""

    model: str | None
    body: str
    expected: list[str]


@dataclasses.dataclass(frozen=True)
class ExtraRequest:
    """A request besides the shipped one (``--input``), with what Triton should answer."""

    label: str
    request: RequestFiles
    expected: dict
    rows: int | None  # None: a body of MLflow's serving protocol, whose rows MLflow's parser counts


def check_models(
    model_uris: Sequence[str],
    work_dir: str | os.PathLike[str],
    installation: TritonInstallation,
    *,
    device: str = "cpu",
    input_file: str | os.PathLike[str] | None = None,
    progress: ProgressLike = print,
    out: Callable[[str], object] = print,
    repository_addresses: Mapping[str, str] | None = None,
    server_environment: dict[str, str] | None = None,
) -> list[ValidationReport]:
    """Check each model in turn; ``out`` receives one PASS/FAIL line per model. Returns the reports.

    Each model gets ``work_dir/<n>-<name>/`` (downloaded model, served copy, Triton log).
    ``repository_addresses`` (``{model URI: address}``): Triton loads those models from that model
    repository address (for example ``s3://…``) instead of a local copy; ``server_environment`` adds
    variables to the server's environment. The downloaded copy still gives the oracle and the requests.
    Neither the oracle here nor the model in Triton traces its predictions (``repository.tracing``).
    """
    say = as_progress(progress)
    reports = []
    environment = {**UNTRACED_SERVER_ENVIRONMENT, **(server_environment or {})}
    for number, uri in enumerate(model_uris, start=1):
        model_work = Path(work_dir) / f"{number}-{_slug(uri)}"
        with untraced():
            report = validate_model(
                uri,
                model_work,
                installation,
                device=device,
                progress=say.with_prefix(f"[{uri}] "),
                name=uri,
                input_file=input_file,
                repository_address=(repository_addresses or {}).get(uri),
                server_environment=environment,
            )
        if report.environment_note:
            out(report.environment_note)
        if report.triton_log_tail and not report.passed:
            out(
                f"--- last lines of the Triton log ({report.logs.get('tritonserver')}) ---\n"
                f"{report.triton_log_tail.rstrip()}"
            )
        out(report.line())
        reports.append(report)
    return reports


def validate_model(
    model_uri: str,
    work_dir: str | os.PathLike[str],
    installation: TritonInstallation,
    *,
    device: str = "cpu",
    progress: ProgressLike = print,
    name: str | None = None,
    input_file: str | os.PathLike[str] | None = None,
    repository_address: str | None = None,
    server_environment: dict[str, str] | None = None,
) -> ValidationReport:
    """Fetch the logged model's repository and validate it; returns a ``ValidationReport``."""
    say = as_progress(progress)
    work_dir = Path(work_dir)
    report = ValidationReport(model=name or str(model_uri), model_uri=str(model_uri), device=device)
    started = time.monotonic()
    try:
        say.say("fetching the model's Triton repository ...")
        empty_download_dir(work_dir / "download", model_uri)
        source = resolve_model(str(model_uri), work_dir / "download")
        if source.text_export is None and (not source.generated or source.pyfunc_uri is None):
            raise ModelSourceError(
                f"{model_uri}: the Triton directory was not generated by mlflow_triton's wrappers (no mlflow_contract, "
                "shipped request or 1/artifact/): check needs a model logged with mlflow_triton.sklearn|pytorch|"
                "transformers.log_model"
            )
        report.triton_model = source.name
        say.say(
            f"repository {source.repository} (Triton model {source.name!r}); computing the expected outputs "
            "with mlflow.pyfunc ..."
        )
        expected, extra, predict_again, stream = _expected_answers(source, input_file, work_dir)
        report.seconds["prepare"] = round(time.monotonic() - started, 1)
    except Exception as error:  # a FAIL line for this model; Ctrl-C and SIGTERM (BaseException) stop the check
        report.reason = _failure_text(error)
        return report
    report = validate_repository(
        source.repository,
        expected,
        work_dir,
        installation,
        device=device,
        progress=say,
        name=report.model,
        report=report,
        extra_requests=extra,
        repository_address=repository_address,
        server_environment=server_environment,
        stream=stream,
    )
    if any(not result["equal"] for result in report.comparison.values()):
        report.reason += _not_deterministic(expected, predict_again, volatile_outputs(source.files))
    elif report.passed and stream is not None and stream.model is None:
        added_from = _source_uri(source, model_uri)
        report.reason += (
            f"; its pyfunc also streams (predict_stream): `mlflow-triton add-repository {added_from} --stream` adds a "
            "model that serves its chunks over gRPC streams and HTTP generate_stream"
        )
    return report


def _source_uri(source, model_uri):
    """The model a repository was added from (validation.json's ``source``), else ``model_uri`` itself."""
    path = source.files / VALIDATION_FILE
    recorded = json.loads(path.read_text(encoding="utf-8")).get("source", {}) if path.is_file() else {}
    return recorded.get("model_uri") or model_uri


def _streamable(model_dir):
    """Whether the MLflow model in the directory's ``1/artifact`` says it streams (``streamable`` in its MLmodel)."""
    from mlflow.models import Model

    mlmodel = artifact_directory(model_dir) / MLMODEL_FILE
    return mlmodel.is_file() and bool((Model.load(str(mlmodel)).flavors.get("python_function") or {}).get("streamable"))


def _not_deterministic(expected, predict_again, volatile):
    """Why no server can answer like ``pyfunc.predict`` when a second prediction of the example differs from the
    first (a generation pipeline that samples): ``"; <why>"``, or ``""`` when the model answers the same twice."""
    try:
        again = predict_again()
    except Exception:  # the model's own predict; it predicted once, a second failure says nothing of the server
        return ""
    comparison = compare(expected, again, volatile=volatile)
    unequal = sorted(name for name, result in comparison.items() if not result["equal"])
    if not unequal:
        return ""
    return (
        f"; but pyfunc.predict itself answered the saved example differently on a second call ({', '.join(unequal)}): "
        "the model is not deterministic (a generation pipeline that samples, a random draw), so no server can "
        "answer like it; make it deterministic to check it (a Transformers pipeline: "
        "model_config={'do_sample': False})"
    )


def _expected_answers(source, input_file, work_dir):
    """What Triton should answer to the shipped request and to ``input_file`` (``pyfunc`` is the oracle), a
    function that predicts the saved example once more, and for a streaming repository the :class:`StreamCheck`."""
    import mlflow.pyfunc

    try:
        pyfunc_model = mlflow.pyfunc.load_model(source.pyfunc_uri)
    except Exception as error:  # whatever the flavor's loader raises
        raise OraclePredictionError(
            f"mlflow.pyfunc could not load {source.uri}: {type(error).__name__}: {error}"
        ) from None
    if source.text_export is not None:
        return (*_text_export_answers(source, pyfunc_model, input_file), None)
    if speaks_mlflow_protocol(source.files):  # the oracle is MLflow's /invocations code on the same body
        expected = _predicted_body(pyfunc_model, source.files)
        extra = []
        if input_file is not None:  # a body, as a client of `mlflow models serve` sends it
            request, body, content_type = body_request(input_file, work_dir / "requests")
            label = f"input file {Path(input_file).name}"
            extra.append(
                ExtraRequest(
                    label=label,
                    request=request,
                    expected=_predicted_body(
                        pyfunc_model, source.files, body, content_type, what=f"the body of the input file {input_file}"
                    ),
                    rows=None,
                )
            )
        return expected, extra, lambda: _predicted_body(pyfunc_model, source.files), _stream_check(source, pyfunc_model)
    example, params = load_input_example(source.files), load_input_example_params(source.files)
    expected = _predicted(pyfunc_model, example, source.files, "the saved input example", params)
    extra = []
    if input_file is not None:
        value, input_params = split_params(load_user_input(input_file, pyfunc_model.metadata))
        label = f"input file {Path(input_file).name}"
        extra.append(
            ExtraRequest(
                label=label,
                request=input_request(value, source.files, work_dir / "requests", params=input_params),
                expected=_predicted(pyfunc_model, value, source.files, f"the {label}", input_params),
                rows=rows_of(value),
            )
        )

    def predict_again():  # on the example read afresh: predict may have changed the one it was given
        return predict_outputs(pyfunc_model, load_input_example(source.files), source.files, params)

    return expected, extra, predict_again, None


def _stream_check(source, pyfunc_model):
    """The :class:`StreamCheck` of a streaming repository: the shipped body's chunks as ``pyfunc.predict_stream``
    yields them; for a repository without a streaming model, one whose ``model`` is ``None`` where the model streams
    that body (a ``ChatModel`` is always marked streamable, and may not stream), else ``None``."""
    model = stream_model(source.repository)
    if model is None and not _streamable(source.files):
        return None
    body = shipped_body(source.files)
    try:
        expected = stream_chunks(_streamed_pyfunc(source, model, pyfunc_model), body.encode("utf-8"))
    except Exception as error:  # MLflow's refusal or the model's own predict_stream
        if model is None:
            return None
        raise OraclePredictionError(
            f"pyfunc.predict_stream could not stream the shipped body: {type(error).__name__}: {error}"
        ) from None
    if model is None and not expected:
        return None
    return StreamCheck(model, body, expected)


def _streamed_pyfunc(source, model, pyfunc_model):
    """The pyfunc whose ``predict_stream`` the streaming model ``model`` serves: ``pyfunc_model`` (the source's), or
    where the streaming model's artifact is another MLflow model than the one-shot model's (a Transformers
    text-generation package streams through a pyfunc around it), that model, loaded from the repository."""
    if model is None:
        return pyfunc_model
    import mlflow.pyfunc

    served = artifact_directory(source.repository.with_name(model))
    if (served / MLMODEL_FILE).read_bytes() == (artifact_directory(source.files) / MLMODEL_FILE).read_bytes():
        return pyfunc_model
    return mlflow.pyfunc.load_model(str(served))


def _text_export_answers(source, pyfunc_model, input_file):
    """A text export's oracle: ``pyfunc.predict`` of the model it was exported from (recorded in handoff.json) on the
    texts of its shipped request, encoded with the logged mapping its front's config carries."""
    if input_file is not None:
        raise ModelSourceError(
            f"{source.uri}: --input is not taken for an export-onnx directory; check sends its shipped request"
        )
    shipped = json.loads((source.files / "request.json").read_text(encoding="utf-8"))
    [texts] = [entry["data"] for entry in shipped["inputs"]]
    expected = _predicted(pyfunc_model, texts, source.repository, "the shipped request's texts")
    return expected, [], lambda: predict_outputs(pyfunc_model, texts, source.repository)


def _predicted_body(pyfunc_model, model_dir, body=None, content_type=JSON_CONTENT_TYPE, what="the shipped body"):
    """MLflow's answer to ``body`` (default: the shipped one); ``what`` names the body in a refusal."""
    try:
        return protocol_outputs(pyfunc_model, model_dir, body, content_type, what=what)
    except MlflowTritonError:
        raise
    except ScoringRefusal as refusal:  # MLflow's own status and message: report it, go on with the next model
        raise OraclePredictionError(str(refusal)) from None
    except Exception as error:  # the model's own predict
        raise OraclePredictionError(
            f"MLflow's scoring code could not answer {what}: {type(error).__name__}: {error}"
        ) from None


def _predicted(pyfunc_model, value, model_dir, what, params=None):
    try:
        return predict_outputs(pyfunc_model, value, model_dir, params)
    except MlflowTritonError:
        raise
    except Exception as error:  # the model's own predict: report it, go on with the next model
        raise OraclePredictionError(
            f"mlflow.pyfunc could not predict {what}: {type(error).__name__}: {error}"
        ) from None


def validate_repository(
    model_dir: str | os.PathLike[str],
    expected: dict[str, Any],
    work_dir: str | os.PathLike[str],
    installation: TritonInstallation,
    *,
    device: str = "cpu",
    progress: ProgressLike = print,
    name: str | None = None,
    report: ValidationReport | None = None,
    extra_requests: Sequence[ExtraRequest] = (),
    repository_address: str | None = None,
    server_environment: dict[str, str] | None = None,
    stream: StreamCheck | None = None,
) -> ValidationReport:
    """Serve a copy of ``model_dir`` from a fresh repository under ``work_dir``, send its shipped request, compare;
    with ``stream``, also stream its body from the streaming model over gRPC and HTTP ``generate_stream``.

    With ``repository_address`` (a model repository Triton reads itself, such as ``s3://…``, holding the
    same model directory), Triton loads the model from there and ``model_dir`` only gives the requests and
    ``requirements.txt``.
    """
    say = as_progress(progress)
    model_dir = Path(model_dir)
    work_dir = Path(work_dir)
    report = report or ValidationReport(model=name or model_dir.name, device=device)
    report.triton_model = model_dir.name
    repository: Path | str = work_dir / "repository"
    served = Path(repository) / model_dir.name
    log_path = work_dir / f"tritonserver-{served.name}.log"
    try:
        if repository_address is None:
            shutil.rmtree(repository, ignore_errors=True)
            for directory in served_directories(model_dir):  # a guarded batched model: its front and itself
                shutil.copytree(directory, Path(repository) / directory.name)
            report.repository = str(served)
        else:
            served, repository = model_dir, repository_address
            report.repository = repository_address
        names = [directory.name for directory in served_directories(served)]
        files = files_directory(served)
        _check_device(files, device)
        carried = packed_environment(files)
        env = _serving_environment(files, carried, installation, report, say)
        say.say(f"starting tritonserver and loading the model (log: {log_path}) ...")
        report.logs["tritonserver"] = str(log_path)
        with TritonServer(
            repository,
            names,
            installation=installation,
            serving_env=env,
            log_path=log_path,
            environment=server_environment,
            bare=carried is not None,
        ) as server:
            report.seconds["server_ready"] = round(cast(float, server.ready_seconds), 1)  # set once ready
            unpacked = " (unpacking its environment included)" if carried is not None else ""
            say.say(f"tritonserver ready in {server.ready_seconds:.1f}s{unpacked} on {server.url}")
            report.triton_version = server.version()
            started = time.monotonic()
            what = "the shipped request"
            try:
                response = send_request(server.url, served.name, shipped_request(files))
                answers = []
                for extra in extra_requests:
                    what = f"the request made from the {extra.label}"
                    answers.append((extra, send_request(server.url, served.name, extra.request)))
                if stream is not None and stream.model is not None:
                    what = f"the shipped body streamed from {stream.model}"
                    _stream_answers(report, server, stream)
            except InferenceError as error:
                report.triton_log_tail = server.log_tail(40)
                status = "" if error.status == 200 else f" (HTTP {error.status})"  # 200: an error inside a stream
                report.reason = f"Triton rejected {what}{status}: {error.triton_error}"
                return report
            report.seconds["inference"] = round(time.monotonic() - started, 2)
        _compare_answers(report, files_directory(model_dir), expected, response, answers)
        report.passed, report.reason = _verdict(report)
    except TritonStartError as error:
        # Triton's reason may carry a Python traceback: its first line goes on the verdict line, the rest is in the
        # log tail printed above it and kept in the report.
        said = (error.reason or "").strip().splitlines()
        report.reason = f"Triton did not load the model: {said[0] if said else 'see the log'} (log: {error.log_path})"
        report.triton_log_tail = error.log_tail
    except Exception as error:  # a FAIL line for this model; Ctrl-C and SIGTERM (BaseException) stop the check
        report.reason = f"{type(error).__name__}: {error}"
    return report


def _stream_answers(report, server, stream):
    """Stream ``stream.body`` from the streaming model over both transports; compare the chunks, time the first."""
    transports = (
        (GRPC_STREAM, lambda: grpc_chunks(server.grpc_url, stream.model, stream.body)),
        (HTTP_STREAM, lambda: http_chunks(server.url, stream.model, stream.body)),
    )
    for transport, chunks in transports:
        started, first, got = time.monotonic(), None, []
        try:
            for chunk in chunks():
                first = time.monotonic() - started if first is None else first
                got.append(chunk)
        except InferenceError as error:  # which transport's stream ended so, and after how many chunks
            raise InferenceError(error.status, f"over {transport}, {error.triton_error}", error.url) from None
        report.streams[transport] = {
            **compare_chunks(stream.expected, got),
            "first_chunk_seconds": None if first is None else round(first, 3),
            "last_chunk_seconds": round(time.monotonic() - started, 3),
        }


def _serving_environment(served, carried, installation, report, say):
    """The serving environment built from the model's requirements.txt, or ``None`` for a model that carries its
    own (``carried``: its ``EXECUTION_ENV_PATH``; the server then starts bare); what was used goes into ``report``."""
    if carried is None:
        started = time.monotonic()
        say.say(f"serving environment from requirements.txt + {list(installation.serving_constraints)}")
        env = ensure_serving_env(
            served / REQUIREMENTS_FILE,
            installation.serving_constraints,
            progress=say,
            python=installation.python_executable,
        )
        report.seconds["serving_env"] = round(time.monotonic() - started, 1)
        report.serving_env = env_summary(env)
        found = _oracle_env.differences(served, env)
        if found:
            report.serving_env["versions_differ"] = found
            report.environment_note = _oracle_env.note(report.model, found, installation.serving_constraints)
        return env
    _check_carried_interpreter(served)
    archive = Path(carried.replace(_MODEL_DIRECTORY, str(served)))
    report.serving_env = {
        "carried": carried,
        "bare_start": True,
        "archive_mib": round(archive.stat().st_size / 2**20) if archive.is_file() else None,
    }
    say.say(
        f"the model carries its environment ({ENV_PATH_PARAMETER} {carried}): bare start, as env -i "
        f"would (PATH={BARE_PATH}, only the server's own libraries, no serving environment)"
    )
    return None


def _compare_answers(report, model_dir, expected, response, answers):
    """Triton's answers to the shipped request and to each extra request, compared with ``pyfunc.predict``'s."""
    report.request_form = response.form
    volatile = volatile_outputs(model_dir)
    tolerance = export_tolerance(model_dir)
    report.comparison = compare(expected, response.outputs, volatile=volatile, tolerance=tolerance)
    for extra, answer in answers:
        comparison = compare(extra.expected, answer.outputs, volatile=volatile, tolerance=tolerance)
        report.inputs.append(
            {
                "label": extra.label,
                "request": str(extra.request.body_path),
                "form": answer.form,
                "rows": extra.rows,
                "comparison": comparison,
                "equal": all(result["equal"] for result in comparison.values()),
            }
        )


def _failure_text(error):
    """Our own errors say what is wrong in their message; anything else also needs its type to be understood."""
    if isinstance(error, MlflowTritonError):
        return str(error)
    return f"{type(error).__name__}: {error}"


def _verdict(report):
    passed, reason = _one_shot_verdict(report)
    if not passed or not report.streams:
        return passed, reason
    unequal = [(transport, result) for transport, result in report.streams.items() if not result["equal"]]
    if unequal:
        return False, "; ".join(
            f"the stream over {t} differs from pyfunc.predict_stream: {r['how']}" for t, r in unequal
        )
    how = next(iter(report.streams.values()))["how"]
    transports = " and ".join(report.streams)
    return True, f"{reason}; and streamed the shipped body over {transports} like pyfunc.predict_stream ({how})"


def _one_shot_verdict(report):
    oracle = _oracle(report.comparison)
    unequal = [n for n, result in report.comparison.items() if not result["equal"]]
    failed_inputs = [entry for entry in report.inputs if not entry["equal"]]
    if unequal:
        return False, f"outputs differ from {oracle}: " + "; ".join(
            f"{n}: {report.comparison[n]['how']}" for n in unequal
        )
    if failed_inputs:
        return False, "; ".join(
            f"{entry['label']}: outputs differ from {_oracle(entry['comparison'])}: "
            + "; ".join(f"{n}: {r['how']}" for n, r in entry["comparison"].items() if not r["equal"])
            for entry in failed_inputs
        )
    volatile = sorted(n for n, result in report.comparison.items() if result["how"].startswith(VOLATILE))
    per_call = f"; {', '.join(volatile)}: filled by MLflow on every call, checked as such" if volatile else ""
    reason = (
        f"Triton {report.triton_version} answered the shipped {report.request_form} request like "
        f"{oracle} ({', '.join(sorted(report.comparison))}{per_call})"
    )
    for entry in report.inputs:
        if entry["rows"] is None:  # a body of MLflow's serving protocol
            reason += f"; and the {entry['label']} ({entry['form']}) like {_oracle(entry['comparison'])}"
        else:
            reason += f"; and the {entry['label']} ({entry['rows']} rows, {entry['form']}) like pyfunc.predict of it"
    return True, reason


def _oracle(comparison):
    """Whom Triton's answer was compared with: MLflow's scoring server for a body (MLflow's serving protocol)."""
    if any(result["how"].startswith(MLFLOW_BODY) for result in comparison.values()):
        return "MLflow's scoring server (the same body, its answer parsed)"
    return "pyfunc.predict"


def packed_environment(model_dir):
    """The ``EXECUTION_ENV_PATH`` of the model's ``config.pbtxt`` (an environment it carries), or ``None``."""
    config = read_model_config(Path(model_dir) / CONFIG_FILE)
    if ENV_PATH_PARAMETER not in config.parameters:
        return None
    return config.parameters[ENV_PATH_PARAMETER].string_value


def _check_carried_interpreter(model_dir):
    """A directory packed for a container links that container's interpreter: say so instead of a failed load.

    ``mlflow-triton pack`` records the interpreter the archive's ``bin/python3.X`` links to in ``pack.json``.
    """
    manifest = Path(model_dir) / "pack.json"
    if not manifest.is_file():
        return
    facts = json.loads(manifest.read_text(encoding="utf-8"))
    interpreter = facts.get("interpreter")
    if interpreter and not Path(interpreter).is_file():
        raise ModelSourceError(
            f"{Path(model_dir).name} was packed for {facts.get('target')} ({facts.get('server')}): its environment "
            f"runs {interpreter}, which this machine does not have, so a bare start here cannot load it. Prove it on "
            "that server (copy the model directory into its model repository), or pack with --target bundled to "
            "prove it here"
        )


def _check_device(model_dir, device):
    config = read_model_config(model_dir / CONFIG_FILE)
    kinds = {group.kind for group in config.instance_group}
    if kinds != {DEVICE_KINDS[device]}:
        names = sorted(model_config_pb2.ModelInstanceGroup.Kind.Name(kind) for kind in kinds)
        raise ValueError(
            f"--device {device} asks for a KIND_{device.upper()} repository, but config.pbtxt has "
            f"instance kinds {names}; log the model with device={device!r}"
        )


def _slug(uri):
    """A directory name recognisably made from ``uri`` ("models:/clf/1" -> "models-clf-1")."""
    text = re.sub(r"[^A-Za-z0-9_.]+", "-", without_user_info(str(uri))).strip("-.")
    return text[-60:].lstrip("-.") or "model"


def write_report(reports: Iterable[ValidationReport], path: str | os.PathLike[str]) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps([r.to_dict() for r in reports], indent=1) + "\n", encoding="utf-8")
    return path
