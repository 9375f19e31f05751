"""Streaming repositories on the real Triton 2.51: ``predict_stream``'s chunks, one Triton response each.

Five models whose pyfunc streams (``tests/support/stream_models.py``: a ``ResponsesAgent``, a ``ChatAgent``, a
``ChatModel``, a custom ``PythonModel`` that sleeps between chunks and fails on request, and a tiny GPT-2 streamed
through ``transformers.TextIteratorStreamer``) are logged with plain MLflow in a sqlite store and added with
``add_repository(..., stream=True)`` (the ``ChatAgent`` with ``mlflow-triton add-repository --stream``); a sixth, the
tiny GPT-2 text-generation pipeline itself, is logged with ``mlflow_triton.transformers.log_model(..., stream=True)``
and streams its generated text. One Triton serves every ``<name>_stream`` and ``<name>`` directory. A stream's chunks,
over HTTP ``generate_stream`` (server-sent events) and over gRPC streams, must be ``list(pyfunc.predict_stream(data,
params))`` for the shipped request, the data and params read from the body by MLflow's own parser, each chunk compared
as MLflow's JSON body (per-call ids by what they must be: UUIDs, the same one where the model repeats it; ``created`` as
the time of the call). The first chunk must arrive while the model is still producing the rest; a model that raises
mid-stream ends it after the chunks it sent with an error that withholds its message; 200 streams stopped by their
clients leave the stub's memory where it was; 8 concurrent streams each get their own chunks; the one-shot ``<name>``
still answers as MLflow's scoring server.
"""

import dataclasses
import http.client
import json
import queue
import re
import socket
import sys
import threading
import time
import uuid
from pathlib import Path

import mlflow
import numpy as np
import pytest
import tritonclient.grpc as grpcclient
from mlflow.exceptions import MlflowException
from mlflow.pyfunc import scoring_server
from mlflow.utils.proto_json_utils import NumpyEncoder
from tritonclient.utils import InferenceServerException

import mlflow_triton
from mlflow_triton.errors import InvalidArgumentError
from mlflow_triton.repository.layout import artifact_directory
from tests.e2e.test_cli import UserStore
from tests.e2e.test_cli import mlflow_triton as console
from tests.e2e.test_mlflow_protocol_triton import answered_alike, same_body, serving
from tests.support import stream_models
from tests.support.mlflow_server import using_tracking
from tests.support.stream_models import PROMPT, STREAMERS, TEXT_GENERATION, ticker_body
from tests.support.v2_http import post_infer

pytestmark = pytest.mark.triton

JSON = "application/json"
STREAM_SUFFIX = "_stream"
#: Keys under which a chunk carries an id drawn per call (a UUID): judged as such, not by value.
PER_CALL_IDS = ("id", "item_id")
#: How long a client waits for the next response of a stream.
WAIT_S = 60.0


@pytest.fixture(scope="module")
def added(tmp_path_factory):
    """``(tracking URI, root, {name: (source model URI, the new model's downloaded model_repository/)})``."""
    root = tmp_path_factory.mktemp("streaming")
    tracking_uri = f"sqlite:///{root / 'mlflow.db'}"
    with using_tracking(tracking_uri):
        mlflow.set_experiment(experiment_id=mlflow.create_experiment("streaming", (root / "artifacts").as_uri()))
        sources = stream_models.log_stream_models(root)
        versions = {
            name: mlflow_triton.add_repository(f"models:/{name}/1", stream=True).registered_model_version
            for name in STREAMERS
            if name != "mirror"
        }
    # the ChatAgent as a user adds it, from the command line
    said = console("add-repository", "models:/mirror/1", "--stream", store=UserStore(tracking_uri, root))
    assert said.returncode == 0 and "registered models:/mirror/2" in said.stdout, said.stdout + said.stderr
    versions["mirror"] = "2"
    versions[TEXT_GENERATION] = "1"  # logged with its repository by mlflow_triton.transformers
    models = {}
    with using_tracking(tracking_uri):
        for name, version in versions.items():
            downloads = root / "downloads" / name
            mlflow.artifacts.download_artifacts(f"models:/{name}/{version}", dst_path=str(downloads))
            models[name] = (sources[name].model_uri, downloads / "model_repository")
    return tracking_uri, root, models


