"""The ``--backend python`` ONNX exports served by the real bundled Triton 2.51, with dynamic batching.

The example sklearn Pipeline (``predict_proba``; and once more with ``predict`` labels, whose graph output
``[batch]`` needs ``reshape``) and the example PyTorch network are logged to a sqlite MLflow store, exported from
their Registry URIs, and served one at a time. Each answers its shipped request like ``pyfunc.predict``; then
8 clients send 1-row requests concurrently (closed loop, bounded count) and every answer is compared with
``pyfunc.predict`` of its row. Batching is shown without depending on timing: with the model's stub process
paused (SIGSTOP) the first request occupies the instance and the others queue -- Triton's
``nv_inference_pending_request_count`` metric is polled until at least two wait together -- and once the
stub continues, the dynamic batcher runs those in one execution: Triton's statistics show fewer executions
than inferences. Each export is one model directory; the three served together by one Triton answer 0-row requests
to every model the server lists over HTTP/JSON, binary HTTP and gRPC with a 4xx (``tests.support.zero_rows``) and a
request with invalid text with a 400, and then each its shipped request like ``pyfunc.predict``. One serving
environment (onnxruntime + numpy<2, no MLflow) serves all exports.
"""

import concurrent.futures
import http.client
import json
import os
import re
import signal
import time
import urllib.parse
import urllib.request

import mlflow
import mlflow.pyfunc
import numpy as np
import pandas as pd
import pytest

from benchmarks.soak_client import stub_pids
from mlflow_triton import sklearn as mt_sklearn
from mlflow_triton.export import export_onnx
from mlflow_triton.export._parity import FLOAT_TOLERANCES as PARITY_TOLERANCES
from mlflow_triton.local import TritonInstallation, TritonServer, ensure_serving_env, send_shipped_request
from tests.support import tiny_models, zero_rows

pytestmark = pytest.mark.triton

CLIENTS = 8
REQUESTS_PER_CLIENT = 25
RTOL, ATOL = PARITY_TOLERANCES["TYPE_FP32"]  # the export's parity tolerance for what its graphs compute in FP32


def _timing(label, started):
    print(f"[timing] {label}: {time.monotonic() - started:.1f}s")


def _sklearn_rows(count):
    from examples.sklearn_example import training_frame

    frame, _ = training_frame(rows=count, seed=7)
    return frame


def _pytorch_rows(count):
    return np.random.default_rng(7).normal(0.0, 1.0, (count, 4)).astype(np.float32)


@pytest.fixture(scope="module")
def exports(tmp_path_factory):
    """{case: (exported directory, model URI, rows for the load test)}, logged and exported once."""
    from examples import pytorch_example, sklearn_example

    root = tmp_path_factory.mktemp("export-e2e")
    started = time.monotonic()
    with tiny_models.sqlite_tracking(root):
        uri = mlflow.get_tracking_uri()
        sklearn_info = sklearn_example.log_example(uri, registered_model_name="export-sklearn")
        pytorch_info = pytorch_example.log_example(uri, registered_model_name="export-pytorch")
        pipeline, frame = sklearn_example.fitted_pipeline()
        labels_info = mt_sklearn.log_model(
            pipeline, input_example=frame.iloc[:3], name="labels", registered_model_name="export-labels"
        )
        _timing("log three models", started)
        cases, example_expected = {}, {}
        for case, registered, info, rows in (
            ("sklearn", "export-sklearn", sklearn_info, _sklearn_rows(CLIENTS * REQUESTS_PER_CLIENT)),
            ("sklearn-labels", "export-labels", labels_info, _sklearn_rows(CLIENTS * REQUESTS_PER_CLIENT)),
            ("pytorch", "export-pytorch", pytorch_info, _pytorch_rows(CLIENTS * REQUESTS_PER_CLIENT)),
        ):
            started = time.monotonic()
            uri = f"models:/{registered}/{info.registered_model_version}"
            directory = export_onnx(uri, root / "repository", backend="python")
            _timing(f"export {case}", started)
            model = mlflow.pyfunc.load_model(uri)
            cases[case] = (directory, uri, rows, np.asarray(model.predict(rows)))
            example_expected[case] = np.asarray(model.predict(_saved_example(uri)))
    return cases, example_expected


def _saved_example(uri):
    from mlflow.artifacts import download_artifacts
    from mlflow.models import Model

    local = download_artifacts(uri)
    return Model.load(local).load_input_example(local)


@pytest.fixture(scope="module")
def serving(exports):
    """(installation, serving environment): one environment for every export (same requirements.txt)."""
    cases, _ = exports
    texts = {(directory / "requirements.txt").read_text() for directory, *_ in cases.values()}
    assert len(texts) == 1
    [directory, *_] = next(iter(cases.values()))
    installation = TritonInstallation.bundled()
    started = time.monotonic()
    env = ensure_serving_env(directory / "requirements.txt", installation.serving_constraints)
    _timing("serving environment (onnxruntime + numpy<2)", started)
    return installation, env


