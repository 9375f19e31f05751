"""examples/pytorch_example.py: the runner's entry point logs a servable custom-architecture model."""

import inspect
import json

import mlflow

from examples import pytorch_example
from mlflow_triton import triton
from tests.support import tiny_models


def test_log_example_keeps_the_signature_the_example_runner_calls():
    parameters = inspect.signature(pytorch_example.log_example).parameters

    assert list(parameters)[:2] == ["tracking_uri", "registered_model_name"]
    assert parameters["device"].default == "cpu"


def test_log_example_registers_a_model_whose_repository_serves_its_request_when_logged(tmp_path):
    with tiny_models.sqlite_tracking(tmp_path):
        info = pytorch_example.log_example(f"sqlite:///{tmp_path}/mlflow.db", "demo-network")

        repository = triton.load_model(f"models:/demo-network/{info.registered_model_version}")
        served = tiny_models.serve_request(repository)
        expected = mlflow.pyfunc.load_model(info.model_uri).predict(pytorch_example.example_input())

    assert info.registered_model_version == 1
    assert served["output_0"].tolist() == expected.tolist()
    report = json.loads((repository / "1" / "artifact" / "architecture.json").read_text())
    assert report["model_class"] == {"module": "pytorch_architecture.network", "qualname": "TabularNet"}
    assert report["files"]["python"] == [
        "code/pytorch_architecture/__init__.py",
        "code/pytorch_architecture/network.py",
    ]