@pytest.fixture(scope="module")
def triton(added):
    """One Triton serving every model's ``<name>`` and ``<name>_stream``."""
    _, root, models = added
    directories = [
        repository / f"{name}{suffix}" for name, (_, repository) in models.items() for suffix in ("", STREAM_SUFFIX)
    ]
    with serving(root, directories) as server:
        yield server


# --- Clients -------------------------------------------------------------------------------------------------------


@dataclasses.dataclass
class Streamed:
    """What a client received from one stream: each chunk's ``response`` text with its arrival time (monotonic),
    the error that ended it (or ``None``), when the request was sent and when the stream ended."""

    chunks: list = dataclasses.field(default_factory=list)
    arrivals: list = dataclasses.field(default_factory=list)
    error: str | None = None
    sent: float = 0.0
    ended: float = 0.0
    status: int | None = None  # HTTP: the status of the event stream


def http_stream(server, model, body, stop_after=None):
    """POST ``{"request": body}`` to ``/v2/models/<model>/generate_stream`` and read its server-sent events; with
    ``stop_after`` the client disconnects once it has that many chunks. Every data event is a chunk (the model's name
    and version beside its ``response``) or an error; nothing else comes."""
    connection = http.client.HTTPConnection("127.0.0.1", server.http_port, timeout=WAIT_S)
    streamed = Streamed(sent=time.monotonic())
    try:
        connection.request(
            "POST",
            f"/v2/models/{model}/generate_stream",
            body=json.dumps({"request": body}),
            headers={"Content-Type": JSON},
        )
        sock = connection.sock  # the response may take it over
        response = connection.getresponse()
        streamed.status = response.status
        for line in iter(response.readline, b""):
            if line == b"\n":
                continue
            assert line.startswith(b"data: "), line
            event = json.loads(line[len(b"data: ") :])
            if "error" in event:
                assert (streamed.error, list(event)) == (None, ["error"]), event
                streamed.error = event["error"]
                continue
            assert streamed.error is None, ("a chunk after the error", event)
            assert {"model_name": model, "model_version": "1"} == {k: v for k, v in event.items() if k != "response"}
            streamed.chunks.append(event["response"])
            streamed.arrivals.append(time.monotonic())
            if stop_after is not None and len(streamed.chunks) >= stop_after:
                sock.shutdown(socket.SHUT_RDWR)  # the client goes away mid-stream
                break
    finally:
        connection.close()
    streamed.ended = time.monotonic()
    return streamed


def request_input(body):
    tensor = grpcclient.InferInput("request", [1], "BYTES")
    tensor.set_data_from_numpy(np.array([body.encode("utf-8")], dtype=object))
    return tensor


class GrpcStreams:
    """One ``tritonclient.grpc`` client streaming requests one after another (its own stream each)."""

    def __init__(self, server):
        self.client = grpcclient.InferenceServerClient(server.grpc_url)

    def close(self):
        self.client.close()

    def stream(self, model, body, stop_after=None):
        """Stream ``body`` to ``model`` and read every response; with ``stop_after`` the client cancels the stream
        (``stop_stream(cancel_requests=True)``) once it has that many chunks. Each chunk is a response with the
        ``response`` tensor only, not final; a completed stream ends with an empty final response."""
        responses = queue.Queue()
        self.client.start_stream(callback=lambda result, error: responses.put((time.monotonic(), result, error)))
        streamed = Streamed(sent=time.monotonic())
        cancel = False
        try:
            self.client.async_stream_infer(model, [request_input(body)], enable_empty_final_response=True)
            while True:
                arrived, result, error = responses.get(timeout=WAIT_S)
                if error is not None:
                    streamed.error = error.message()
                    break
                response = result.get_response()
                final = response.parameters["triton_final_response"].bool_param
                if final:
                    assert not response.outputs, response
                    break
                assert [output.name for output in response.outputs] == ["response"], response
                [chunk] = result.as_numpy("response")
                streamed.chunks.append(chunk.decode("utf-8"))
                streamed.arrivals.append(arrived)
                if stop_after is not None and len(streamed.chunks) >= stop_after:
                    cancel = True
                    break
        finally:
            self.client.stop_stream(cancel_requests=cancel)
        streamed.ended = time.monotonic()
        return streamed


def grpc_stream(server, model, body, stop_after=None):
    """:meth:`GrpcStreams.stream` from a client of its own."""
    streams = GrpcStreams(server)
    try:
        return streams.stream(model, body, stop_after)
    finally:
        streams.close()


TRANSPORTS = {"http": http_stream, "grpc": grpc_stream}