@pytest.fixture(scope="module", params=["sklearn", "sklearn-labels", "pytorch"])
def served(request, exports, serving):
    """A real tritonserver with one export loaded: (server, case, directory, rows, expected per row)."""
    cases, _ = exports
    directory, _, rows, expected = cases[request.param]
    installation, env = serving
    started = time.monotonic()
    with TritonServer(directory.parent, directory.name, installation=installation, serving_env=env) as server:
        _timing(f"server start to model ready ({request.param})", started)
        yield server, request.param, directory, rows, expected


def test_served_export_declares_dynamic_batching_when_loaded_by_real_triton(served):
    server, _, _, _, _ = served

    config = server.model_config()

    assert server.version() == "2.51.0"
    assert (config["backend"], config["max_batch_size"]) == ("python", 64)
    assert "dynamic_batching" in config


def test_served_export_answers_shipped_request_like_pyfunc_when_sent_as_curl_would(served, exports):
    server, case, directory, _, _ = served
    _, example_expected = exports

    outputs, form = send_shipped_request(server.url, directory)

    [answer] = outputs.values()
    want = example_expected[case]
    assert form == "json"
    assert answer.shape == (len(want), *(want.shape[1:] or (1,)))
    _assert_equal(answer.reshape(want.shape), want)


def test_served_export_answers_each_of_many_concurrent_requests_like_pyfunc_when_under_load(served):
    server, case, directory, rows, expected = served
    tensors = json.loads((directory / "handoff.json").read_text())["tensors"]
    before = _stats(server)
    started = time.monotonic()

    def client(index):
        connection = http.client.HTTPConnection("127.0.0.1", server.http_port, timeout=60)
        answers = []
        try:
            for position in range(index, len(expected), CLIENTS):
                answers.append((position, _infer(connection, server.model_name, _row_body(tensors, rows, position))))
        finally:
            connection.close()
        return answers

    with concurrent.futures.ThreadPoolExecutor(CLIENTS) as pool:
        answered = [a for answers in pool.map(client, range(CLIENTS)) for a in answers]
    _timing(f"{len(answered)} concurrent 1-row requests ({case})", started)
    after = _stats(server)

    assert sorted(position for position, _ in answered) == list(range(len(expected)))
    for position, answer in answered:
        _assert_equal(answer.reshape(expected[position].shape), expected[position])
    inferences = after["inference_count"] - before["inference_count"]
    executions = after["execution_count"] - before["execution_count"]
    print(f"[stats] {case}: {inferences} inferences in {executions} executions")
    assert inferences == len(expected)


def test_served_export_runs_requests_queued_behind_a_busy_instance_in_one_batch_when_the_stub_continues(served):
    server, case, directory, rows, expected = served
    tensors = json.loads((directory / "handoff.json").read_text())["tensors"]
    [stub] = stub_pids(server.pid)
    before = _stats(server)

    bodies = [_row_body(tensors, rows, position) for position in range(CLIENTS)]
    connections = [http.client.HTTPConnection("127.0.0.1", server.http_port, timeout=300) for _ in range(CLIENTS)]

    def one(position):
        return position, _infer(connections[position], server.model_name, bodies[position])

    # Triton's Python backend fails the requests of a stub that has not answered for about a second ("Stub process
    # is not healthy"), so everything that can be done before the pause is: connections open, bodies built. The first
    # request goes to the paused instance alone and the others 0.2 s later, to wait behind it (sent together on two
    # busy cores, they could all reach the queue before the scheduler wakes and leave in one batch, none waiting).
    for connection in connections:
        connection.connect()
    os.kill(stub, signal.SIGSTOP)
    try:
        with concurrent.futures.ThreadPoolExecutor(CLIENTS) as pool:
            futures = [pool.submit(one, 0)]
            time.sleep(0.2)
            futures += [pool.submit(one, position) for position in range(1, CLIENTS)]
            deadline = time.monotonic() + 120
            while _pending(server) < 2:  # one request is in the paused instance; two or more wait behind it
                answered_early = [future.result() for future in futures if future.done()]  # raises a client's error
                assert time.monotonic() < deadline, (
                    f"requests not queued within 120s: {_pending(server)} pending, {len(answered_early)} answered"
                )
                time.sleep(0.01)
            os.kill(stub, signal.SIGCONT)
            answered = [future.result() for future in futures]
    finally:
        os.kill(stub, signal.SIGCONT)
        for connection in connections:
            connection.close()
    after = _stats(server)

    for position, answer in answered:
        _assert_equal(answer.reshape(expected[position].shape), expected[position])
    inferences = after["inference_count"] - before["inference_count"]
    executions = after["execution_count"] - before["execution_count"]
    print(f"[stats] {case}, stub paused: {inferences} inferences in {executions} executions")
    assert inferences == CLIENTS
    assert executions < inferences


