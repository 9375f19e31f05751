"""The generated runtime on a real Triton 2.51: exact answers or errors with meaningful codes.

Pins the audit's findings on the real server (issues #17.1-17.3, #17.5, #13.1, #18.10):

* a prediction that does not fit its declared output dtype fails (500 / INTERNAL) naming the
  tensor and the value, instead of coming back wrapped with HTTP 200;
* the shipped request of an FP16 model is answered (request.bin + request.headers);
* integer column labels (``pd.DataFrame(X)``) round-trip, as inputs and as prediction columns;
* request errors the runtime detects answer 400 / INVALID_ARGUMENT, a model that raises answers
  500 / INTERNAL, and no response quotes the request or grows with it;
* a request's parameters reach ``predict(..., params=...)``; an unknown one, or one sent to a model
  without a params schema, answers 400; Triton's own keys never reach the model (#22.1);
* what Triton changes on the way (a 17-digit double over HTTP/JSON, a string holding U+0000) reaches
  ``predict`` exactly through the documented safe paths (gRPC for doubles, ``mlflow_params`` for both); a
  repeated key and an integer beyond int64 answer 400 saying so (#31.2, #31.5).

Two servers, one per serving environment: every scikit-learn model shares the sklearn example's
requirements and every PyTorch model the PyTorch example's (both already built by the example
runner's tests), so only the first use of the cache builds anything.
"""

import http.client
import json
import shutil
import time
import urllib.request

import mlflow.pyfunc
import numpy as np
import pandas as pd
import pytest
import torch
import tritonclient.grpc as triton_grpc
import tritonclient.http as triton_http
from mlflow.models import ModelSignature, infer_signature
from mlflow.types import ColSpec, Schema
from sklearn.compose import ColumnTransformer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder
from tritonclient.grpc import model_config_pb2
from tritonclient.utils import InferenceServerException

from mlflow_triton import pytorch, sklearn
from mlflow_triton.local import TritonInstallation, TritonServer, ensure_serving_env, send_shipped_request
from mlflow_triton.repository.config import read_config, write_config
from mlflow_triton.repository.request_files import triton_json_double
from tests.support import tiny_models
from tests.support.oracle import expected_example_tensors

pytestmark = [pytest.mark.triton, pytest.mark.filterwarnings("ignore")]

BIG_LABEL = 3_000_000_000  # does not fit INT32
MAX_MESSAGE_LENGTH = 1000  # runtime/triton_model.py (importing it needs triton_python_backend_utils)
SECRET = "SECRET-TOKEN-abc123"


# -- serving: one repository and one server per serving environment ---------------------------------


def serve(repository, models):
    """A started TritonServer holding ``models`` of ``repository``, every one of them ready."""
    installation = TritonInstallation.bundled(progress=None)
    env = ensure_serving_env(
        repository / models[0] / "requirements.txt", installation.serving_constraints, progress=None
    )
    server = TritonServer(
        repository,
        models[0],
        installation=installation,
        serving_env=env,
        extra_args=tuple(f"--load-model={name}" for name in models[1:]),
    )
    server.__enter__()
    deadline = time.monotonic() + 180
    for name in models[1:]:
        while not _ready(server, name):
            if time.monotonic() > deadline:
                server.__exit__(None, None, None)
                raise TimeoutError(f"model {name} not ready:\n{server.log_tail(40)}")
            time.sleep(0.25)
    return server


def _ready(server, name):
    try:
        with urllib.request.urlopen(f"{server.url}/v2/models/{name}/ready", timeout=5) as response:
            return response.status == 200
    except OSError:
        return False


def save(save_model, model, repository, name, **options):
    """``save_model`` into a scratch package; its Triton repository moves to ``repository/name``."""
    package = repository.parent / "packages" / name
    save_model(model, package, triton_model_name=name, **options)
    shutil.move(str(package / "model_repository" / name), str(repository / name))
    return package