# --- What MLflow says ----------------------------------------------------------------------------------------------


def shipped_body(directory):
    """The body in the ``request`` tensor of a directory's ``request.json`` (a v2 /infer body)."""
    inputs = json.loads((directory / "request.json").read_text(encoding="utf-8"))["inputs"]
    [body] = [entry["data"][0] for entry in inputs if entry["name"] == "request"]
    return body


def predicted_stream(model_uri, body):
    """``list(pyfunc.predict_stream(data, params))`` for ``body``, read by MLflow's own parser (the one its scoring
    server reads a JSON body with), each chunk as JSON text (``NumpyEncoder``, as MLflow writes JSON)."""
    model = mlflow.pyfunc.load_model(model_uri)
    parsed = scoring_server._parse_json_data(body, model.metadata, model.metadata.get_input_schema())
    return [json.dumps(chunk, cls=NumpyEncoder) for chunk in model.predict_stream(parsed.data, parsed.params)]


def ids_by_appearance(chunks):
    """The parsed chunks of one stream, each UUID under a :data:`PER_CALL_IDS` key replaced by ``"<uuid k>"``, ``k``
    its order of first appearance in the stream: an id drawn per call is judged by what it must be (a UUID, the same
    one wherever the model repeats it), not by value."""
    seen = {}

    def judged(value, key=None):
        if isinstance(value, dict):
            return {name: judged(item, name) for name, item in value.items()}
        if isinstance(value, list):
            return [judged(item) for item in value]
        if key in PER_CALL_IDS and isinstance(value, str) and is_uuid(value):
            return f"<uuid {seen.setdefault(value, len(seen))}>"
        return value

    return [judged(json.loads(chunk)) for chunk in chunks]


def is_uuid(text):
    try:
        uuid.UUID(text)
    except ValueError:
        return False
    return True


def assert_same_chunks(want, got):
    """The same number of chunks, in order, each MLflow's JSON body alike (``created``/``created_at`` by check's rule
    for per-call fields, floats within its tolerance), per-call ids by :func:`ids_by_appearance`."""
    assert len(got) == len(want), (want, got)
    for index, (one, other) in enumerate(zip(ids_by_appearance(want), ids_by_appearance(got))):
        result = same_body(json.dumps(one), json.dumps(other))
        assert result["equal"], (index, result["how"], want, got)


def ticker_chunks(request_id, chunks):
    """What ``ticker`` streams for :func:`ticker_body` ``(request_id, chunks)``: JSON text, as the model sends it."""
    return [json.dumps({"id": request_id, "index": index, "of": chunks}) for index in range(chunks)]


def closed_after(server, request_ids, timeout_s=30.0):
    """``{request id: how many chunks ticker's generator had yielded when it was closed}`` (its ``finally`` prints
    it to Triton's log), once the log has a line for each of ``request_ids``."""
    pattern = re.compile(r"^ticker (\S+): closed after (\d+) chunk\(s\)$", re.MULTILINE)
    deadline = time.monotonic() + timeout_s
    while True:
        found = [(request_id, int(count)) for request_id, count in pattern.findall(server.log_text())]
        counts = {request_id: count for request_id, count in found if request_id in request_ids}
        if len(counts) == len(request_ids) or time.monotonic() > deadline:
            assert sorted(counts) == sorted(request_ids), (sorted(set(request_ids) - set(counts)), server.log_tail())
            assert len([1 for request_id, _ in found if request_id in request_ids]) == len(request_ids), found
            return counts
        time.sleep(0.1)


def stub_rss_kib(root, model):
    """VmRSS (KiB) of the ``triton_python_backend_stub`` process running ``<served>/<model>/1/model.py``."""
    script = str(root / "served" / model / "1" / "model.py")
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if len(argv) > 1 and argv[0].endswith(b"triton_python_backend_stub") and argv[1].decode() == script:
            found.append(entry)
    [process] = found
    [line] = [line for line in (process / "status").read_text().splitlines() if line.startswith("VmRSS:")]
    return int(line.split()[1])


