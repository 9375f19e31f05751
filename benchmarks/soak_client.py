"""Sending the soak's requests over HTTP and gRPC, and telling who answered what.

A :class:`Client` holds one keep-alive HTTP connection and one gRPC channel to a Triton server and
sends :class:`~benchmarks.soak_requests.Request` bodies as they are (valid or not): HTTP with
:mod:`http.client`, gRPC through a raw unary call whose request is already serialized (so that
even garbage reaches the server). :func:`classify` names the class of each answer from its status
and Triton's error message.
"""

from __future__ import annotations

import dataclasses
import http.client
import json
import re
import time
from pathlib import Path

import grpc
import tritonclient.grpc as triton_grpc
import tritonclient.http as triton_http
from tritonclient.grpc import service_pb2

from .soak_requests import ANSWERED, GRPC, MODEL_500, RUNTIME_400, TRITON_400, TRITON_PARSE_500

# Answers no request may get.
RUNTIME_CLIENT_ERROR_AS_5XX = "runtime-client-error-as-5xx"
OUTPUT_500 = "output-500"
RUNTIME_DEFECT_500 = "runtime-defect-500"
TRANSPORT_ERROR = "transport-error"
UNCLASSIFIED = "unclassified"

# How the generated runtime words what it detects (runtime/triton_model.py, codecs.py, conversions.py, parameters.py).
RUNTIME_CLIENT_ERROR = re.compile(
    r"^(Tensor `[^`]+`|Column tensors must have equal lengths|The request does not match the model's input schema"
    r"|Request parameter|The request's parameters are not a JSON object)"
)
MODEL_FAILED = re.compile(r"^Prediction failed: \w+; its message may quote the request")
OUTPUT_FAILED = re.compile(r"^The prediction does not fit the configured outputs")
RUNTIME_FAILED = re.compile(r"^The mlflow-triton runtime failed")
# How Triton 2.51's front ends word what they refuse before any model code runs.
TRITON_PARSE_FAILED = re.compile(r"^(failed to parse the request JSON buffer|Unable to parse )")
TRITON_REFUSED = re.compile(
    r"^(\[request id: [^\]]*\] |unexpected size for input|inference header size should be in range"
    r"|unexpected additional input data|unable to find data for input tensor)"
)

CLIENT_GRPC_CODES = {"INVALID_ARGUMENT", "NOT_FOUND", "FAILED_PRECONDITION", "OUT_OF_RANGE"}
SOCKET_TIMEOUT_S = 300.0
MAX_KEPT_MESSAGE = 300


@dataclasses.dataclass
class Outcome:
    """What one request got: the status (HTTP code or gRPC code name), Triton's message, its class."""

    index: int
    kind: str
    transport: str
    expected: tuple
    status: str
    message: str
    answer_class: str
    seconds: float
    outputs: dict | None = None  # output name -> ndarray, for answers
    size: int = 0  # request body bytes

    def as_dict(self):
        return {name: value for name, value in dataclasses.asdict(self).items() if name != "outputs"}


def is_client_status(status):
    return status in CLIENT_GRPC_CODES or (status.isdigit() and 400 <= int(status) < 500)


def is_server_status(status):
    if status.isdigit():
        return int(status) >= 500
    return status not in CLIENT_GRPC_CODES and status != "OK"


def classify(status, message):
    """The class of an answer: who detected the problem (see ``soak_requests``), or a class no answer may have."""
    if status in ("200", "OK"):
        return ANSWERED
    if RUNTIME_CLIENT_ERROR.match(message):
        return RUNTIME_400 if is_client_status(status) else RUNTIME_CLIENT_ERROR_AS_5XX
    if MODEL_FAILED.match(message) and is_server_status(status):
        return MODEL_500
    if OUTPUT_FAILED.match(message):
        return OUTPUT_500
    if RUNTIME_FAILED.match(message):
        return RUNTIME_DEFECT_500
    if TRITON_PARSE_FAILED.match(message) and is_server_status(status):
        return TRITON_PARSE_500
    if TRITON_REFUSED.match(message) and is_client_status(status):
        return TRITON_400
    return UNCLASSIFIED


