"""``mlflow_triton.transformers``: MLflow's task interface served through the generated model.py."""

import inspect
import json
import os
import sys
from pathlib import Path

import mlflow
import numpy as np
import pandas as pd
import pytest
from mlflow.models import Model

import mlflow_triton.transformers as mt_transformers
from mlflow_triton import triton
from mlflow_triton._schema import layout_from_signature
from mlflow_triton.errors import InvalidArgumentError
from mlflow_triton.repository.config import read_config
from mlflow_triton.repository.layout import codecs_for
from mlflow_triton.runtime.loading import DEVICE_VARIABLE
from tests.support import tiny_models

EXAMPLE = tiny_models.TEXT_EXAMPLE


@pytest.fixture
def experiment_id(tmp_path):
    with tiny_models.sqlite_tracking(tmp_path) as experiment_id:
        yield experiment_id


@pytest.fixture(scope="module")
def logged_pipelines(tmp_path_factory):
    """The tiny text-generation and text-classification pipelines, each logged once."""
    directory = tmp_path_factory.mktemp("logged_pipelines")
    with tiny_models.sqlite_tracking(directory):
        generation = mt_transformers.log_model(
            tiny_models.shared_text_generation_pipeline(),
            input_example=EXAMPLE,
            name="generator",
            model_config=tiny_models.GENERATION_CONFIG,
            params={"max_new_tokens": 99},
        )
        classification = mt_transformers.log_model(
            tiny_models.shared_text_classification_pipeline(),
            input_example=EXAMPLE,
            name="classifier",
        )
        yield {"text-generation": generation, "text-classification": classification}


def _repository(info):
    return triton.load_model(info.model_uri)


def _as_text(array):
    return [item.decode("utf-8") if isinstance(item, bytes) else item for item in array.tolist()]


def _assert_nothing_logged(experiment_id, directory):
    assert mlflow.search_logged_models(experiment_ids=[experiment_id], output_format="list") == []
    assert mlflow.MlflowClient().search_registered_models() == []
    assert [p for p in (directory / "artifacts").rglob("*") if p.is_file()] == []


# --- public surface ----------------------------------------------------------------------------


def test_module_exports_its_public_surface_when_imported():
    assert sorted(mt_transformers.__all__) == ["FLAVOR_NAME", "TRITON_FLAVOR_NAME", "log_model", "save_model"]
    assert (mt_transformers.FLAVOR_NAME, mt_transformers.TRITON_FLAVOR_NAME) == ("transformers", "triton")


@pytest.mark.parametrize("function", [mt_transformers.log_model, mt_transformers.save_model])
def test_wrapper_takes_the_model_positionally_and_everything_else_by_keyword_when_called(function):
    parameters = list(inspect.signature(function).parameters.values())

    assert parameters[0].name == "transformers_model"
    assert parameters[0].kind == inspect.Parameter.POSITIONAL_OR_KEYWORD
    keyword_only = [p.name for p in parameters if p.kind == inspect.Parameter.KEYWORD_ONLY]
    assert {"input_example", "device", "signature", "validate_saved_model", "architecture_init_kwargs"} <= set(
        keyword_only
    )
    assert parameters[-1].kind == inspect.Parameter.VAR_KEYWORD


def test_save_model_names_the_extra_to_install_when_transformers_is_missing(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "transformers", None)

    with pytest.raises(ImportError, match=r"pip install 'mlflow-triton\[transformers\]'"):
        mt_transformers.save_model(object(), tmp_path / "package", input_example=EXAMPLE)


# --- the MLflow task interface, served ----------------------------------------------------------


def test_generated_model_py_answers_like_the_logged_pyfunc_when_text_generation_is_served(logged_pipelines):
    info = logged_pipelines["text-generation"]

    served = tiny_models.serve_request(_repository(info))

    expected = mlflow.pyfunc.load_model(info.model_uri).predict(EXAMPLE)
    assert list(served) == ["output_0"]
    assert _as_text(served["output_0"]) == list(expected)
    assert all(text.startswith(prompt) for text, prompt in zip(expected, EXAMPLE))


def test_generated_model_py_answers_like_the_logged_pyfunc_when_text_classification_is_served(logged_pipelines):
    info = logged_pipelines["text-classification"]

    served = tiny_models.serve_request(_repository(info))

    expected = mlflow.pyfunc.load_model(info.model_uri).predict(EXAMPLE)
    assert sorted(served) == ["label", "score"]
    assert _as_text(served["label"]) == expected["label"].tolist()
    assert set(expected["label"]) <= set(tiny_models.LABELS)
    np.testing.assert_array_equal(served["score"], expected["score"].to_numpy())