# --- Tests ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("transport", sorted(TRANSPORTS))
@pytest.mark.parametrize("name", list(STREAMERS))
def test_stream_sends_the_chunks_of_predict_stream_for_the_shipped_request(added, triton, name, transport):
    tracking_uri, _, models = added
    source, repository = models[name]
    directory = repository / f"{name}{STREAM_SUFFIX}"
    body = shipped_body(directory)

    streamed = TRANSPORTS[transport](triton, directory.name, body)

    with using_tracking(tracking_uri):
        want = predicted_stream(source, body)
    validation = json.loads((repository / name / "validation.json").read_text())
    assert (streamed.status in (None, 200), streamed.error) == (True, None), streamed
    assert validation["stream"]["model"] == directory.name and validation["stream"]["chunks"] == len(want)
    assert_same_chunks(want, streamed.chunks)


@pytest.mark.parametrize("transport", sorted(TRANSPORTS))
def test_first_chunk_arrives_before_the_last_is_produced(triton, transport):
    """5 chunks 0.4 s apart: the model is busy 1.6 s; the first chunk is the client's well before it is done."""
    request_id = f"early-{transport}"

    streamed = TRANSPORTS[transport](triton, "ticker_stream", ticker_body(request_id, 5, delay=0.4))

    assert (streamed.chunks, streamed.error) == (ticker_chunks(request_id, 5), None)
    first, total = streamed.arrivals[0] - streamed.sent, streamed.ended - streamed.sent
    assert total > 1.6 and first < total - 1.0, (first, total)


@pytest.mark.parametrize("transport", sorted(TRANSPORTS))
def test_a_model_that_raises_ends_its_stream_after_the_chunks_it_sent(triton, transport):
    """``ticker`` raises ``ValueError`` (quoting the request) instead of its 4th chunk: the client has 3 chunks, then
    an error naming the exception's type but not its message, whose reference leads to it in Triton's log; the
    model's generator was closed, and the next request is answered."""
    request_id = f"fail-{transport}"
    stream = TRANSPORTS[transport]

    streamed = stream(triton, "ticker_stream", ticker_body(request_id, 6, fail=True))
    after = stream(triton, "ticker_stream", ticker_body(f"{request_id}-next", 2))

    assert streamed.chunks == ticker_chunks(request_id, 6)[:3]
    assert streamed.status in (None, 200)  # HTTP: the events had begun with a 200
    heading = "predict_stream failed after 3 chunk(s): ValueError; its message may quote the request"
    assert streamed.error.startswith(heading) and request_id not in streamed.error, streamed.error
    [reference] = re.findall(r"\(reference ([0-9a-f]{8})\)$", streamed.error)
    assert (
        f"[{reference}] predict_stream failed after 3 chunk(s): ValueError: ticker {request_id} was asked to fail"
        in (triton.log_text())
    )
    assert closed_after(triton, [request_id]) == {request_id: 3}
    assert (after.chunks, after.error) == (ticker_chunks(f"{request_id}-next", 2), None)


@pytest.mark.parametrize("transport", sorted(TRANSPORTS))
def test_mlflows_refusal_ends_the_stream_with_mlflows_message(added, triton, transport):
    """A body the Responses agent's schema refuses: no chunk, then the status, error code and message of the
    ``MlflowException`` that MLflow's ``predict_stream`` raises for it (HTTP: status 400, before any event)."""
    tracking_uri, _, models = added
    body = json.dumps({"messages": [{"role": "user", "content": "a chat body sent to a Responses agent"}]})
    with using_tracking(tracking_uri):
        with pytest.raises(MlflowException) as refused:
            predicted_stream(models["spell"][0], body)

    streamed = TRANSPORTS[transport](triton, "spell_stream", body)

    status, code = refused.value.get_http_status_code(), refused.value.error_code
    assert (status, streamed.chunks, streamed.status in (None, 400)) == (400, [], True), streamed
    assert streamed.error.startswith(f"MLflow answered HTTP 400 ({code}): {refused.value.message[:200]}"), (
        refused.value.message,
        streamed.error,
    )