class Client:
    """One soak client: a keep-alive HTTP connection and a gRPC channel, opened lazily, reopened after errors."""

    def __init__(self, http_port, grpc_url, model_name):
        self.http_port = http_port
        self.model_name = model_name
        self._path = f"/v2/models/{model_name}/infer"
        self._connection = None
        self._channel = grpc.insecure_channel(
            grpc_url, options=[("grpc.max_send_message_length", -1), ("grpc.max_receive_message_length", -1)]
        )
        self._infer = self._channel.unary_unary(
            "/inference.GRPCInferenceService/ModelInfer",
            request_serializer=lambda body: body,
            response_deserializer=service_pb2.ModelInferResponse.FromString,
        )

    def close(self):
        if self._connection is not None:
            self._connection.close()
        self._channel.close()

    def send(self, request):
        """Send ``request`` and classify the answer; never raises for what the server does."""
        started = time.perf_counter()
        try:
            status, message, outputs = (self._send_grpc if request.transport == GRPC else self._send_http)(request)
            answer_class = classify(status, message)
        except (OSError, http.client.HTTPException) as error:
            self._reconnect()
            status, message, outputs, answer_class = "-", f"{type(error).__name__}: {error}", None, TRANSPORT_ERROR
        seconds = time.perf_counter() - started
        return Outcome(
            request.index,
            request.kind,
            request.transport,
            request.expected,
            status,
            message[:MAX_KEPT_MESSAGE],
            answer_class,
            seconds,
            outputs,
            len(request.body),
        )

    def _send_http(self, request):
        if self._connection is None:
            self._connection = http.client.HTTPConnection("127.0.0.1", self.http_port, timeout=SOCKET_TIMEOUT_S)
        self._connection.request("POST", self._path, body=request.body, headers=request.headers)
        response = self._connection.getresponse()
        body = response.read()
        if response.getheader("Connection", "").lower() == "close":
            self._reconnect()
        if response.status != 200:
            return str(response.status), _error_text(body), None
        header_length = response.getheader("Inference-Header-Content-Length")
        result = triton_http.InferResult.from_response_body(
            body, header_length=int(header_length) if header_length else None
        )
        return "200", "", _http_outputs(result)

    def _send_grpc(self, request):
        try:
            response = self._infer(request.body, timeout=SOCKET_TIMEOUT_S)
        except grpc.RpcError as error:
            return error.code().name, error.details() or "", None
        return "OK", "", _grpc_outputs(triton_grpc.InferResult(response))

    def _reconnect(self):
        if self._connection is not None:
            self._connection.close()
            self._connection = None


def _http_outputs(result):
    return {output["name"]: result.as_numpy(output["name"]) for output in result.get_response().get("outputs", [])}


def _grpc_outputs(result):
    return {output.name: result.as_numpy(output.name) for output in result.get_response().outputs}


def _error_text(body):
    try:
        return str(json.loads(body).get("error", ""))
    except ValueError:
        return body[:MAX_KEPT_MESSAGE].decode("utf-8", "replace")


# -- the Python-backend stub, from /proc --------------------------------------------------------------------


def stub_pids(server_pid, model=None):
    """PIDs of the live ``triton_python_backend_stub`` children of ``server_pid`` (``model``: only that model's; its
    stubs run ``<repository>/<model>/<version>/model.py``)."""
    wanted = f"/{model}/".encode() if model else b""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            if (
                int(fields[1]) == server_pid
                and fields[0] != "Z"
                and b"triton_python_backend_stub" in (command := (entry / "cmdline").read_bytes())
                and wanted in command
            ):
                pids.append(int(entry.name))
        except (OSError, IndexError, ValueError):
            continue
    return sorted(pids)


def rss_mb(pid):
    """Resident set size of ``pid`` in MiB (``VmRSS``), or ``None`` when it is gone."""
    return memory_mb(pid).get("rss")


MEMORY_FIELDS = {"VmRSS": "rss", "RssAnon": "anon", "RssFile": "file", "RssShmem": "shmem"}


def memory_mb(pid):
    """``{"rss", "anon", "file", "shmem"}`` of ``pid`` in MiB from ``/proc/<pid>/status`` ({} when it is gone).

    ``anon`` is the process's own heap; ``shmem`` counts the pages of shared memory it has touched (the Python
    backend passes tensors through a shared-memory pool that grows with the largest request).
    """
    found = {}
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            name, _, value = line.partition(":")
            if name in MEMORY_FIELDS:
                found[MEMORY_FIELDS[name]] = round(int(value.split()[0]) / 1024, 1)
    except (OSError, ValueError):
        return {}
    return found