@pytest.mark.parametrize("task", ["text-generation", "text-classification"])
def test_logged_pyfunc_predicts_like_the_in_memory_pipeline_when_reloaded(logged_pipelines, task):
    info = logged_pipelines[task]
    pipeline = {
        "text-generation": tiny_models.shared_text_generation_pipeline,
        "text-classification": tiny_models.shared_text_classification_pipeline,
    }[task]()
    options = {"model_config": tiny_models.GENERATION_CONFIG} if task == "text-generation" else {}
    in_memory = mt_transformers._FRAMEWORK.pyfunc_adapter(pipeline, options, Model())

    reloaded = mlflow.pyfunc.load_model(info.model_uri).predict(EXAMPLE)

    expected = in_memory.predict(EXAMPLE)
    if task == "text-generation":
        assert list(reloaded) == list(expected)
    else:
        pd.testing.assert_frame_equal(reloaded, expected)


@pytest.mark.parametrize(
    ("task", "inputs", "outputs"),
    [
        ("text-generation", [{"type": "string", "required": True}], [{"type": "string", "required": True}]),
        (
            "text-classification",
            [{"type": "string", "required": True}],
            [
                {"type": "string", "name": "label", "required": True},
                {"type": "double", "name": "score", "required": True},
            ],
        ),
    ],
)
def test_log_model_infers_mlflow_task_signature_when_no_signature_is_given(logged_pipelines, task, inputs, outputs):
    signature = Model.load(logged_pipelines[task].model_uri).signature

    assert signature.inputs.to_dict() == inputs
    assert signature.outputs.to_dict() == outputs


@pytest.mark.parametrize("task", ["text-generation", "text-classification"])
def test_runtime_decoding_of_the_unnamed_text_column_is_accepted_by_the_pyfunc_when_predicting(logged_pipelines, task):
    info = logged_pipelines[task]
    repository = _repository(info)
    _, contract = read_config(repository / "config.pbtxt")
    input_codec, _ = codecs_for(layout_from_signature(Model.load(info.model_uri).signature, contract.flavor))
    pyfunc = mlflow.pyfunc.load_model(info.model_uri)

    decoded = input_codec.from_tensors(tiny_models.request_arrays(repository))

    assert list(decoded.columns) == [0]
    from_frame, from_list = pyfunc.predict(decoded), pyfunc.predict(EXAMPLE)
    if isinstance(from_list, pd.DataFrame):
        pd.testing.assert_frame_equal(from_frame, from_list)
    else:
        assert list(from_frame) == list(from_list)


# --- native packaging: tokenizer, configuration, model_config, requirements, params -----------


def test_log_model_preserves_tokenizer_and_configuration_when_saved(logged_pipelines):
    artifact = _repository(logged_pipelines["text-generation"]) / "1" / "artifact"

    for relative in (
        "model/config.json",
        "model/generation_config.json",
        "components/tokenizer/tokenizer.json",
        "components/tokenizer/tokenizer_config.json",
    ):
        assert (artifact / relative).is_file(), relative


def test_log_model_forwards_model_config_when_saved(logged_pipelines):
    flavors = Model.load(logged_pipelines["text-generation"].model_uri).flavors

    assert flavors["python_function"]["config"] == tiny_models.GENERATION_CONFIG
    assert flavors["transformers"]["task"] == "text-generation"


def test_log_model_records_params_as_tracking_metadata_only_when_given(logged_pipelines):
    info = logged_pipelines["text-generation"]

    logged = mlflow.get_logged_model(info.model_id)

    assert logged.params == {"max_new_tokens": "99"}
    assert Model.load(info.model_uri).flavors["python_function"]["config"]["max_new_tokens"] == 4
    generated = mlflow.pyfunc.load_model(info.model_uri).predict(EXAMPLE[:1])
    tokenizer = tiny_models.shared_tokenizer()
    new_tokens = len(tokenizer(generated[0])["input_ids"]) - len(tokenizer(EXAMPLE[0])["input_ids"])
    assert new_tokens <= 4


def test_log_model_records_transformers_default_requirements_without_inference_when_none_given(logged_pipelines):
    requirements = (_repository(logged_pipelines["text-classification"]) / "requirements.txt").read_text()

    names = {line.split("==")[0] for line in requirements.splitlines() if line and not line.startswith("#")}
    assert {"transformers", "torch"} <= names
    assert "tokenizers" not in names  # an inferred requirement: MLflow's inference did not run


