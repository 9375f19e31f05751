"""Requests without rows on a real Triton 2.51: what docs/batching.md's "Requests without rows" section states.

One server holds the same scikit-learn Pipeline (two FP64 columns and a BYTES one) unbatched (``plain``) and
batched (``batched``, ``max_batch_size=8``: one model directory, each input declared ``dims: [1]`` with
``reshape { shape: [1] }``). Every model name the server lists (``POST /v2/repository/index``) is sent, over
HTTP/JSON, binary HTTP and gRPC, a request of 0 rows; the batched one also requests that declare 0 rows but carry
a row's bytes, rank-one tensors and a BYTES tensor without elements. Each is a 4xx (Triton's own refusal, or the
runtime's naming the tensor), and the server still answers the shipped request exactly afterwards. Before runtime
2.11 the batched config reshaped its inputs to ``[]`` and one such request stopped the server (``Signal (11)``).

A repository written by mlflow-triton 0.x with runtime 2.10.1 (the zero-row guard's front ``legacy`` and its
``legacy_batched``, tests/support/legacy_repositories) still serves from its own server, and ``serve`` refuses its
batched directory alone naming the front.
"""

import json
import pathlib
import struct
import tarfile

import mlflow.pyfunc
import numpy as np
import pandas as pd
import pytest
from sklearn.compose import ColumnTransformer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder

from mlflow_triton import sklearn
from mlflow_triton.errors import ModelSourceError
from mlflow_triton.local import TritonInstallation, TritonServer, ensure_serving_env, send_shipped_request
from mlflow_triton.local._compare import differences
from mlflow_triton.local.sources import resolve_model
from mlflow_triton.repository.config import read_config, wire_arrays
from tests.support.oracle import expected_example_tensors
from tests.support.v2_http import grpc_raw_infer, post_binary, post_infer, repository_index

pytestmark = [pytest.mark.triton, pytest.mark.filterwarnings("ignore")]

EXAMPLE = pd.DataFrame({"a": [1.0, 2.0, 3.0, 4.0], "b": [0.5, 0.1, 0.9, 0.3], "c": ["red", "blue", "red", "green"]})
LEGACY = pathlib.Path(__file__).resolve().parents[1] / "support" / "legacy_repositories"


def pipeline():
    encode = ColumnTransformer([("c", OneHotEncoder(handle_unknown="ignore"), ["c"])], remainder="passthrough")
    return make_pipeline(encode, LogisticRegression()).fit(EXAMPLE, [0, 1, 0, 1])


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """(server, {model name: package}) of ``plain`` and ``batched``."""
    root = tmp_path_factory.mktemp("zero-rows")
    packages = {}
    for name, max_batch_size in (("plain", 0), ("batched", 8)):
        sklearn.save_model(
            pipeline(),
            root / name,
            input_example=EXAMPLE.iloc[:3],
            serialization_format="cloudpickle",
            triton_model_name=name,
            max_batch_size=max_batch_size,
        )
        packages[name] = root / name
    installation = TritonInstallation.bundled(progress=None)
    repository = packages["plain"] / "model_repository" / "plain"
    env = ensure_serving_env(repository / "requirements.txt", installation.serving_constraints, progress=None)
    directories = [packages[name] / "model_repository" / name for name in packages]
    with TritonServer(
        [d.parent for d in directories], [d.name for d in directories], installation=installation, serving_env=env
    ) as server:
        yield server, packages


def assert_answers_its_shipped_request_exactly(server, package, name):
    directory = package / "model_repository" / name
    config, _ = read_config(directory / "config.pbtxt")
    expected = wire_arrays(config, "output", expected_example_tensors(package, directory))
    assert differences(expected, send_shipped_request(server.url, directory).outputs) == []


def floats(*values):
    return struct.pack(f"<{len(values)}d", *values)


def texts(*values):
    return b"".join(struct.pack("<I", len(v)) + v for v in (value.encode() for value in values))


def columns(shape, a=b"", b=b"", c=b""):
    """The three inputs, each of ``shape``, carrying the given bytes."""
    return [("a", "FP64", shape, a), ("b", "FP64", shape, b), ("c", "BYTES", shape, c)]


def test_a_batched_repository_is_one_model_directory_with_no_input_reshaped_to_an_empty_shape(served):
    _, packages = served
    directory = packages["batched"] / "model_repository" / "batched"
    config, _ = read_config(directory / "config.pbtxt")

    assert sorted(p.name for p in directory.parent.iterdir()) == ["batched"]
    assert [(entry.name, list(entry.dims), list(entry.reshape.shape)) for entry in config.input] == [
        ("a", [1], [1]),
        ("b", [1], [1]),
        ("c", [1], [1]),
    ]


@pytest.mark.parametrize("transport", ["json", "binary", "grpc"])
def test_every_listed_model_answers_a_0_row_request_with_a_4xx_and_then_its_shipped_request_exactly(served, transport):
    server, packages = served
    listed = repository_index(server)
    assert listed == {"batched": "READY", "plain": "READY"}

    for name in listed:
        shape = [0, 1] if name == "batched" else [0]
        if transport == "json":
            inputs = [{"name": n, "datatype": d, "shape": shape, "data": []} for n, d, _, _ in columns(shape)]
            status, body = post_infer(server, name, inputs, timeout=30)
            assert 400 <= status < 500, body
        elif transport == "binary":
            status, body = post_binary(server, name, columns(shape), timeout=30)
            assert 400 <= status < 500, body
        else:
            code, details = grpc_raw_infer(server, name, columns(shape), timeout=30)
            assert code == "INVALID_ARGUMENT", details
        assert server.poll() is None
    for name, package in packages.items():
        assert_answers_its_shipped_request_exactly(server, package, name)


