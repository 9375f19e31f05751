"""A request with 0 rows on a real Triton 2.51: what docs/batching.md's "Requests without rows" section states.

The same scikit-learn model is served three times from one server: unbatched (``max_batch_size=0``), batched
behind its zero-row guard (the default, ``max_batch_size=8``) and batched without it (``zero_row_guard=False``).
The unbatched one answers a 0-row request over HTTP and gRPC (this model's 400) and then valid ones; the guarded
one answers a 400 saying to send at least one row and then valid ones exactly; the unguarded one gets no answer
and the server exits with ``Signal (11)`` (the Python backend releases an execution of 0 rows unanswered). The
last pins the risk the opt-out warns about (``ZERO_ROW_REQUESTS``): a Triton that no longer crashes fails the
test, and the docs, the warning and validation.json should then say so.
"""

import http.client
import shutil
import time

import numpy as np
import pandas as pd
import pytest
import tritonclient.grpc as grpcclient
from sklearn.linear_model import LogisticRegression

from mlflow_triton import sklearn
from mlflow_triton.local import TritonInstallation, TritonServer, ensure_serving_env
from mlflow_triton.repository.guard import served_directories
from tests.support.v2_http import post_infer

pytestmark = [pytest.mark.triton, pytest.mark.filterwarnings("ignore")]

EXAMPLE = pd.DataFrame({"a": [1.0, 2.0, 3.0, 4.0], "b": [0.5, 0.1, 0.9, 0.3]})


@pytest.fixture(scope="module")
def repository(tmp_path_factory):
    """A repository holding ``plain`` (unbatched), ``guarded`` (``max_batch_size=8``, with its ``guarded_batched``)
    and ``batched`` (``max_batch_size=8``, ``zero_row_guard=False``) of one model."""
    root = tmp_path_factory.mktemp("zero-rows")
    model = LogisticRegression().fit(EXAMPLE, [0, 1, 0, 1])
    repository = root / "repository"
    repository.mkdir()
    for name, max_batch_size, guard in (("plain", 0, True), ("guarded", 8, True), ("batched", 8, False)):
        sklearn.save_model(
            model,
            root / name,
            input_example=EXAMPLE.iloc[:3],
            triton_model_name=name,
            max_batch_size=max_batch_size,
            zero_row_guard=guard,
        )
        for directory in served_directories(root / name / "model_repository" / name):
            shutil.copytree(directory, repository / directory.name)
    assert sorted(p.name for p in repository.iterdir()) == ["batched", "guarded", "guarded_batched", "plain"]
    return repository


def http_infer(server, model, rows, *, batched):
    """POST ``rows`` rows of the example as v2 JSON (batched: ``[rows, 1]``); (status, body) or ``None`` when
    the connection ends without an answer."""
    shape = [rows, 1] if batched else [rows]
    inputs = [
        {"name": name, "datatype": "FP64", "shape": shape, "data": EXAMPLE[name].tolist()[:rows]} for name in EXAMPLE
    ]
    try:
        return post_infer(server, model, inputs, timeout=30)
    except (http.client.RemoteDisconnected, OSError):  # closed, refused or timed out: no answer
        return None


def grpc_infer(server, model, rows, *, batched):
    """The same request over gRPC: the answer's ``output_0``, or the ``InferenceServerException``."""
    client = grpcclient.InferenceServerClient(server.grpc_url)
    inputs = []
    for name in EXAMPLE:
        values = EXAMPLE[name].to_numpy()[:rows]
        values = values.reshape(rows, 1) if batched else values
        tensor = grpcclient.InferInput(name, list(values.shape), "FP64")
        tensor.set_data_from_numpy(values)
        inputs.append(tensor)
    try:
        return client.infer(model, inputs, client_timeout=30).as_numpy("output_0")
    except Exception as error:  # tritonclient raises InferenceServerException for every failure
        return error
    finally:
        client.close()


def exits(server, seconds=60.0):
    deadline = time.monotonic() + seconds
    while server.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    return server.poll() is not None


def assert_unbatched_answers_0_rows_then_valid_requests(server):
    # LogisticRegression cannot predict 0 rows: the runtime's 400 naming the tensor, and the server goes on
    refusal = "Tensor `a` is empty and the model cannot predict an empty request (ValueError)"
    status, body = http_infer(server, "plain", 0, batched=False)
    assert status == 400 and body["error"].startswith(refusal)
    assert refusal in str(grpc_infer(server, "plain", 0, batched=False))
    status, body = http_infer(server, "plain", 3, batched=False)
    assert status == 200 and len(body["outputs"][0]["data"]) == 3
    assert np.asarray(grpc_infer(server, "plain", 3, batched=False)).shape == (3,)


def assert_guarded_answers_0_rows_with_a_400_then_valid_requests_exactly(server):
    expected = LogisticRegression().fit(EXAMPLE, [0, 1, 0, 1]).predict(EXAMPLE.iloc[:3]).tolist()
    status, body = http_infer(server, "guarded", 0, batched=True)
    assert status == 400
    assert body["error"].startswith("Tensor `a` has 0 rows: send at least one row.")
    assert "send at least one row" in str(grpc_infer(server, "guarded", 0, batched=True))
    status, body = http_infer(server, "guarded", 3, batched=True)
    assert (status, body["model_name"]) == (200, "guarded")
    assert body["outputs"][0]["shape"] == [3, 1] and body["outputs"][0]["data"] == expected
    assert np.asarray(grpc_infer(server, "guarded", 3, batched=True)).reshape(-1).tolist() == expected


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_a_0_row_request_is_refused_by_the_guard_and_stops_the_server_for_a_batched_repository_without_it(
    repository, protocol
):
    installation = TritonInstallation.bundled(progress=None)
    env = ensure_serving_env(repository / "plain" / "requirements.txt", installation.serving_constraints, progress=None)
    models = ["plain", "guarded", "guarded_batched", "batched"]
    with TritonServer(repository, models, installation=installation, serving_env=env) as server:
        assert_unbatched_answers_0_rows_then_valid_requests(server)
        assert_guarded_answers_0_rows_with_a_400_then_valid_requests_exactly(server)
        status, _ = http_infer(server, "batched", 3, batched=True)
        assert status == 200

        if protocol == "http":
            assert http_infer(server, "batched", 0, batched=True) is None
        else:
            error = grpc_infer(server, "batched", 0, batched=True)
            assert "UNAVAILABLE" in str(error)

        assert exits(server), "the server survived a 0-row request: update docs/batching.md and ZERO_ROW_REQUESTS"
        assert "Signal (11) received" in server.log_text()