def test_save_model_skips_mlflow_requirement_inference_when_saving(tmp_path, monkeypatch):
    def no_inference(*args, **kwargs):
        raise AssertionError("MLflow's requirement inference must not run")

    monkeypatch.setattr(mlflow.transformers, "infer_pip_requirements", no_inference)

    mt_transformers.save_model(
        tiny_models.shared_text_classification_pipeline(),
        tmp_path / "package",
        input_example=EXAMPLE,
        extra_pip_requirements=["custom-tokenizer-helper==1.0"],
    )

    requirements = (tmp_path / "package" / "requirements.txt").read_text().splitlines()
    assert "custom-tokenizer-helper==1.0" in requirements
    assert any(line.startswith("transformers==") for line in requirements)


def test_validate_saved_model_reloads_the_pipeline_offline_in_a_clean_process_when_requested(tmp_path):
    mt_transformers.save_model(
        tiny_models.shared_text_generation_pipeline(),
        tmp_path / "package",
        input_example=EXAMPLE,
        model_config=tiny_models.GENERATION_CONFIG,
        triton_model_name="generator",
        validate_saved_model=True,
    )

    report = json.loads((tmp_path / "package/model_repository/generator/validation.json").read_text())
    assert (report["mode"], report["saved_artifact_checked"], report["validation_device"]) == (
        "saved-artifact",
        True,
        "cpu",
    )
    assert report["tensor_mapping"]["outputs"] == {"output_0": [len(EXAMPLE)]}


# --- rejected before anything is written --------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            {"task": "llm/v1/completions"},
            r"task 'llm/v1/completions': .* not a supported task for the text-classification pipeline\. .*"
            r"llm/v1/completions take a text-generation pipeline",
        ),
        ({"save_pretrained": False}, "save_pretrained=False and base_model_path leave the weights outside"),
        ({"artifact_path": "model"}, "artifact_path is not supported; use name="),
    ],
)
def test_log_model_rejects_option_and_logs_nothing_when_it_cannot_be_served(experiment_id, tmp_path, options, message):
    with pytest.raises(InvalidArgumentError, match=message):
        mt_transformers.log_model(tiny_models.shared_text_classification_pipeline(), input_example=EXAMPLE, **options)

    _assert_nothing_logged(experiment_id, tmp_path)


def test_log_model_rejects_model_when_it_is_not_a_pipeline(experiment_id):
    pipeline = tiny_models.shared_text_classification_pipeline()

    with pytest.raises(InvalidArgumentError, match="transformers_model must be a transformers.Pipeline"):
        mt_transformers.log_model({"model": pipeline.model, "tokenizer": pipeline.tokenizer}, input_example=EXAMPLE)


def test_save_model_writes_nothing_when_the_pipeline_model_is_in_training_mode(tmp_path):
    pipeline = tiny_models.fresh_text_classification_pipeline()
    pipeline.model.train()

    with pytest.raises(InvalidArgumentError, match=r"Submodule `bert` of the pipeline's model is in training mode"):
        mt_transformers.save_model(pipeline, tmp_path / "package", input_example=EXAMPLE)

    assert list(tmp_path.iterdir()) == []


# --- GPU target ---------------------------------------------------------------------------------


def test_gpu_repository_declares_kind_gpu_and_asks_the_loader_for_the_assigned_device_index_when_initialized(
    tmp_path, monkeypatch
):
    mt_transformers.save_model(
        tiny_models.shared_text_classification_pipeline(),
        tmp_path / "package",
        input_example=EXAMPLE,
        device="gpu",
        triton_model_name="classifier",
    )
    repository = tmp_path / "package" / "model_repository" / "classifier"

    instance, requested_devices = tiny_models.initialized_on_pretend_gpu(repository, monkeypatch, cpu_setting="-1")

    config, _ = read_config(repository / "config.pbtxt")
    assert [group.kind for group in config.instance_group] == [config.instance_group[0].KIND_GPU]
    assert requested_devices == ["1"]
    assert instance.device == "cuda:1"
    assert DEVICE_VARIABLE not in os.environ
    report = json.loads((repository / "validation.json").read_text())
    assert (report["target_device"], report["validation_device"]) == ("gpu", "cpu")


@pytest.mark.parametrize("task", ["text-classification", "text-generation"])
def test_generated_model_py_answers_like_pyfunc_on_the_text_when_the_example_is_a_single_string(tmp_path, task):
    """#22.4: ``input_example="some text"`` (MLflow's docs and tests) was refused: a str has no rows."""
    from mlflow_triton.local._compare import predict_outputs

    generation = task == "text-generation"
    pipeline = (
        tiny_models.shared_text_generation_pipeline()
        if generation
        else tiny_models.shared_text_classification_pipeline()
    )
    package = tmp_path / "package"
    options = {"model_config": tiny_models.GENERATION_CONFIG} if generation else {}

    mt_transformers.save_model(pipeline, package, input_example="hello world", **options)

    [repository] = (package / "model_repository").iterdir()
    request = json.loads((repository / "request.json").read_text())
    assert [entry["data"] for entry in request["inputs"]] == [["hello world"]]
    expected = predict_outputs(mlflow.pyfunc.load_model(str(package)), "hello world", repository)
    answered = tiny_models.serve_request(repository)
    assert sorted(answered) == sorted(expected)
    for name, array in expected.items():
        np.testing.assert_array_equal(answered[name], array)