@pytest.fixture(scope="module")
def sklearn_models(tmp_path_factory):
    root = tmp_path_factory.mktemp("sklearn")
    repository = root / "repository"
    repository.mkdir()
    started = time.monotonic()

    # Integer column labels (pd.DataFrame(X)) and int64 class labels, one of which does not fit the
    # INT32 output the signature declares: the example predicts only the class that fits.
    frame = pd.DataFrame({0: [0.0, 0.1, 10.0, 11.0], 1: [1.0, 0.0, 1.0, 0.0]})
    classifier = LogisticRegression().fit(frame, [1, 1, BIG_LABEL, BIG_LABEL])
    declared_int32 = ModelSignature(Schema([ColSpec("double", 0), ColSpec("double", 1)]), Schema([ColSpec("integer")]))
    labels = save(
        sklearn.save_model, classifier, repository, "labels", input_example=frame.iloc[:2], signature=declared_int32
    )

    strict_frame = pd.DataFrame({"n": [1, 2, 3, 4], "s": ["a", "b", "a", "b"]})
    one_hot = ColumnTransformer([("s", OneHotEncoder(handle_unknown="error"), ["s"])], remainder="passthrough")
    strict = make_pipeline(one_hot, LogisticRegression()).fit(strict_frame, [0, 1, 0, 1])
    for name in ("strict", "strict_edited"):
        save(sklearn.save_model, strict, repository, name, input_example=strict_frame.iloc[:2])
    config, _ = read_config(repository / "strict_edited" / "config.pbtxt")  # an operator edits `n` to FP64
    [n] = [entry for entry in config.input if entry.name == "n"]
    n.data_type = model_config_pb2.TYPE_FP64
    write_config(config, repository / "strict_edited" / "config.pbtxt")
    print(f"[timing] logging 3 sklearn models: {time.monotonic() - started:.1f}s")

    started = time.monotonic()
    server = serve(repository, ["labels", "strict", "strict_edited"])
    print(f"[timing] sklearn server with 3 models ready: {time.monotonic() - started:.1f}s")
    try:
        yield server, repository, {"labels": (labels, frame.iloc[:2])}
    finally:
        server.__exit__(None, None, None)


@pytest.fixture(scope="module")
def pytorch_models(tmp_path_factory):
    root = tmp_path_factory.mktemp("pytorch")
    repository = root / "repository"
    repository.mkdir()
    started = time.monotonic()
    code_paths = [str(tiny_models.CUSTOM_NET_DIR)]

    half_example = tiny_models.mlp_example().astype(np.float16)
    half = torch.nn.Sequential(torch.nn.Linear(4, 3)).eval().half()
    half_package = save(pytorch.save_model, half, repository, "half", input_example=half_example)

    half_output = tiny_models.scripted_half_output()
    half_output_package = save(
        pytorch.save_model, half_output, repository, "half_output", input_example=tiny_models.mlp_example()
    )

    frame_example = pd.DataFrame(tiny_models.mlp_example(3))
    frame_package = save(
        pytorch.save_model,
        tiny_models.shared_tiny_mlp(),
        repository,
        "frame_labels",
        input_example=frame_example,
        code_paths=code_paths,
    )

    # forward(x, scale=1.0) with a params schema: `scale` is a request parameter (#22.1); the example's params
    # (scale 3) travel with the shipped request.
    scaled = tiny_models.scripted_scaled_linear()
    scaled_example = tiny_models.mlp_example()
    scaled_signature = infer_signature(
        scaled_example, scaled(torch.from_numpy(scaled_example)).detach().numpy(), params={"scale": 1.0}
    )
    scaled_package = save(
        pytorch.save_model,
        scaled,
        repository,
        "scaled",
        input_example=(scaled_example, {"scale": 3.0}),
        signature=scaled_signature,
    )

    # forward(x, threshold=0.5, tag="", count=1): its answer shows the last bit of `threshold` and every character of
    # `tag` (#31.2); the example's params (5/11, a tag holding U+0000) are ones Triton would change.
    gate_input, gate_params = tiny_models.gate_example()
    gate_package = save(
        pytorch.save_model,
        tiny_models.scripted_gate(),
        repository,
        "gate",
        input_example=(gate_input, gate_params),
        signature=tiny_models.gate_signature(),
    )

    print(f"[timing] logging 5 PyTorch models: {time.monotonic() - started:.1f}s")

    started = time.monotonic()
    server = serve(repository, ["half", "half_output", "frame_labels", "scaled", "gate"])
    print(f"[timing] PyTorch server with 5 models ready: {time.monotonic() - started:.1f}s")
    examples = {
        "half": (half_package, half_example),
        "half_output": (half_output_package, tiny_models.mlp_example()),
        "frame_labels": (frame_package, frame_example),
        "scaled": (scaled_package, scaled_example),
        "gate": (gate_package, gate_input),
    }
    try:
        yield server, repository, examples
    finally:
        server.__exit__(None, None, None)


