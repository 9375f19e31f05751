"""examples/transformers_example.py: the runner's entry point logs a servable offline text pipeline."""

import inspect

import mlflow

from examples import transformers_example
from mlflow_triton import triton
from tests.support import tiny_models


def test_log_example_keeps_the_signature_the_example_runner_calls():
    parameters = inspect.signature(transformers_example.log_example).parameters

    assert list(parameters)[:2] == ["tracking_uri", "registered_model_name"]
    assert parameters["device"].default == "cpu"


def test_log_example_registers_a_pipeline_whose_repository_serves_its_request_when_logged(tmp_path):
    with tiny_models.sqlite_tracking(tmp_path):
        info = transformers_example.log_example(f"sqlite:///{tmp_path}/mlflow.db", "demo-text-generator")

        repository = triton.load_model(f"models:/demo-text-generator/{info.registered_model_version}")
        served = tiny_models.serve_request(repository)
        prompts = ["hello world", "the model serves text"]
        expected = mlflow.pyfunc.load_model(info.model_uri).predict(prompts)

    assert info.registered_model_version == 1
    assert repository.name == "text_generator"
    assert [text.decode("utf-8") for text in served["output_0"]] == list(expected)
