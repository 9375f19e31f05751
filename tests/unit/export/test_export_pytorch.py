"""export_onnx on PyTorch and Transformers models: the example network exported; refusals write nothing."""

import re

import mlflow.pyfunc
import numpy as np
import pytest
import torch
from mlflow.models import ModelSignature
from mlflow.types import Schema, TensorSpec

from examples import pytorch_example
from mlflow_triton import pytorch as mt_pytorch
from mlflow_triton.export import UnsupportedModelError, export_onnx
from tests.support import fake_pb_utils
from tests.support.export_models import (
    config_graph_mismatches,
    digest,
    drive_exported,
    read_config,
    read_handoff,
    save_pytorch_example,
    split_rows,
)
from tests.support.shipped_request import arrays_from_request_json


class Zeta(torch.nn.Module):
    """A module whose forward uses an op the ONNX exporter has no translation for."""

    def forward(self, x):
        return torch.special.zeta(x + 2.0, x + 2.0)


@pytest.fixture(scope="module")
def logged(tmp_path_factory):
    return save_pytorch_example(tmp_path_factory.mktemp("logged") / "network")


@pytest.fixture(scope="module")
def exported(logged, tmp_path_factory):
    before = digest(logged)
    out = tmp_path_factory.mktemp("exports")
    directories = {
        backend: export_onnx(str(logged), out / backend, backend=backend, max_batch_size=16, zero_row_guard=False)
        for backend in ("onnxruntime", "python")
    }
    return directories, before


def test_export_onnx_writes_batching_config_without_batch_axis_when_network_is_exported(exported):
    config = read_config(exported[0]["onnxruntime"])

    assert (config.name, config.platform, config.max_batch_size) == ("network_onnx", "onnxruntime_onnx", 16)
    assert [(t.name, list(t.dims)) for t in config.input] == [("input_0", [4])]
    assert [(t.name, list(t.dims)) for t in config.output] == [("output_0", [3])]
    assert config.HasField("dynamic_batching")


@pytest.mark.parametrize("backend", ["onnxruntime", "python"])
def test_export_onnx_writes_config_matching_the_onnx_graph_when_network_is_exported(exported, backend):
    assert config_graph_mismatches(exported[0][backend]) == []


def test_export_onnx_records_dynamic_batch_axis_and_exporter_when_network_is_exported(exported):
    handoff = read_handoff(exported[0]["python"])

    assert handoff["converter"]["name"] == "torch.onnx.export"
    assert handoff["converter"]["dynamic_axes"] == {"input_0": [0]}
    assert handoff["parity"]["passed"] is True
    assert handoff["parity"]["largest_differences"]["output_0"] <= 1e-5
    assert handoff["source"]["pyfunc_predict_fn"] is None


def test_exported_model_py_answers_like_pyfunc_when_requests_are_batched_together(logged, exported):
    directory = exported[0]["python"]
    arrays = arrays_from_request_json(directory / "request.json")
    expected = mlflow.pyfunc.load_model(str(logged)).predict(pytorch_example.example_input())

    responses = drive_exported(directory, split_rows(arrays, [2, 1]))

    answers = [fake_pb_utils.outputs_of(r)["output_0"] for r in responses]
    assert [a.shape for a in answers] == [(2, 3), (1, 3)]
    np.testing.assert_allclose(np.concatenate(answers), expected, rtol=1e-4, atol=1e-5)


def test_export_onnx_leaves_logged_model_unchanged_when_exported(logged, exported):
    assert digest(logged) == exported[1]


def test_export_onnx_exports_variable_trailing_axes_when_the_signature_declares_them(tmp_path):
    model = torch.nn.Sequential(torch.nn.Linear(1, 2), torch.nn.Softmax(dim=-1)).eval()
    signature = ModelSignature(
        inputs=Schema([TensorSpec(np.dtype("float32"), (-1, -1, 1))]),
        outputs=Schema([TensorSpec(np.dtype("float32"), (-1, -1, 2))]),
    )
    example = np.linspace(0, 1, 6, dtype=np.float32).reshape(2, 3, 1)
    mt_pytorch.save_model(model, tmp_path / "logged", input_example=example, signature=signature)

    directory = export_onnx(str(tmp_path / "logged"), tmp_path / "out", backend="python", zero_row_guard=False)

    assert [list(t.dims) for t in read_config(directory).input] == [[-1, 1]]
    assert config_graph_mismatches(directory) == []
    assert read_handoff(directory)["converter"]["dynamic_axes"] == {"input_0": [0, 1]}
    [response] = drive_exported(directory, [{"input_0": np.ones((1, 5, 1), dtype=np.float32)}])
    assert fake_pb_utils.outputs_of(response)["output_0"].shape == (1, 5, 2)


def test_export_onnx_refuses_naming_the_op_when_the_exporter_has_no_translation(tmp_path):
    example = np.linspace(0, 1, 8, dtype=np.float32).reshape(2, 4)
    mt_pytorch.save_model(Zeta().eval(), tmp_path / "logged", input_example=example)

    with pytest.raises(
        UnsupportedModelError,
        match=r"torch\.onnx\.export \(torch .*\) could not export Zeta at op "
        r"prims\.zeta: .*What to do: rewrite that part of forward\(\)",
    ):
        export_onnx(str(tmp_path / "logged"), tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_export_onnx_refuses_when_the_logged_batch_axis_is_fixed(tmp_path):
    signature = ModelSignature(
        inputs=Schema([TensorSpec(np.dtype("float32"), (3, 4))]),
        outputs=Schema([TensorSpec(np.dtype("float32"), (3, 3))]),
    )
    save_pytorch_example(tmp_path / "logged", signature=signature)

    with pytest.raises(
        UnsupportedModelError,
        match=re.escape(
            "Logged input tensor `input_0` has dims [3, 4]: its first axis is 3, not -1, so Triton cannot batch "
            "requests along it. Re-log the model with a signature whose first axis is -1"
        ),
    ):
        export_onnx(str(tmp_path / "logged"), tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_export_command_summary_names_the_exporter_and_torch_version_when_a_network_is_exported(exported):
    from mlflow_triton.export._command import summary

    directory = exported[0]["python"]

    lines = summary(directory)

    assert lines[0] == f"exported: {directory}"
    assert f"converted with torch.onnx.export {torch.__version__}" in lines[1]