# -- clients ---------------------------------------------------------------------------------------------


def post_json(server, model, inputs, parameters=None):
    """POST a v2 JSON body (with the request ``parameters`` if given); returns (HTTP status, parsed body)."""
    body = json.dumps({"inputs": inputs, **({"parameters": parameters} if parameters is not None else {})}).encode()
    connection = http.client.HTTPConnection("127.0.0.1", server.http_port, timeout=60)
    try:
        connection.request("POST", f"/v2/models/{model}/infer", body=body, headers={"Content-Type": "application/json"})
        response = connection.getresponse()
        return response.status, json.loads(response.read())
    finally:
        connection.close()


def column(name, datatype, data):
    return {"name": name, "datatype": datatype, "shape": [len(data)], "data": data}


def infer_binary(server, model, arrays, datatypes, protocol):
    """Send ``arrays`` with tritonclient (HTTP binary extension or gRPC); returns the result."""
    module = triton_http if protocol == "http" else triton_grpc
    url = f"127.0.0.1:{server.http_port}" if protocol == "http" else server.grpc_url
    client = module.InferenceServerClient(url)
    try:
        inputs = []
        for name, array in arrays.items():
            entry = module.InferInput(name, list(array.shape), datatypes[name])
            if protocol == "http":
                entry.set_data_from_numpy(array, binary_data=True)
            else:
                entry.set_data_from_numpy(array)
            inputs.append(entry)
        return client.infer(model, inputs)
    finally:
        client.close()


def strings(*items):
    array = np.empty(len(items), dtype=object)
    array[:] = list(items)
    return array


EXPECTED_STATUS = {"http": "400", "grpc": "StatusCode.INVALID_ARGUMENT"}
INTERNAL_STATUS = {"http": "500", "grpc": "StatusCode.INTERNAL"}


# -- #17.1: never a changed value ----------------------------------------------------------------------


def test_real_triton_answers_500_naming_the_value_when_a_prediction_does_not_fit_the_int32_output(sklearn_models):
    server, *_ = sklearn_models

    status, body = post_json(server, "labels", [column("_0", "FP64", [10.5, 0.0]), column("_1", "FP64", [0.0, 1.0])])

    assert status == 500, body
    assert body["error"] == (
        "The prediction does not fit the configured outputs: Tensor `output_0`: element 0 (3000000000) does not "
        "fit TYPE_INT32 (int32) unchanged"
    )


