"""Send a model's shipped example request the way a user would, and decode the answer.

A generated model directory ships one of

* ``request.json`` -- a KServe v2 JSON body, sent with ``Content-Type: application/json``;
* ``request.bin`` + ``request.headers`` -- a complete body in Triton's binary tensor extension
  (JSON header followed by raw tensor bytes) and the HTTP headers it needs, one ``Name: value``
  per line (``Content-Type: application/octet-stream``,
  ``Inference-Header-Content-Length: <size of the JSON header>``).

The user-facing commands are::

    curl -X POST -H 'Content-Type: application/json' --data-binary @request.json \\
         http://HOST:8000/v2/models/NAME/infer
    curl -X POST -H 'Content-Type: application/octet-stream' \\
         -H 'Inference-Header-Content-Length: N' --data-binary @request.bin \\
         http://HOST:8000/v2/models/NAME/infer

:func:`send_shipped_request` runs literally that ``curl`` command (via ``subprocess``) when
``curl`` is on ``PATH`` -- so the documented commands are what gets tested -- and otherwise
(or with ``transport="http.client"``) sends the same bytes and headers with
:mod:`http.client`. :func:`curl_command` spells the same command out for a person to paste.
"""

from __future__ import annotations

import http.client
import json
import os
import shlex
import shutil
import subprocess
import tempfile
import urllib.parse
from pathlib import Path
from typing import NamedTuple

import numpy as np
import tritonclient.http as triton_http
from tritonclient.utils import triton_to_np_dtype

from mlflow_triton.repository.guard import files_directory

from .errors import InferenceError

__all__ = [
    "InferenceError",
    "RequestFiles",
    "ShippedResponse",
    "curl_command",
    "read_request_headers",
    "send_request",
    "send_shipped_request",
    "shipped_request",
]

# Computed by the transport from the body; a stale value in request.headers must not win.
_TRANSPORT_HEADERS = {"content-length", "host", "transfer-encoding", "connection"}


class ShippedResponse(NamedTuple):
    """``outputs``: output name -> numpy array (BYTES as object arrays of ``bytes``);
    ``form``: which shipped request was sent, ``"json"`` or ``"binary"``."""

    outputs: dict[str, np.ndarray]
    form: str


def read_request_headers(path: str | os.PathLike[str]) -> list[tuple[str, str]]:
    """``request.headers`` as ``[(name, value), ...]``; blank lines and ``#`` comments skipped."""
    headers = []
    for raw in Path(path).read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        name, sep, value = line.partition(":")
        if not sep:
            raise ValueError(f"{path}: not a 'Name: value' header line: {raw!r}")
        headers.append((name.strip(), value.strip()))
    return headers


class RequestFiles(NamedTuple):
    """A request on disk: ``form`` ``"json"`` or ``"binary"``, the body file and its HTTP headers."""

    form: str
    body_path: Path
    headers: list[tuple[str, str]]


def shipped_request(model_dir: str | os.PathLike[str]) -> RequestFiles:
    """The request a generated model directory ships (``request.json`` preferred over ``request.bin``); a guarded
    batched model's front ships the batched model's (``mlflow_triton.repository.guard``)."""
    model_dir = files_directory(model_dir)
    if (model_dir / "request.json").is_file():
        return RequestFiles("json", model_dir / "request.json", [("Content-Type", "application/json")])
    if (model_dir / "request.bin").is_file():
        headers = [
            (k, v)
            for k, v in read_request_headers(model_dir / "request.headers")
            if k.lower() not in _TRANSPORT_HEADERS
        ]
        return RequestFiles("binary", model_dir / "request.bin", headers)
    raise FileNotFoundError(f"{model_dir} ships neither request.json nor request.bin")


def infer_endpoint(url: str, model_name: str) -> str:
    return f"{url.rstrip('/')}/v2/models/{urllib.parse.quote(model_name)}/infer"


def curl_command(url: str, model_name: str, request: RequestFiles) -> str:
    """The ``curl`` command line that sends ``request`` (paths quoted for a POSIX shell)."""
    parts = ["curl", "-s", "-X", "POST", infer_endpoint(url, model_name)]
    for name, value in request.headers:
        parts += ["-H", f"{name}: {value}"]
    parts += ["--data-binary", f"@{request.body_path}"]
    if request.form == "binary":
        parts += ["-D", "headers.txt", "-o", "response.bin"]
    return " ".join(shlex.quote(part) for part in parts)


def send_shipped_request(
    url: str,
    model_dir: str | os.PathLike[str],
    *,
    model_name: str | None = None,
    transport: str = "auto",
    timeout: float = 120.0,
) -> ShippedResponse:
    """POST the model's shipped request to ``{url}/v2/models/<name>/infer`` and decode it.

    ``model_name`` defaults to the directory name (Triton's rule). ``request.json`` is preferred
    when both forms are shipped. ``transport``: ``"auto"`` (curl if on PATH, else
    http.client), ``"curl"`` or ``"http.client"``. Raises [InferenceError][] on an HTTP
    error status, carrying Triton's error text.
    """
    model_dir = Path(model_dir)
    return send_request(
        url, model_name or model_dir.name, shipped_request(model_dir), transport=transport, timeout=timeout
    )