# --- MLflow's LLM inference tasks ----------------------------------------------------------------


def test_log_model_logs_an_llm_task_with_the_signature_mlflow_sets_and_optional_generation_fields(
    experiment_id, tmp_path
):
    from mlflow.transformers.llm_inference_utils import infer_signature_from_llm_inference_task

    from tests.support import llm_models

    info = mt_transformers.log_model(
        llm_models.completions_pipeline(),
        task=llm_models.COMPLETIONS,
        input_example={"prompt": "hello"},
        model_config=llm_models.model_config(llm_models.COMPLETIONS),
        pip_requirements=llm_models.pip_requirements(),
    )

    assert info.signature == infer_signature_from_llm_inference_task(llm_models.COMPLETIONS)
    package = Path(mlflow.artifacts.download_artifacts(info.model_uri, dst_path=str(tmp_path / "download")))
    repository = package / "model_repository" / "model"
    config, contract = read_config(repository / "config.pbtxt")
    assert [(e.name, e.optional) for e in config.input] == [
        ("prompt", False),
        ("temperature", True),
        ("max_tokens", True),
        ("stop", True),
        ("n", True),
        ("stream", True),
        ("temperature__missing", True),
        ("stream__missing", True),
    ]
    assert set(tiny_models.request_arrays(repository)) == {"prompt"}
    [answer] = [json.loads(t) for t in tiny_models.serve_request(repository)["choices"].tolist()]
    expected = mlflow.pyfunc.load_model(info.model_uri).predict({"prompt": "hello"})
    assert answer == expected[0]["choices"]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            {"signature": "given"},
            r"signature: MLflow sets the signature of task 'llm/v1/chat' itself and refuses any other",
        ),
        ({"task": "llm/v1/embeddings"}, r"'llm/v1/embeddings' is not a supported task for the text-generation"),
        ({"task": "llm/v2/chat"}, r"task 'llm/v2/chat' is not one of MLflow's LLM inference tasks"),
    ],
)
def test_log_model_refuses_an_llm_task_it_cannot_log_and_logs_nothing(experiment_id, tmp_path, options, message):
    from tests.support import llm_models

    options = {"task": llm_models.CHAT, **options}
    if options.get("signature") == "given":
        options["signature"] = mlflow.models.infer_signature({"messages": "hi"})

    with pytest.raises(InvalidArgumentError, match=message):
        mt_transformers.log_model(
            llm_models.chat_pipeline(), input_example=llm_models.CANONICAL_INPUTS[llm_models.CHAT], **options
        )

    _assert_nothing_logged(experiment_id, tmp_path)


def test_save_model_saves_a_zero_shot_example_as_given_when_the_signature_types_the_labels_as_an_array(tmp_path):
    from mlflow.models import Model

    from tests.support.mlflow_corpus.cases_transformers import zero_shot

    built = zero_shot()
    example = built.log_kwargs["input_example"]

    mt_transformers.save_model(built.model, tmp_path / "package", input_example=example)

    saved = Model.load(str(tmp_path / "package" / "MLmodel"))
    assert saved.signature.inputs.input_dict()["candidate_labels"].type.to_dict()["type"] == "array"
    loaded = saved.load_input_example(str(tmp_path / "package"))
    assert loaded["candidate_labels"] == ["happy", "sad"]  # not MLflow's JSON text, which the Array would refuse
    mlflow.pyfunc.load_model(str(tmp_path / "package")).predict(loaded)  # what check predicts


def test_save_model_requires_pillow_for_an_image_pipeline_when_torchvision_would_not_bring_it(tmp_path):
    # Without it the serving environment had no PIL and Triton could not load the image processor (make corpus)
    import importlib.util

    from tests.support.mlflow_corpus.cases_transformers import image_classification_base64

    built = image_classification_base64()
    assert importlib.util.find_spec("torchvision") is None  # MLflow's own default list would name torchvision

    mt_transformers.save_model(built.model, tmp_path / "package", input_example=built.log_kwargs["input_example"])

    [repository] = (tmp_path / "package" / "model_repository").iterdir()
    requirements = (repository / "requirements.txt").read_text(encoding="utf-8").splitlines()
    assert [line for line in requirements if line.lower().startswith("pillow==")] != []