def test_real_triton_answers_the_exact_prediction_when_it_fits_the_int32_output(sklearn_models):
    server, *_ = sklearn_models

    status, body = post_json(server, "labels", [column("_0", "FP64", [0.05, 0.0]), column("_1", "FP64", [0.0, 1.0])])

    assert status == 200, body
    assert body["outputs"][0]["datatype"] == "INT32" and body["outputs"][0]["data"] == [1, 1]


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_real_triton_reports_internal_when_a_prediction_does_not_fit_its_output(sklearn_models, protocol):
    server, *_ = sklearn_models

    with pytest.raises(InferenceServerException, match="does not fit TYPE_INT32") as error:
        arrays = {"_0": np.array([10.5]), "_1": np.array([0.0])}
        infer_binary(server, "labels", arrays, {"_0": "FP64", "_1": "FP64"}, protocol)

    assert error.value.status() == INTERNAL_STATUS[protocol]


# -- #17.3: integer column labels --------------------------------------------------------------------------


def test_real_triton_answers_the_shipped_request_like_pyfunc_when_columns_have_integer_labels(sklearn_models):
    server, repository, examples = sklearn_models
    package, example = examples["labels"]

    outputs, form = send_shipped_request(server.url, repository / "labels")

    assert form == "json"
    body = json.loads((repository / "labels" / "request.json").read_text())
    assert [entry["name"] for entry in body["inputs"]] == ["_0", "_1"]
    np.testing.assert_array_equal(outputs["output_0"], mlflow.pyfunc.load_model(str(package)).predict(example))


def test_real_triton_answers_prediction_columns_with_integer_labels_like_pyfunc_when_a_module_gets_a_frame(
    pytorch_models,
):
    server, repository, examples = pytorch_models
    package, example = examples["frame_labels"]

    outputs, _ = send_shipped_request(server.url, repository / "frame_labels")

    expected = mlflow.pyfunc.load_model(str(package)).predict(example)
    assert list(expected.columns) == [0, 1, 2]
    assert sorted(outputs) == ["_0_2", "_1_2", "_2_2"]
    for label, tensor in ((0, "_0_2"), (1, "_1_2"), (2, "_2_2")):
        np.testing.assert_array_equal(outputs[tensor], expected[label].to_numpy())


# -- #17.2: FP16 ------------------------------------------------------------------------------------------------


def test_real_triton_answers_the_shipped_binary_request_when_the_module_is_half_precision(pytorch_models):
    server, repository, examples = pytorch_models
    package, example = examples["half"]

    outputs, form = send_shipped_request(server.url, repository / "half")

    assert form == "binary"
    assert outputs["output_0"].dtype == np.float16
    np.testing.assert_array_equal(outputs["output_0"], mlflow.pyfunc.load_model(str(package)).predict(example))


def test_real_triton_answers_the_shipped_binary_request_when_only_the_output_is_half_precision(pytorch_models):
    """A JSON request would be refused: "sending FP16 data via JSON is not supported" (400)."""
    server, repository, examples = pytorch_models
    package, example = examples["half_output"]

    outputs, form = send_shipped_request(server.url, repository / "half_output")

    assert form == "binary"
    assert outputs["output_0"].dtype == np.float16
    np.testing.assert_array_equal(outputs["output_0"], mlflow.pyfunc.load_model(str(package)).predict(example))


# -- #13.1: status codes; #17.5 and #18.10: no request data in errors --------------------------------------


STRICT_TYPES = {"n": "INT64", "s": "BYTES"}
CLIENT_ERRORS = {
    "unequal-lengths": (
        {"n": np.array([1, 2], dtype=np.int64), "s": strings(b"a")},
        "Column tensors must have equal lengths; got n: 2, s: 1",
    ),
    "invalid-utf8": (
        {"n": np.array([1, 2], dtype=np.int64), "s": strings(b"a", b"\xff" + SECRET.encode())},
        "Tensor `s`: element 1 is not valid UTF-8 text (invalid start byte at byte 0)",
    ),
}


