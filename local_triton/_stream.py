"""A streaming repository's ``<name>_stream`` model as its clients reach it: Triton's two streaming transports.

Triton serves a decoupled model over HTTP ``POST /v2/models/<name>/generate_stream`` (server-sent events: each
``data:`` line a JSON object whose ``response`` is one chunk, or whose ``error`` ends the stream) and over gRPC
streams (``ModelStreamInfer``); it refuses it over HTTP ``/infer`` and gRPC unary calls. Both transports take the
body ``mlflow models serve`` accepts in the ``request`` tensor, as the one-shot model does. :func:`http_chunks`
and :func:`grpc_chunks` yield the chunks (each the JSON text the model sent) as they arrive, or raise
``InferenceError`` with Triton's error text; :func:`stream_commands` spells both clients out for a person.
"""

from __future__ import annotations

import http.client
import json
import os
import queue
import shlex
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from mlflow_triton.repository.request_files import JSON_REQUEST
from mlflow_triton.shared_contract import REQUEST_TENSOR, RESPONSE_TENSOR

from .errors import InferenceError

__all__ = ["grpc_chunks", "http_chunks", "shipped_body", "stream_commands", "stream_endpoint"]

_EVENT_DATA = "data:"
# The HTTP status Triton's HTTP front end answers for the error a gRPC stream carries (its own mapping).
_GRPC_AS_HTTP = {"StatusCode.INVALID_ARGUMENT": 400, "StatusCode.NOT_FOUND": 404, "StatusCode.UNIMPLEMENTED": 501}


def shipped_body(model_dir: str | os.PathLike[str]) -> str:
    """The body in the ``request`` tensor of the directory's shipped ``request.json``."""
    shipped = json.loads((Path(model_dir) / JSON_REQUEST).read_text(encoding="utf-8"))
    [body] = next(entry["data"] for entry in shipped["inputs"] if entry["name"] == REQUEST_TENSOR)
    return body


def stream_endpoint(url: str, model_name: str) -> str:
    return f"{url.rstrip('/')}/v2/models/{urllib.parse.quote(model_name)}/generate_stream"


def http_chunks(url: str, model_name: str, body: str, *, timeout: float = 120.0) -> Iterator[str]:
    """Each chunk Triton streams for ``body`` over HTTP ``generate_stream``, as its event arrives."""
    endpoint = stream_endpoint(url, model_name)
    parsed = urllib.parse.urlsplit(endpoint)
    connection = http.client.HTTPConnection(parsed.hostname or "localhost", parsed.port, timeout=timeout)
    try:
        connection.request(
            "POST", parsed.path, json.dumps({REQUEST_TENSOR: body}), {"Content-Type": "application/json"}
        )
        response = connection.getresponse()
        if response.status != 200:  # a stream refused before its first chunk: the body is its one error event
            text = response.read().decode("utf-8", "replace").strip()
            if text.startswith(_EVENT_DATA):
                text = str(json.loads(text[len(_EVENT_DATA) :]).get("error", text))
            raise InferenceError(response.status, text, endpoint)
        sent = 0
        for raw in response:
            line = raw.decode("utf-8").strip()
            if not line.startswith(_EVENT_DATA):
                continue
            event = json.loads(line[len(_EVENT_DATA) :])
            if "error" in event:
                raise InferenceError(200, f"after {sent} chunk(s): {event['error']}", endpoint)
            sent += 1
            yield event[RESPONSE_TENSOR]
    finally:
        connection.close()


def grpc_chunks(grpc_url: str, model_name: str, body: str, *, timeout: float = 120.0) -> Iterator[str]:
    """Each chunk Triton streams for ``body`` over a gRPC stream, as it arrives, up to the final response."""
    import tritonclient.grpc as triton_grpc

    address = f"grpc://{grpc_url}/{model_name} (ModelStreamInfer)"
    arrived: queue.Queue = queue.Queue()
    client = triton_grpc.InferenceServerClient(grpc_url)
    request = triton_grpc.InferInput(REQUEST_TENSOR, [1], "BYTES")
    request.set_data_from_numpy(np.array([body.encode("utf-8")], dtype=object))
    sent = 0
    try:
        client.start_stream(callback=lambda result, error: arrived.put((result, error)))
        client.async_stream_infer(model_name, [request], enable_empty_final_response=True)
        while True:
            try:
                result, error = arrived.get(timeout=timeout)
            except queue.Empty:
                raise InferenceError(504, f"no response in {timeout:.0f} s after {sent} chunk(s)", address) from None
            if error is not None:
                # an error the stream carries has no status of its own (tritonclient: None), as over HTTP, where it
                # is an event of a 200 answer; a refused call has its gRPC status
                status = _GRPC_AS_HTTP.get(str(error.status()), 500) if error.status() is not None else 200
                raise InferenceError(status, f"after {sent} chunk(s): {error.message()}", address)
            answer = result.as_numpy(RESPONSE_TENSOR)
            if answer is not None:
                sent += 1
                yield answer.ravel()[0].decode("utf-8")
            if result.get_response().parameters["triton_final_response"].bool_param:
                return
    finally:
        client.stop_stream()
        client.close()


def stream_commands(url: str, grpc_url: str, model_name: str, request_path: str | os.PathLike[str]) -> list[str]:
    """Shell lines that stream the shipped ``generate_stream`` body (``stream_request.json``) over HTTP with curl and
    over a gRPC stream with tritonclient, each printing one chunk per line."""
    path = shlex.quote(str(request_path))
    http_line = (
        f"curl -sN -X POST {shlex.quote(stream_endpoint(url, model_name))} -H 'Content-Type: application/json' "
        f"--data-binary @{path}"
    )
    grpc_line = f"python3 -m mlflow_triton.local.stream_client {shlex.quote(grpc_url)} {shlex.quote(model_name)} {path}"
    return [http_line, grpc_line]
