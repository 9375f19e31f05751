"""The exported Python-backend ``1/model.py``: dynamic batches concatenated, run once, split back; errors per request.

Driven through the fake ``triton_python_backend_utils`` over a small hand-built
graph (``y = 2 * x`` and the text echoed back), so every case is exact.
"""

import ast
import json
import shutil

import numpy as np
import pytest
from onnx import TensorProto, helper

from mlflow_triton.export import _config, _export, _graph, _parity
from mlflow_triton.export._tensors import ExportedTensor
from tests.support import fake_pb_utils
from tests.support.export_models import drive_exported

INPUTS = (
    ExportedTensor("x", None, None, "TYPE_FP32", (-1, 2), (2,), row_axis=True),  # config reshape [1, 2]
    ExportedTensor("text", None, "text", "TYPE_STRING", (-1,), (1,)),
)
OUTPUTS = (
    ExportedTensor("y", None, None, "TYPE_FP32", (-1, 2), (2,)),
    ExportedTensor("text_out", None, None, "TYPE_STRING", (-1,), (1,)),
)


@pytest.fixture
def directory(tmp_path):
    graph = helper.make_graph(
        [helper.make_node("Mul", ["x", "two"], ["y"]), helper.make_node("Identity", ["text"], ["text_out"])],
        "doubler",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 2]),
            helper.make_tensor_value_info("text", TensorProto.STRING, ["batch", 1]),
        ],
        [
            helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 2]),
            helper.make_tensor_value_info("text_out", TensorProto.STRING, ["batch", 1]),
        ],
        initializer=[helper.make_tensor("two", TensorProto.FLOAT, [], [2.0])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    _graph.add_row_axis(model, "x")  # as the export serves a [batch, 2] input: [batch, 1, 2], squeezed
    directory = tmp_path / "doubler_onnx"
    (directory / "1").mkdir(parents=True)
    (directory / "1" / "model.onnx").write_bytes(model.SerializeToString())
    config = _config.build_export_config("doubler_onnx", INPUTS, OUTPUTS, backend="python", max_batch_size=8)
    (directory / "config.pbtxt").write_text(_config.render_config(config))
    shutil.copyfile(_export.MODEL_PY, directory / "1" / "model.py")
    return directory


def _request(rows, start=0.0, text=None):
    """The arrays Triton hands model.py for a request of ``rows`` rows: ``x`` reshaped to [rows, 1, 2]."""
    x = np.arange(start, start + 2 * rows, dtype=np.float32).reshape(rows, 1, 2)
    words = text or [f"w{start + i}".encode() for i in range(rows)]
    return {"x": x, "text": np.array(words, dtype=object).reshape(-1, 1)}


def test_model_py_answers_each_request_with_its_own_rows_when_requests_are_batched(directory):
    requests = [_request(1, 0), _request(3, 10), _request(2, 100)]

    responses = drive_exported(directory, requests)

    for request, response in zip(requests, responses):
        outputs = fake_pb_utils.outputs_of(response)
        np.testing.assert_array_equal(outputs["y"], request["x"][:, 0] * 2)
        assert outputs["text_out"].tolist() == request["text"].tolist()
        assert all(isinstance(v, bytes) for v in outputs["text_out"].ravel())


def test_model_py_rejects_only_the_request_when_its_inputs_have_different_row_counts(directory):
    bad = {"x": np.zeros((2, 1, 2), np.float32), "text": np.array([[b"a"]], dtype=object)}

    good_before, rejected, good_after = drive_exported(directory, [_request(1, 0), bad, _request(2, 5)])

    assert rejected.has_error()
    assert rejected.error().code() == fake_pb_utils.TritonError.INVALID_ARG
    assert rejected.error().message() == (
        "Input tensors must have the same number of rows (batch size); got x: 2, text: 1"
    )
    np.testing.assert_array_equal(fake_pb_utils.outputs_of(good_before)["y"], _request(1, 0)["x"][:, 0] * 2)
    np.testing.assert_array_equal(fake_pb_utils.outputs_of(good_after)["y"], _request(2, 5)["x"][:, 0] * 2)


@pytest.mark.parametrize(
    ("claimed", "tensor"),
    [
        # binary [0, 2] carrying one row's bytes: reshape [1, 2] hands it over as [1, 2], one row for the backend
        ({"x": np.zeros((1, 2), np.float32), "text": np.array([b"a"], dtype=object)}, "x"),
        # binary [0, 1] of BYTES carrying one element: dims [1] without reshape hand it over as [1]
        ({"x": np.zeros((1, 1, 2), np.float32), "text": np.array([b"a"], dtype=object)}, "text"),
    ],
    ids=["matrix", "column"],
)
def test_model_py_rejects_only_the_request_when_it_claims_0_rows_but_carries_a_rows_bytes(directory, claimed, tensor):
    good_before, rejected, good_after = drive_exported(
        directory,
        [_request(2, 0), claimed, _request(1, 7)],
        handed={0, 1, 2},  # as Triton hands them
    )

    assert rejected.error().code() == fake_pb_utils.TritonError.INVALID_ARG
    assert rejected.error().message() == (
        f"Input tensor `{tensor}` has 0 rows (its first dimension is 0): send at least one row"
    )
    np.testing.assert_array_equal(fake_pb_utils.outputs_of(good_before)["y"], _request(2, 0)["x"][:, 0] * 2)
    np.testing.assert_array_equal(fake_pb_utils.outputs_of(good_after)["y"], _request(1, 7)["x"][:, 0] * 2)


def test_model_py_rejects_only_the_request_when_its_text_is_not_utf8(directory):
    bad = _request(2, 0, text=[b"ok", b"\xff\xfe"])

    rejected, good = drive_exported(directory, [bad, _request(1, 3)])

    assert rejected.error().message() == "Input tensor `text`: element 1 is not valid UTF-8 text (invalid start byte)"
    assert rejected.error().code() == fake_pb_utils.TritonError.INVALID_ARG
    assert fake_pb_utils.outputs_of(good)["text_out"].tolist() == [[b"w3"]]


def test_model_py_reruns_requests_one_by_one_when_the_batch_run_fails(directory, monkeypatch):
    module = fake_pb_utils.load_model_py(directory / "1" / "model.py", name="failing_run")
    model = module.TritonPythonModel()
    model.initialize(
        {"model_config": json.dumps(_config_dict(directory)), "model_repository": str(directory), "model_version": "1"}
    )
    run = model.session.run

    def run_unless_negative(names, feeds):
        if (feeds["x"] < 0).any():
            raise RuntimeError("negative input")
        return run(names, feeds)

    model.session = type("Session", (), {"run": staticmethod(run_unless_negative)})()
    bad = _request(1, -5)

    good, rejected = model.execute([fake_pb_utils.request_from_arrays(r) for r in (_request(2, 1), bad)])

    np.testing.assert_array_equal(fake_pb_utils.outputs_of(good)["y"], _request(2, 1)["x"][:, 0] * 2)
    assert rejected.error().message() == "onnxruntime failed: RuntimeError: negative input"
    assert rejected.error().code() == fake_pb_utils.TritonError.INTERNAL


def test_model_py_fails_initialization_when_config_and_graph_disagree(directory):
    config = _config_dict(directory)
    config["input"][0]["name"] = "renamed"

    with pytest.raises(RuntimeError, match=r"config.pbtxt and model.onnx disagree: config \['renamed', 'text'\]"):
        _initialized(directory, config, name="disagreeing")


def test_model_py_imports_only_numpy_onnxruntime_and_the_backend_utils_when_parsed():
    tree = ast.parse(_export.MODEL_PY.read_text())
    imported = {
        alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names
    }
    imported |= {node.module.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}

    assert imported == {"json", "pathlib", "numpy", "onnxruntime", "triton_python_backend_utils"}


def _config_dict(directory):
    from google.protobuf import json_format

    from tests.support.export_models import read_config

    return json_format.MessageToDict(read_config(directory), preserving_proto_field_name=True)


def _initialized(directory, config, name):
    module = fake_pb_utils.load_model_py(directory / "1" / "model.py", name=name)
    model = module.TritonPythonModel()
    model.initialize({"model_config": json.dumps(config), "model_repository": str(directory), "model_version": "1"})
    return module, model


def test_model_py_runs_onnxruntime_without_spinning_on_the_threads_the_export_writes_as_parity_runs_it(directory):
    config = _config_dict(directory)
    assert config["parameters"] == {_config.THREADS_PARAMETER: {"string_value": "0"}}

    module, model = _initialized(directory, config, name="written_threads")

    served = model.session.get_session_options()
    proven = _parity.session((directory / "1" / "model.onnx").read_bytes()).get_session_options()
    assert module.THREADS_PARAMETER == _config.THREADS_PARAMETER
    for options in (served, proven):
        assert (options.intra_op_num_threads, options.inter_op_num_threads) == (_config.SERVED_THREADS, 1)
        assert options.get_session_config_entry("session.intra_op.allow_spinning") == "0"


def test_model_py_runs_onnxruntime_on_its_default_pool_without_spinning_when_the_config_names_no_threads(directory):
    config = _config_dict(directory)
    del config["parameters"]  # an export made before the parameter

    _, model = _initialized(directory, config, name="no_threads")

    options = model.session.get_session_options()
    assert options.intra_op_num_threads == 0
    assert options.get_session_config_entry("session.intra_op.allow_spinning") == "0"


@pytest.mark.parametrize("threads", ["3", "1"])
def test_model_py_runs_onnxruntime_on_the_thread_count_the_config_names(directory, threads):
    config = _config_dict(directory)
    config["parameters"][_config.THREADS_PARAMETER] = {"string_value": threads}

    _, model = _initialized(directory, config, name=f"threads_{threads}")

    assert model.session.get_session_options().intra_op_num_threads == int(threads)
    np.testing.assert_array_equal(
        fake_pb_utils.outputs_of(model.execute([fake_pb_utils.request_from_arrays(_request(2))])[0])["y"],
        _request(2)["x"][:, 0] * 2,
    )


def test_model_py_fails_initialization_naming_the_parameter_when_the_thread_count_is_not_a_number(directory):
    config = _config_dict(directory)
    config["parameters"][_config.THREADS_PARAMETER] = {"string_value": "two"}

    with pytest.raises(
        RuntimeError, match="config parameter intra_op_thread_count must be a whole number of threads, got 'two'"
    ):
        _initialized(directory, config, name="bad_threads")