@pytest.mark.parametrize("protocol", ["http", "grpc"])
@pytest.mark.parametrize("kind", CLIENT_ERRORS)
def test_real_triton_answers_invalid_argument_naming_the_tensor_when_the_request_is_malformed(
    sklearn_models, kind, protocol
):
    server, *_ = sklearn_models
    arrays, message = CLIENT_ERRORS[kind]

    with pytest.raises(InferenceServerException) as error:
        infer_binary(server, "strict", arrays, STRICT_TYPES, protocol)

    assert error.value.status() == EXPECTED_STATUS[protocol]
    assert error.value.message().endswith(message)
    assert SECRET not in str(error.value)


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_real_triton_answers_invalid_argument_without_the_data_when_mlflow_schema_enforcement_refuses(
    sklearn_models, protocol
):
    server, *_ = sklearn_models
    arrays = {"n": np.array([1.5, 2.0]), "s": strings(SECRET.encode(), b"b")}

    with pytest.raises(InferenceServerException) as error:
        infer_binary(server, "strict_edited", arrays, {"n": "FP64", "s": "BYTES"}, protocol)

    assert error.value.status() == EXPECTED_STATUS[protocol]
    assert error.value.message().endswith(
        "The request does not match the model's input schema: Incompatible input types for column n. "
        "Can not safely convert float64 to int64."
    )
    assert SECRET not in str(error.value) and "1.5" not in str(error.value)


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_real_triton_answers_internal_without_the_model_text_when_the_model_raises(sklearn_models, protocol):
    server, *_ = sklearn_models
    arrays = {"n": np.array([1, 2], dtype=np.int64), "s": strings(SECRET.encode(), b"b")}

    with pytest.raises(InferenceServerException) as error:
        infer_binary(server, "strict", arrays, STRICT_TYPES, protocol)

    assert error.value.status() == INTERNAL_STATUS[protocol]
    assert "Prediction failed: ValueError; its message may quote the request" in error.value.message()
    assert SECRET not in str(error.value)
    reference = error.value.message().rsplit("reference ", 1)[1].rstrip(")")
    logged = logged_lines(server, f"mlflow-triton [{reference}]")
    assert len(logged) == 1 and "Found unknown categories" in logged[0] and SECRET in logged[0]


def logged_lines(server, marker, wait_seconds=15.0):
    """Lines of Triton's log holding ``marker``; the stub's log messages reach the log after the response."""
    deadline = time.monotonic() + wait_seconds
    while True:
        lines = [line for line in server.log_text().splitlines() if marker in line]
        if lines or time.monotonic() > deadline:
            return lines
        time.sleep(0.1)


def test_real_triton_keeps_the_error_body_small_when_a_huge_unknown_category_is_sent(sklearn_models):
    server, *_ = sklearn_models
    huge = "x" * 5_000_000

    status, body = post_json(server, "strict", [column("n", "INT64", [1]), column("s", "BYTES", [huge])])

    assert status == 500
    assert len(body["error"]) <= MAX_MESSAGE_LENGTH and "xxxx" not in body["error"]
    assert len(server.log_text()) < 1_000_000


# -- #22.1: request parameters ------------------------------------------------------------------------


def shipped_inputs(repository, model):
    """The inputs of the model's shipped request.json."""
    return json.loads((repository / model / "request.json").read_text())["inputs"]


@pytest.mark.parametrize("scale", [2.0, 3])
def test_real_triton_answers_like_pyfunc_predict_with_the_request_params_when_the_signature_has_a_params_schema(
    pytorch_models, scale
):
    server, repository, examples = pytorch_models
    package, example = examples["scaled"]

    status, body = post_json(server, "scaled", shipped_inputs(repository, "scaled"), parameters={"scale": scale})

    assert status == 200, body
    [output] = body["outputs"]
    expected = mlflow.pyfunc.load_model(str(package)).predict(example, params={"scale": scale})
    np.testing.assert_array_equal(np.array(output["data"], dtype=np.float32).reshape(output["shape"]), expected)


