"""TritonPythonModel.initialize: the contract read from Triton's model config, and device placement.

The runtime is driven through the fake ``triton_python_backend_utils``; MLflow's loader is
replaced, so these tests show what initialization checks before any weights are loaded.
"""

import json
import os
import re
import zipfile

import mlflow.pyfunc
import numpy as np
import pytest
from google.protobuf import json_format
from mlflow.models import ModelSignature
from mlflow.types import ColSpec, DataType, Schema, TensorSpec

from mlflow_triton._schema import layout_from_signature
from mlflow_triton.repository.config import build_config
from mlflow_triton.runtime.loading import DEVICE_VARIABLE
from mlflow_triton.shared_contract import CONTRACT_PARAMETER, MlflowTritonError
from tests.support import fake_pb_utils

SIGNATURE = ModelSignature(
    inputs=Schema([ColSpec(DataType.double, "age"), ColSpec(DataType.string, "city"), ColSpec(DataType.long, "n")]),
    outputs=Schema([TensorSpec(np.dtype("int64"), (-1,))]),
)


@pytest.fixture(scope="module")
def model_class():
    fake_pb_utils.install()
    from mlflow_triton.runtime.triton_model import TritonPythonModel

    return TritonPythonModel


@pytest.fixture
def loads(monkeypatch):
    """Replaces MLflow's loader; records the URI and the device variable seen while loading."""
    monkeypatch.delenv(DEVICE_VARIABLE, raising=False)
    calls = []

    def fake_load_model(uri):
        calls.append({"uri": uri, "device": os.environ.get(DEVICE_VARIABLE)})
        return object()

    monkeypatch.setattr(mlflow.pyfunc, "load_model", fake_load_model)
    return calls


def model_config(flavor="sklearn", signature=SIGNATURE):
    """The JSON model config as ``json_format`` writes it (dims as strings, zero fields omitted)."""
    config = build_config("model", layout_from_signature(signature, flavor))
    return json.loads(json_format.MessageToJson(config, preserving_proto_field_name=True))


def initialize_args(config, kind="CPU", device_id="0", repository="/models/model", version="1"):
    return {
        "model_config": json.dumps(config),
        "model_repository": repository,
        "model_version": version,
        "model_instance_kind": kind,
        "model_instance_device_id": device_id,
        "model_name": "model",
    }


def edit_contract(config, edit):
    contract = json.loads(config["parameters"][CONTRACT_PARAMETER]["string_value"])
    edit(contract)
    config["parameters"][CONTRACT_PARAMETER]["string_value"] = json.dumps(contract)


def unsupported_version(config):
    edit_contract(config, lambda contract: contract.update(version=7))


def batching(config):
    config["max_batch_size"] = 8


def extra_config_input(config):
    config["input"].append({"name": "extra", "data_type": "TYPE_FP32", "dims": ["-1"]})


def extra_config_output(config):
    config["output"].append({"name": "scores", "data_type": "TYPE_FP32", "dims": ["-1"]})


def undeclared_input(config):
    config["input"] = [entry for entry in config["input"] if entry["name"] != "city"]


def undeclared_output(config):
    config["output"] = []


def no_contract_parameter(config):
    del config["parameters"][CONTRACT_PARAMETER]


def no_parameters(config):
    del config["parameters"]


def contract_not_json(config):
    config["parameters"][CONTRACT_PARAMETER]["string_value"] = "{not json"


def contract_without_version(config):
    edit_contract(config, lambda contract: contract.pop("version"))


def bytes_tensor_without_content(config):
    config["input"][0]["data_type"] = "TYPE_STRING"


def content_on_numeric_tensor(config):
    config["input"][1]["data_type"] = "TYPE_FP32"


def unsupported_datatype(config):
    config["input"][0]["data_type"] = "TYPE_BF16"


def column_of_rank_two(config):
    config["input"][0]["dims"] = ["-1", "2"]


BROKEN_CONFIGS = {
    unsupported_version: r"Mapping version 7 is not supported; supported: 1, 2, 3, 4, 5, 6",
    contract_without_version: r"Contract has no 'version'",
    batching: r"max_batch_size must be 0 .*got 8",
    extra_config_input: r"Config input tensor\(s\) extra have no entry in 'mlflow_contract'",
    extra_config_output: r"Config output tensor\(s\) scores have no entry in 'mlflow_contract'",
    undeclared_input: r"'mlflow_contract' maps input tensor\(s\) city that the config does not declare",
    undeclared_output: r"'mlflow_contract' maps output tensor\(s\) output_0 that the config does not declare",
    no_contract_parameter: r"Model config has no 'mlflow_contract' parameter",
    no_parameters: r"Model config has no 'mlflow_contract' parameter",
    contract_not_json: r"Parameter 'mlflow_contract' is not valid JSON",
    bytes_tensor_without_content: r"BYTES tensor `age` needs content text, binary or json",
    content_on_numeric_tensor: r"Tensor `city` has content 'text' but datatype TYPE_FP32",
    unsupported_datatype: r"Tensor `age`: datatype TYPE_BF16 is not supported",
    column_of_rank_two: r"Column tensor\(s\) age must have rank one",
}