def test_streams_stopped_by_their_clients_leave_the_server_answering_and_the_stub_its_memory(added, triton):
    """200 streams of 10 000 chunks 10 ms apart, each stopped after its first chunk: 3 in 4 cancelled over gRPC
    (``stop_stream(cancel_requests=True)``), 1 in 4 by an HTTP client that disconnects. Each model generator is closed
    after at most one more chunk (the next stream's first chunk comes at once: one instance serves them in turn, and
    a stream left running would hold it for 100 s), the server answers a full stream afterwards, and the stub's RSS
    grows less than 10 % from after a warm-up of 20 to after the 200."""
    _, root, _ = added
    streams = GrpcStreams(triton)

    def stop_early(label, count):
        for index in range(count):
            request_id = f"{label}-{index}"
            if index % 4 == 3:
                streamed = http_stream(triton, "ticker_stream", ticker_body(request_id, 10_000, 0.01), stop_after=1)
            else:
                streamed = streams.stream("ticker_stream", ticker_body(request_id, 10_000, 0.01), stop_after=1)
            assert streamed.chunks == ticker_chunks(request_id, 10_000)[:1], (request_id, streamed)
            assert streamed.arrivals[0] - streamed.sent < 5.0, (request_id, streamed.arrivals[0] - streamed.sent)

    try:
        stop_early("warm-up", 20)
        before = stub_rss_kib(root, "ticker_stream")
        stop_early("cancel", 200)
        answered = streams.stream("ticker_stream", ticker_body("after-cancels", 3))
    finally:
        streams.close()
    after = stub_rss_kib(root, "ticker_stream")

    assert (answered.chunks, answered.error) == (ticker_chunks("after-cancels", 3), None)
    closed = closed_after(triton, [f"cancel-{index}" for index in range(200)])
    assert max(closed.values()) <= 2, {request_id: count for request_id, count in closed.items() if count > 2}
    assert after < before * 1.10, (before, after)


def test_concurrent_streams_each_get_their_own_chunks_in_order(triton):
    """8 threads, a gRPC client each, stream at once: each gets exactly the chunks naming its own request."""
    results = {}
    start = threading.Barrier(8)

    def one(index):
        start.wait()
        results[index] = grpc_stream(triton, "ticker_stream", ticker_body(f"concurrent-{index}", 3 + index, 0.01))

    threads = [threading.Thread(target=one, args=(index,)) for index in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)

    got = {index: (streamed.chunks, streamed.error) for index, streamed in results.items()}
    assert got == {index: (ticker_chunks(f"concurrent-{index}", 3 + index), None) for index in range(8)}


@pytest.mark.parametrize("transport", sorted(TRANSPORTS))
def test_a_text_generation_pipeline_streams_its_generated_text(added, triton, transport):
    """The tiny GPT-2 pipeline logged with ``mlflow_triton.transformers`` and ``stream=True`` (MLflow's transformers
    flavor has no ``predict_stream``): its chunks are what the streaming package it serves yields, JSON strings, and
    together the text that ends the model's own ``pyfunc.predict`` answer (the prompt, then the generated text)."""
    tracking_uri, _, models = added
    source, repository = models[TEXT_GENERATION]
    directory = repository / f"{TEXT_GENERATION}{STREAM_SUFFIX}"
    body = shipped_body(directory)

    streamed = TRANSPORTS[transport](triton, directory.name, body)

    want = predicted_stream(str(artifact_directory(directory)), body)
    with using_tracking(tracking_uri):
        [answer] = mlflow.pyfunc.load_model(source).predict(PROMPT)
    assert (streamed.status in (None, 200), streamed.error) == (True, None), streamed
    assert streamed.chunks == want and len(want) > 1, (want, streamed.chunks)
    assert answer == PROMPT + "".join(json.loads(chunk) for chunk in streamed.chunks), (answer, streamed.chunks)
    assert json.loads(body) == {"inputs": PROMPT}


def test_a_text_generation_stream_stopped_by_its_client_frees_the_instance(added, triton):
    _, _, models = added
    name = f"{TEXT_GENERATION}{STREAM_SUFFIX}"
    directory = models[TEXT_GENERATION][1] / name
    body = shipped_body(directory)
    want = predicted_stream(str(artifact_directory(directory)), body)
    streams = GrpcStreams(triton)

    try:
        cancelled = streams.stream(name, body, stop_after=1)
        disconnected = http_stream(triton, name, body, stop_after=1)
        whole = streams.stream(name, body)
    finally:
        streams.close()

    assert (cancelled.chunks, disconnected.chunks) == (want[:1], want[:1])
    assert (whole.chunks, whole.error) == (want, None)


@pytest.mark.parametrize("name", [*STREAMERS, TEXT_GENERATION])
def test_the_one_shot_model_answers_as_mlflows_scoring_server(added, triton, name):
    tracking_uri, _, models = added
    source, repository = models[name]
    body = shipped_body(repository / name)
    config = triton.model_config(name)

    with using_tracking(tracking_uri):
        (status, _), _ = answered_alike(triton, source, name, JSON, body)

    assert status == 200
    assert config["parameters"]["mlflow_triton_stream_model"] == {"string_value": f"{name}{STREAM_SUFFIX}"}
    assert not config.get("model_transaction_policy", {}).get("decoupled"), config