def test_real_triton_answers_the_shipped_request_with_the_example_params_like_the_check_oracle(pytorch_models):
    server, repository, examples = pytorch_models
    package, example = examples["scaled"]

    outputs, form = send_shipped_request(server.url, repository / "scaled")

    assert form == "json"
    expected = mlflow.pyfunc.load_model(str(package)).predict(example, params={"scale": 3.0})
    np.testing.assert_array_equal(outputs["output_0"], expected)
    np.testing.assert_array_equal(
        outputs["output_0"], expected_example_tensors(package, repository / "scaled")["output_0"]
    )


def test_real_triton_answers_400_naming_the_parameter_when_a_request_parameter_is_unknown(pytorch_models):
    server, repository, _ = pytorch_models

    status, body = post_json(
        server, "scaled", shipped_inputs(repository, "scaled"), parameters={"scale": 2.0, "scael": 2.0}
    )

    assert status == 400, body
    assert body["error"] == (
        "Request parameter(s) `scael` not accepted by this model; accepted: scale (a double, default 1.0)"
    )


def test_real_triton_answers_400_when_a_model_without_params_schema_gets_a_parameter_but_not_for_triton_keys(
    pytorch_models,
):
    server, repository, _ = pytorch_models
    inputs = shipped_inputs(repository, "frame_labels")

    refused, body = post_json(server, "frame_labels", inputs, parameters={"scale": 2.0})
    answered, _ = post_json(
        server,
        "frame_labels",
        inputs,
        parameters={
            "priority": 0,
            "timeout": 60_000_000,
            "sequence_id": 0,
            "binary_data_output": False,
        },
    )

    assert refused == 400, body
    assert body["error"].startswith("Request parameter(s) `scale`: this model takes no parameters")
    assert answered == 200


# -- #31.2 / #31.5: what Triton changes, and the safe paths -----------------------------------------------


def infer_gate(server, protocol, parameters, x=None):
    """The gate's answer to ``x`` (default: the example's input, sent as binary / protobuf, never as JSON text)."""
    x = tiny_models.gate_example()[0] if x is None else x
    module = triton_http if protocol == "http" else triton_grpc
    url = f"127.0.0.1:{server.http_port}" if protocol == "http" else server.grpc_url
    client = module.InferenceServerClient(url)
    try:
        entry = module.InferInput("input_0", list(x.shape), "FP64")
        entry.set_data_from_numpy(x, **({"binary_data": True} if protocol == "http" else {}))
        return client.infer("gate", [entry], parameters=parameters).as_numpy("output_0")
    finally:
        client.close()


def gate_predict(pytorch_models, params):
    package, example = pytorch_models[2]["gate"]
    return mlflow.pyfunc.load_model(str(package)).predict(example, params=params)


@pytest.mark.parametrize(
    ("protocol", "channel"),
    [("http", True), ("grpc", False), ("grpc", True)],
    ids=["http-mlflow_params", "grpc", "grpc-mlflow_params"],
)
def test_real_triton_answers_like_pyfunc_predict_when_a_17_digit_double_parameter_takes_a_safe_path(
    pytorch_models, protocol, channel
):
    server, *_ = pytorch_models
    params = {"threshold": 5 / 11}

    answer = infer_gate(server, protocol, {"mlflow_params": json.dumps(params)} if channel else params)

    expected = gate_predict(pytorch_models, params)
    assert expected[0, 0] == 1.0  # 5/11 >= 5/11
    np.testing.assert_array_equal(answer, expected)