def _pending(server):
    """Triton's ``nv_inference_pending_request_count`` of the served model: requests queued, not yet executing."""
    with urllib.request.urlopen(server.metrics_url, timeout=30) as response:
        text = response.read().decode()
    found = re.search(
        rf'^nv_inference_pending_request_count{{model="{re.escape(server.model_name)}",'
        r'version="1"} (\d+)',
        text,
        re.M,
    )
    assert found, "Triton reports no nv_inference_pending_request_count for the model"
    return int(found.group(1))


def _assert_equal(got, want):
    if np.asarray(want).dtype.kind == "f":
        np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)
    else:
        np.testing.assert_array_equal(got, want)


def _row_body(tensors, rows, position):
    """A v2 JSON request for one row, in the exported shapes ([1, *dims]) and the logged tensor names."""
    inputs = []
    for tensor in tensors["inputs"]:
        if isinstance(rows, pd.DataFrame):
            value = rows[tensor["field"]].iloc[position]
            data = [value if isinstance(value, str) else float(value)]
        else:
            data = [float(v) for v in rows[position].ravel()]
        inputs.append(
            {
                "name": tensor["tensor"],
                "datatype": _wire(tensor["data_type"]),
                "shape": [1, *tensor["exported_dims"]],
                "data": data,
            }
        )
    return {"inputs": inputs, "outputs": [{"name": t["tensor"]} for t in tensors["outputs"]]}


def _wire(config_type):
    return "BYTES" if config_type == "TYPE_STRING" else config_type[len("TYPE_") :]


def _infer(connection, model, body):
    connection.request(
        "POST",
        f"/v2/models/{urllib.parse.quote(model)}/infer",
        body=json.dumps(body),
        headers={"Content-Type": "application/json"},
    )
    response = connection.getresponse()
    payload = json.loads(response.read())
    assert response.status == 200, payload
    [output] = payload["outputs"]
    return np.asarray(output["data"]).reshape(output["shape"])


def _stats(server):
    connection = http.client.HTTPConnection("127.0.0.1", server.http_port, timeout=30)
    try:
        connection.request("GET", f"/v2/models/{urllib.parse.quote(server.model_name)}/stats")
        response = connection.getresponse()
        [stats] = json.loads(response.read())["model_stats"]
    finally:
        connection.close()
    return {key: int(stats[key]) for key in ("inference_count", "execution_count")}


def test_served_exports_answer_4xx_to_0_row_requests_over_every_transport_and_then_their_shipped_requests(
    exports, serving
):
    """Before, an input declared ``reshape { shape: [] }`` let a 0-row request stop Triton 2.51 (Signal 11)."""
    from tritonclient.http import InferenceServerClient, InferInput

    cases, example_expected = exports
    installation, env = serving
    sklearn = cases["sklearn"][0]
    bad = []
    for entry in json.loads((sklearn / "request.json").read_text())["inputs"]:
        infer_input = InferInput(entry["name"], [1, 1], entry["datatype"])
        is_text = entry["datatype"] == "BYTES"
        infer_input.set_data_from_numpy(
            np.array([[b"\xff\xfe" if is_text else entry["data"][0]]], dtype=object if is_text else np.float64),
            binary_data=True,
        )
        bad.append(infer_input)
    body, json_size = InferenceServerClient.generate_request_body(bad)
    names = [directory.name for directory, *_ in cases.values()]

    with TritonServer(sklearn.parent, names, installation=installation, serving_env=env) as server:
        listed = zero_rows.listed_models(server)
        refused = {name: zero_rows.answers(server, name) for name in listed}
        connection = http.client.HTTPConnection("127.0.0.1", server.http_port, timeout=60)
        connection.request(
            "POST",
            f"/v2/models/{sklearn.name}/infer",
            body=body,
            headers={"Content-Type": "application/octet-stream", "Inference-Header-Content-Length": str(json_size)},
        )
        response = connection.getresponse()
        status, error = response.status, json.loads(response.read())["error"]
        connection.close()
        shipped = {case: send_shipped_request(server.url, cases[case][0])[0] for case in cases}
        alive = server.poll() is None

    print(f"[zero rows] {refused}")
    assert listed == sorted(names)  # one model directory per export: no front, no second name
    for name, kinds in refused.items():
        assert set(kinds) >= {"http-json", "http-binary", "http-binary-claimed", "grpc"}, name
        for kind, (code, message) in kinds.items():
            assert code in (400, "StatusCode.INVALID_ARGUMENT"), (name, kind, code, message)
        assert "0 rows" in kinds["http-binary-claimed"][1], kinds  # model.py's own refusal, naming the tensor
    assert (status, error) == (400, "Input tensor `colour`: element 0 is not valid UTF-8 text (invalid start byte)")
    assert alive
    for case, outputs in shipped.items():
        [answer] = outputs.values()
        want = example_expected[case]
        _assert_equal(answer.reshape(want.shape), want)