def test_the_stream_model_is_refused_by_http_infer_and_grpc_unary(added, triton):
    """Triton serves a decoupled model over streams only: /infer answers 501, a unary gRPC call UNIMPLEMENTED."""
    _, _, models = added
    body = shipped_body(models["ticker"][1] / "ticker_stream")
    client = grpcclient.InferenceServerClient(triton.grpc_url)

    status, answer = post_infer(
        triton, "ticker_stream", [{"name": "request", "datatype": "BYTES", "shape": [1], "data": [body]}]
    )
    try:
        with pytest.raises(InferenceServerException) as unary:
            client.infer("ticker_stream", [request_input(body)])
    finally:
        client.close()

    assert (status, answer) == (
        501,
        {"error": "HTTP end point doesn't support models with decoupled transaction policy"},
    )
    assert unary.value.status() == "StatusCode.UNIMPLEMENTED", unary.value


def test_add_repository_refuses_to_stream_a_model_without_predict_stream(added):
    tracking_uri, _, _ = added
    with using_tracking(tracking_uri):
        with pytest.raises(
            InvalidArgumentError, match=r"models:/leaves/1.* cannot stream: its pyfunc has no predict_stream"
        ):
            mlflow_triton.add_repository(f"models:/{stream_models.NOT_STREAMING}/1", stream=True)


# --- What a user runs: check, the documented clients, serve's lines ---------------------------------------------------


def test_check_proves_every_streaming_model_over_both_transports(added):
    tracking_uri, root, models = added
    uris = [f"models:/{name}/{1 if name == TEXT_GENERATION else 2}" for name in models]

    checked = console("check", *uris, "--work-dir", str(root / "check"), store=UserStore(tracking_uri, root))

    verdicts = [line for line in checked.stdout.splitlines() if line.startswith(("PASS", "FAIL"))]
    assert checked.returncode == 0, checked.stdout[-6000:] + checked.stderr[-3000:]
    assert [line.split()[:2] for line in verdicts] == [["PASS", f"{uri}:"] for uri in uris]
    for line in verdicts:
        assert "and streamed the shipped body over gRPC stream and HTTP generate_stream like pyfunc.predict_stream" in (
            line
        ), line
    report = json.loads((root / "check" / "report.json").read_text())
    assert all(sorted(entry["streams"]) == ["HTTP generate_stream", "gRPC stream"] for entry in report)


def test_the_documented_grpc_client_streams_what_predict_stream_yields(added, triton):
    from tests.support import docs_pages

    tracking_uri, _, models = added
    source, repository = models["spell"]
    [block] = [b for b in docs_pages.blocks(docs_pages.DOCS / "repository.md", "python") if "def stream(" in b.code]
    namespace = {}
    exec(compile(block.code, "docs/repository.md", "exec"), namespace)
    body = shipped_body(repository / "spell_stream")

    got = list(namespace["stream"](body, url=triton.grpc_url, model="spell_stream"))
    first = next(namespace["stream"](body, url=triton.grpc_url, model="spell_stream"))  # a client that stops early

    with using_tracking(tracking_uri):
        want = predicted_stream(source, body)
    assert_same_chunks(want, [json.dumps(chunk) for chunk in got])
    assert_same_chunks(want[:1], [json.dumps(first)])


def test_the_lines_serve_prints_stream_the_shipped_request(added, triton):
    import subprocess

    from mlflow_triton.local._stream import stream_commands

    tracking_uri, root, models = added
    source, repository = models["spell"]
    request = root / "served" / "spell_stream" / "stream_request.json"
    http_line, grpc_line = stream_commands(triton.url, triton.grpc_url, "spell_stream", request)
    with using_tracking(tracking_uri):
        want = predicted_stream(source, json.loads(request.read_text())["request"])

    http = subprocess.run(["bash", "-c", http_line], capture_output=True, text=True, timeout=120, check=True)
    grpc = subprocess.run(
        ["bash", "-c", grpc_line.replace("python3 ", f"{sys.executable} ", 1)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )

    events = [json.loads(line[len("data: ") :])["response"] for line in http.stdout.splitlines() if line]
    assert_same_chunks(want, events)
    assert_same_chunks(want, grpc.stdout.splitlines())