def send_request(
    url: str, model_name: str, request: RequestFiles, *, transport: str = "auto", timeout: float = 120.0
) -> ShippedResponse:
    """POST ``request`` to the model's infer endpoint (see :func:`send_shipped_request`)."""
    endpoint = infer_endpoint(url, model_name)
    if transport == "auto":
        transport = "curl" if shutil.which("curl") else "http.client"
    if transport == "curl":
        status, resp_headers, body = _post_with_curl(endpoint, request.body_path, request.headers, timeout)
    elif transport == "http.client":
        status, resp_headers, body = _post_with_http_client(endpoint, request.body_path, request.headers, timeout)
    else:
        raise ValueError(f"unknown transport {transport!r}")

    if status != 200:
        raise InferenceError(status, _error_text(body), endpoint)
    return ShippedResponse(decode_response(body, resp_headers), request.form)


def decode_response(body: bytes, headers: dict[str, str]) -> dict[str, np.ndarray]:
    """Outputs of a v2 inference response (JSON, or binary when the server sent
    ``Inference-Header-Content-Length``); ``headers`` keys must be lower-case."""
    header_length = headers.get("inference-header-content-length")
    if header_length is None:
        return _decode_json_outputs(json.loads(body))
    result = triton_http.InferResult.from_response_body(
        body, header_length=int(header_length), content_encoding=headers.get("content-encoding")
    )
    response = result.get_response()
    return {
        out["name"]: _bytes_objects(result.as_numpy(out["name"]), out["datatype"])
        for out in response.get("outputs", [])
    }


def _decode_json_outputs(response: dict) -> dict[str, np.ndarray]:
    outputs = {}
    for out in response.get("outputs", []):
        datatype = out["datatype"]
        data = out.get("data", [])  # Triton 2.51 leaves "data" out of an output without elements
        if datatype == "BYTES":
            flat = np.empty(len(data), dtype=object)
            flat[:] = [v.encode("utf-8") if isinstance(v, str) else v for v in data]
        else:
            flat = np.asarray(data, dtype=triton_to_np_dtype(datatype))
        outputs[out["name"]] = flat.reshape(out["shape"])
    return outputs


def _bytes_objects(array: np.ndarray, datatype: str) -> np.ndarray:
    """BYTES outputs sent as JSON inside a binary response come back as ``str``; make them bytes."""
    if datatype != "BYTES":
        return array
    converted = np.empty(array.shape, dtype=object)
    converted.flat[:] = [v.encode("utf-8") if isinstance(v, str) else v for v in array.flat]
    return converted


def _error_text(body: bytes) -> str:
    try:
        return str(json.loads(body)["error"])
    except (ValueError, KeyError, TypeError):
        return body.decode("utf-8", errors="replace").strip() or "(empty response body)"


def _post_with_curl(endpoint, body_path, headers, timeout):
    """``curl -sS -X POST -H ... --data-binary @FILE URL``; returns (status, headers, body)."""
    with tempfile.TemporaryDirectory(prefix="send-") as tmp:
        head_file, body_file = Path(tmp) / "headers", Path(tmp) / "body"
        cmd = ["curl", "-sS", "-X", "POST", "--max-time", str(int(timeout))]
        for name, value in headers:
            cmd += ["-H", f"{name}: {value}"]
        cmd += [
            "--data-binary",
            f"@{body_path}",
            "-D",
            str(head_file),
            "-o",
            str(body_file),
            "-w",
            "%{http_code}",
            endpoint,
        ]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise ConnectionError(f"curl failed ({proc.returncode}): {proc.stderr.strip()}")
        status = int(proc.stdout.strip() or 0)
        body = body_file.read_bytes() if body_file.exists() else b""
        # With "Expect: 100-continue" curl records several header blocks; the last is final.
        blocks = head_file.read_text(errors="replace").replace("\r\n", "\n").strip().split("\n\n")
        resp_headers = {}
        for line in blocks[-1].splitlines()[1:]:
            name, _, value = line.partition(":")
            resp_headers[name.strip().lower()] = value.strip()
    return status, resp_headers, body


def _post_with_http_client(endpoint, body_path, headers, timeout):
    parts = urllib.parse.urlsplit(endpoint)
    conn_cls = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    conn = conn_cls(parts.hostname, parts.port, timeout=timeout)
    try:
        conn.request("POST", parts.path, body=Path(body_path).read_bytes(), headers=dict(headers))
        resp = conn.getresponse()
        body = resp.read()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, body
    finally:
        conn.close()