# Requests a batched model must refuse whatever they carry: (what, inputs, the refusal's start).
ROW_AXIS = "Tensor `a` must be sent as [rows, 1] with at least one row"
HOSTILE = [
    ("claims 0 rows, carries one", columns([0, 1], floats(1.0), floats(0.5), texts("red")), ROW_AXIS),
    ("claims 0 rows, carries two", columns([0, 1], floats(1.0, 2.0), floats(0.5, 0.1), texts("a", "b")), None),
    ("rank one", columns([2], floats(1.0, 2.0), floats(0.5, 0.1), texts("a", "b")), None),
    ("BYTES without elements", [*columns([1, 1], floats(1.0), floats(0.5))[:2], ("c", "BYTES", [0, 1], b"")], None),
]


@pytest.mark.parametrize("transport", ["binary", "grpc"])
@pytest.mark.parametrize("what, inputs, refusal", HOSTILE, ids=[case[0] for case in HOSTILE])
def test_a_batched_model_refuses_requests_without_a_row_axis_naming_the_tensor_and_keeps_serving(
    served, transport, what, inputs, refusal
):
    server, packages = served

    if transport == "binary":
        status, body = post_binary(server, "batched", inputs, timeout=30)
        assert 400 <= status < 500, (what, body)
        message = body["error"]
    else:
        code, message = grpc_raw_infer(server, "batched", inputs, timeout=30)
        assert code == "INVALID_ARGUMENT", (what, message)
    if refusal is not None:
        assert message.startswith(refusal), message
    assert server.poll() is None
    assert_answers_its_shipped_request_exactly(server, packages["batched"], "batched")


@pytest.mark.parametrize("parameters", [{"scale": 2.5}, {"scale": 2**63}], ids=["decimal", "past-int64"])
def test_a_request_parameter_is_answered_by_a_batched_model_as_by_the_unbatched_one(served, parameters):
    """Behind the zero-row guard's front (BLS) a decimal was a 500; each model's own answer is the runtime's 400
    for a model without a params schema (MLflow's server refuses them too), the same for both."""
    server, _ = served
    inputs = [
        {"name": "a", "datatype": "FP64", "shape": [1, 1], "data": [1.0]},
        {"name": "b", "datatype": "FP64", "shape": [1, 1], "data": [0.5]},
        {"name": "c", "datatype": "BYTES", "shape": [1, 1], "data": ["red"]},
    ]
    plain = _post_with_parameters(server, "plain", [dict(entry, shape=[1]) for entry in inputs], parameters)
    batched = _post_with_parameters(server, "batched", inputs, parameters)

    assert plain[0] == 400 and plain[1]["error"].startswith("Request parameter(s) `scale`: this model takes no")
    assert batched == plain


def _post_with_parameters(server, model, inputs, parameters):
    import http.client

    connection = http.client.HTTPConnection("127.0.0.1", server.http_port, timeout=30)
    try:
        body = json.dumps({"inputs": inputs, "parameters": parameters}).encode()
        connection.request("POST", f"/v2/models/{model}/infer", body=body, headers={"Content-Type": "application/json"})
        response = connection.getresponse()
        return response.status, json.loads(response.read())
    finally:
        connection.close()


@pytest.fixture(scope="module")
def legacy(tmp_path_factory):
    """The model repository of a package mlflow-triton wrote with runtime 2.10.1: ``legacy`` and ``legacy_batched``."""
    root = tmp_path_factory.mktemp("legacy")
    with tarfile.open(LEGACY / "guarded-runtime-2.10.1.tar.gz") as archive:
        archive.extractall(root, filter="data")
    return root / "model_repository"


def test_a_repository_written_behind_the_zero_row_guard_keeps_serving_and_its_batched_model_is_refused_alone(
    legacy, tmp_path
):
    refused = r"legacy_batched: the batched model behind .* serve the front, .*legacy"
    with pytest.raises(ModelSourceError, match=refused):
        resolve_model(str(legacy / "legacy_batched"), tmp_path)
    directories = resolve_model(str(legacy / "legacy"), tmp_path).served
    assert [d.name for d in directories] == ["legacy", "legacy_batched"]

    installation = TritonInstallation.bundled(progress=None)
    requirements = legacy / "legacy_batched" / "requirements.txt"
    env = ensure_serving_env(requirements, installation.serving_constraints, progress=None)
    with TritonServer(legacy, [d.name for d in directories], installation=installation, serving_env=env) as server:
        inputs = [{"name": n, "datatype": "FP64", "shape": [0, 1], "data": []} for n in ("a", "b")]
        status, body = post_infer(server, "legacy", inputs, timeout=30)
        assert status == 400 and body["error"].startswith("Tensor `a` has 0 rows: send at least one row."), body
        shipped = json.loads((legacy / "legacy_batched" / "request.json").read_text())
        status, body = post_infer(server, "legacy", shipped["inputs"], timeout=30)
        assert status == 200, body
        pyfunc = mlflow.pyfunc.load_model(str(legacy / "legacy_batched" / "1" / "artifact"))
        expected = pyfunc.predict(pd.DataFrame({n: shipped["inputs"][i]["data"] for i, n in enumerate(("a", "b"))}))
        assert (body["outputs"][0]["shape"], body["outputs"][0]["data"]) == ([3, 1], np.asarray(expected).tolist())