def test_real_triton_http_json_reads_a_17_digit_double_parameter_as_its_neighbour_as_the_docs_say(pytorch_models):
    server, *_ = pytorch_models

    answer = infer_gate(server, "http", {"threshold": 5 / 11})

    assert triton_json_double(repr(5 / 11)) == 0.4545454545454546
    np.testing.assert_array_equal(answer, gate_predict(pytorch_models, {"threshold": 0.4545454545454546}))
    assert answer[0, 0] == 0.0  # what pyfunc.predict answers 1.0 for: why the docs send such doubles another way


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_real_triton_answers_like_pyfunc_predict_when_a_string_parameter_holding_u0000_travels_in_mlflow_params(
    pytorch_models, protocol
):
    server, *_ = pytorch_models
    params = {"tag": "ab\x00cd"}

    answer = infer_gate(server, protocol, {"mlflow_params": json.dumps(params)})

    np.testing.assert_array_equal(answer, gate_predict(pytorch_models, params))
    np.testing.assert_array_equal(answer, [[0.0 + 1189], [1.0 + 1189]])  # x >= 0.5; 97 + 2*98 + 3*0 + 4*99 + 5*100


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_real_triton_cuts_a_plain_string_parameter_at_u0000_as_the_docs_say(pytorch_models, protocol):
    server, *_ = pytorch_models

    answer = infer_gate(server, protocol, {"tag": "ab\x00cd"})

    np.testing.assert_array_equal(answer, gate_predict(pytorch_models, {"tag": "ab"}))


def test_real_triton_answers_the_shipped_request_with_its_mlflow_params_like_the_check_oracle(pytorch_models):
    server, repository, examples = pytorch_models
    package, example = examples["gate"]

    outputs, form = send_shipped_request(server.url, repository / "gate")

    assert form == "binary"  # x holds 5/11, which Triton's JSON reader would change too
    expected = mlflow.pyfunc.load_model(str(package)).predict(example, params=tiny_models.gate_example()[1])
    np.testing.assert_array_equal(outputs["output_0"], expected)
    np.testing.assert_array_equal(outputs["output_0"], [[(1 + 1189) * 3.0], [(1 + 1189) * 3.0]])


def post_raw_gate(server, parameters_text):
    """POST the gate a JSON body whose ``parameters`` object is ``parameters_text`` as written."""
    inputs = json.dumps([{"name": "input_0", "datatype": "FP64", "shape": [1, 1], "data": [0.25]}])
    body = f'{{"inputs": {inputs}, "parameters": {parameters_text}}}'.encode()
    connection = http.client.HTTPConnection("127.0.0.1", server.http_port, timeout=60)
    try:
        connection.request("POST", "/v2/models/gate/infer", body=body, headers={"Content-Type": "application/json"})
        response = connection.getresponse()
        return response.status, json.loads(response.read())
    finally:
        connection.close()


def test_real_triton_answers_400_naming_the_key_when_a_json_request_repeats_a_parameter(pytorch_models):
    """Triton passes the first value twice; MLflow's scoring server would apply the last."""
    server, *_ = pytorch_models

    status, body = post_raw_gate(server, '{"count": 2, "count": 3}')

    assert status == 400, body
    assert body["error"] == (
        "Request parameter(s) `count` given more than once; Triton passes the first value where MLflow's scoring "
        "server keeps the last: send each parameter once"
    )


@pytest.mark.parametrize("sent", [str(2**63), str(-(2**63) - 1), str(10**30)])
def test_real_triton_answers_400_saying_beyond_int64_when_a_long_parameter_is_too_big_for_it(pytorch_models, sent):
    server, *_ = pytorch_models

    status, body = post_raw_gate(server, f'{{"count": {sent}}}')

    assert status == 400, body
    assert body["error"].startswith(
        "Request parameter `count` must be a long, got a number beyond the int64 range "
        "-9223372036854775808..9223372036854775807 (Triton's HTTP front end passes an integer beyond it as a double)"
    )


def test_real_triton_names_the_u0000_cut_when_the_json_text_of_a_parameter_loses_its_end(pytorch_models):
    server, *_ = pytorch_models

    status, body = post_raw_gate(server, json.dumps({"mlflow_params": '{"tag": "a\x00b"}'}))

    assert status == 400, body
    assert body["error"].startswith(
        "Request parameter `mlflow_params` must be the JSON text of the params object; the text is not valid JSON: "
        "it ends before its JSON value does (Triton cuts a string parameter at its first U+0000 character"
    )