@pytest.mark.parametrize("break_config", BROKEN_CONFIGS, ids=lambda break_config: break_config.__name__)
def test_initialize_fails_before_loading_when_config_and_mapping_disagree(model_class, loads, break_config):
    config = model_config()
    break_config(config)

    with pytest.raises(MlflowTritonError, match=BROKEN_CONFIGS[break_config]):
        model_class().initialize(initialize_args(config))

    assert loads == []


def test_initialize_accepts_integer_dims_when_triton_passes_them(model_class, loads):
    config = model_config()
    for entry in config["input"] + config["output"]:
        entry["dims"] = [int(d) for d in entry["dims"]]
    config["max_batch_size"] = 0

    model = model_class()
    model.initialize(initialize_args(config))

    assert [spec.dims for spec in model.inputs.specs] == [(-1,), (-1,), (-1,)]
    assert [spec.dims for spec in model.outputs.specs] == [(-1,)]


def test_initialize_loads_the_artifact_of_its_version_when_config_is_valid(model_class, loads):
    model = model_class()
    model.initialize(initialize_args(model_config(), repository="/models/iris", version=3))

    assert [call["uri"] for call in loads] == [os.path.join("/models/iris", "3", "artifact")]


@pytest.mark.parametrize(
    ("flavor", "kind", "device_id", "device", "setting"),
    [
        ("pytorch", "CPU", "0", "cpu", "cpu"),
        ("pytorch", "GPU", "1", "cuda:1", "cuda:1"),
        ("pytorch", "GPU", 1, "cuda:1", "cuda:1"),
        ("transformers", "CPU", "0", "cpu", "-1"),
        ("transformers", "GPU", "1", "cuda:1", "1"),
        ("sklearn", "CPU", "0", "cpu", "cpu"),
    ],
)
def test_initialize_loads_on_the_assigned_device_when_triton_names_the_instance(
    model_class, loads, flavor, kind, device_id, device, setting
):
    model = model_class()
    model.initialize(initialize_args(model_config(flavor), kind=kind, device_id=device_id))

    assert model.device == device
    assert [call["device"] for call in loads] == [setting]
    assert DEVICE_VARIABLE not in os.environ


@pytest.fixture
def failing_loads(monkeypatch):
    """MLflow's loader raising as it does for a damaged model file."""

    def fake_load_model(uri):
        raise zipfile.BadZipFile("File is not a zip file")

    monkeypatch.setattr(mlflow.pyfunc, "load_model", fake_load_model)


def write_artifact(repository, files):
    artifact = repository / "1" / "artifact"
    artifact.mkdir(parents=True)
    for name in files:
        (artifact / name).write_text("")
    return artifact


@pytest.mark.parametrize(
    ("files", "message"),
    [
        (
            None,
            r"The MLflow model directory {artifact} is missing: a generated Triton model directory carries a "
            r"complete copy of the logged model in <version>/artifact/; fetch the directory again with "
            r"mlflow_triton\.triton\.load_model\(model_uri, dst_path=\.\.\.\) and serve that copy$",
        ),
        ([], r"The MLflow model directory {artifact} has no MLmodel file; fetch the directory again"),
        (
            ["MLmodel"],
            r"MLflow could not load the sklearn model in {artifact}: BadZipFile: File is not a zip file\. "
            r"Its files may be damaged or incomplete \(fetch the directory again .*\), or the serving "
            r"environment may lack a package or version the model needs \(compare it with "
            r"requirements\.txt\)$",
        ),
    ],
    ids=["artifact-missing", "mlmodel-missing", "model-file-damaged"],
)
def test_initialize_fails_naming_the_artifact_and_what_to_do_when_mlflow_cannot_load_it(
    model_class, failing_loads, tmp_path, files, message
):
    from mlflow_triton.runtime.triton_model import ModelLoadError

    if files is not None:
        write_artifact(tmp_path, files)
    artifact = os.path.join(tmp_path, "1", "artifact")

    with pytest.raises(ModelLoadError, match=message.format(artifact=re.escape(artifact))):
        model_class().initialize(initialize_args(model_config(), repository=str(tmp_path)))


def test_initialize_keeps_the_load_error_on_one_bounded_line_when_mlflow_says_a_lot(model_class, monkeypatch, tmp_path):
    from mlflow_triton.runtime.triton_model import MAX_LOAD_REASON_LENGTH, ModelLoadError

    def fake_load_model(uri):
        raise ValueError("line one\nline two " + "x" * 5000)

    monkeypatch.setattr(mlflow.pyfunc, "load_model", fake_load_model)
    write_artifact(tmp_path, ["MLmodel"])

    with pytest.raises(ModelLoadError) as raised:
        model_class().initialize(initialize_args(model_config(), repository=str(tmp_path)))

    message = str(raised.value)
    assert "\n" not in message and "ValueError: line one line two xxx" in message
    assert len(message) < MAX_LOAD_REASON_LENGTH + 600
    assert isinstance(raised.value.__cause__, ValueError)
