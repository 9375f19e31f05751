"""export-onnx for text models: tokenizer + post-processing parity (a property test), refusals, a failing parity.

The property test runs the export's own ``text_pipeline.py`` (the code the exported front serves) with the tiny
BERT's torch forward as its network and compares it with the Transformers pipeline itself on Hypothesis-generated
batches: known words, any Unicode, empty and over-long texts. The refusals and the parity failure go through
``export_onnx`` and leave nothing written.
"""

import pathlib
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mlflow_triton import transformers as mt_transformers
from mlflow_triton.export import ParityError, UnsupportedModelError, _text, _text_pipeline, export_onnx
from mlflow_triton.export._text_export import ATOL, RTOL
from tests.support import text_export_models, tiny_models

WORDS = st.sampled_from(list(tiny_models._WORDS) + ["unknown", "[SEP]"])
TEXTS = st.one_of(
    st.lists(WORDS, min_size=0, max_size=12).map(" ".join),
    st.text(max_size=30),
    st.integers(30, 40).map(lambda count: " ".join(["hello"] * count)),  # around the tiny BERT's 32 positions
)


def _text_pipeline_for(tmp_path, pipeline, model_config, outputs, pad_multiple=8):
    """The export's ``TextPipeline`` for ``pipeline`` as ``model_config`` logs it, and its torch network."""
    source = SimpleNamespace(
        raw_model=lambda: pipeline,
        predictor=SimpleNamespace(_model_impl=SimpleNamespace(model_config=model_config, llm_inference_task=None)),
        layout=SimpleNamespace(outputs=[SimpleNamespace(name=name) for name in outputs]),
    )
    network, spec = _text._pipeline(source)
    directory = pathlib.Path(tmp_path)
    (directory / _text_pipeline.TOKENIZER_FILE).write_text(spec.pop("_tokenizer"), encoding="utf-8")
    spec.update(max_batch_size=4, pad_multiple=pad_multiple, input="input_0", outputs=outputs)
    spec["network_output"] = network.output
    (directory / _text_pipeline.SPEC_FILE).write_text(_text.spec_text(spec), encoding="utf-8")

    def run(feeds):
        with torch.no_grad():
            tensors = {name: torch.from_numpy(array) for name, array in feeds.items()}
            return getattr(network.model(**tensors), network.output).numpy()

    return _text_pipeline.TextPipeline(directory), run


def _both(pipeline_call, texts, pipeline, run):
    try:
        expected = pipeline_call(texts)
    except Exception as error:  # noqa: BLE001 - the pipeline refuses: the export must too
        expected = error
    try:
        actual = pipeline.answer(texts, run)
    except _text_pipeline.TextRequestError as error:
        actual = error
    assert isinstance(expected, Exception) == isinstance(actual, Exception), (texts, expected, actual)
    return None if isinstance(expected, Exception) else (expected, actual)


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(texts=st.lists(TEXTS, min_size=1, max_size=5), top_k=st.sampled_from([None, 1, 2, "legacy"]))
def test_text_classification_front_answers_like_the_pipeline_for_generated_texts(tmp_path_factory, texts, top_k):
    hf = tiny_models.shared_text_classification_pipeline()
    config = {} if top_k == "legacy" else {"top_k": top_k}
    outputs = ["label", "score"] if top_k == "legacy" else [f"_{i}" for i in range(top_k or 2)]
    pipeline, run = _text_pipeline_for(tmp_path_factory.mktemp("tc"), hf, config, outputs)

    both = _both(lambda t: hf(t, **config), texts, pipeline, run)

    if both is None:
        return
    expected, actual = both
    if top_k == "legacy":
        assert [a.decode() for a in actual["label"]] == [e["label"] for e in expected]
        np.testing.assert_allclose(actual["score"], [e["score"] for e in expected], rtol=RTOL, atol=ATOL)
        return
    import json

    for column, name in enumerate(outputs):
        got = [json.loads(item) for item in actual[name]]
        assert [g["label"] for g in got] == [e[column]["label"] for e in expected]
        np.testing.assert_allclose([g["score"] for g in got], [e[column]["score"] for e in expected], rtol=RTOL)


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(requests=st.lists(st.lists(TEXTS, min_size=1, max_size=3), min_size=2, max_size=5))
def test_joined_requests_are_each_answered_as_the_pipeline_answers_them_alone_whatever_their_lengths(
    tmp_path_factory, requests
):
    """One execution of the one-model export: every request's texts padded to the longest of all, run at once."""
    hf = tiny_models.shared_text_classification_pipeline()
    pipeline, run = _text_pipeline_for(tmp_path_factory.mktemp("joined"), hf, {}, ["label", "score"], pad_multiple=1)
    runs = []

    answers = pipeline.answer_joined(requests, lambda feeds: runs.append(feeds) or run(feeds))

    for texts, answer in zip(requests, answers):
        both = _both(hf, texts, pipeline, run)
        if both is None:
            assert isinstance(answer, _text_pipeline.TextRequestError), (texts, answer)
            continue
        expected, _ = both
        assert [a.decode() for a in answer["label"]] == [e["label"] for e in expected]
        np.testing.assert_allclose(answer["score"], [e["score"] for e in expected], rtol=RTOL, atol=ATOL)
    if not any(isinstance(answer, Exception) for answer in answers):  # then the requests ran together
        total = sum(len(texts) for texts in requests)
        assert [len(feeds["input_ids"]) for feeds in runs] == [min(4, total - start) for start in range(0, total, 4)]


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(texts=st.lists(TEXTS, min_size=1, max_size=5))
def test_token_classification_front_answers_like_mlflow_joins_the_pipeline_labels_for_generated_texts(
    tmp_path_factory, texts
):
    hf = text_export_models.token_classification_pipeline()
    pipeline, run = _text_pipeline_for(tmp_path_factory.mktemp("tokc"), hf, {}, ["output_0"])

    def mlflow_answer(batch):  # mlflow.transformers' _parse_tokenizer_output: IndexError on a text without entities
        return [",".join(entity["entity"] for entity in entities) if entities else [][0] for entities in hf(batch)]

    both = _both(mlflow_answer, texts, pipeline, run)

    if both is not None:
        expected, actual = both
        assert [a.decode() for a in actual["output_0"]] == expected


def test_token_classification_with_an_aggregation_strategy_is_refused_naming_it():
    with pytest.raises(UnsupportedModelError, match=r"aggregation_strategy='simple' cannot be exported"):
        _text._token_classification({"aggregation_strategy": "simple"}, {})


def test_export_onnx_refuses_a_text_generation_pipeline_naming_the_task_and_writes_nothing(tmp_path):
    mt_transformers.save_model(
        tiny_models.shared_text_generation_pipeline(),
        tmp_path / "logged",
        input_example=tiny_models.TEXT_EXAMPLE,
        model_config=tiny_models.GENERATION_CONFIG,
    )

    with pytest.raises(UnsupportedModelError, match=r"Task 'text-generation' \(TextGenerationPipeline\) cannot be "):
        export_onnx(str(tmp_path / "logged"), tmp_path / "out", backend="python")
    assert not (tmp_path / "out").exists()


def test_export_onnx_refuses_a_text_model_whose_post_processing_disagrees_with_pyfunc_and_writes_nothing(
    tmp_path, monkeypatch
):
    text_export_models.save_text_classification(str(tmp_path / "logged"))
    monkeypatch.setattr(_text_pipeline, "_apply", lambda function, logits: np.float32(1.001) * logits)

    with pytest.raises(ParityError, match=r"Output `(label|score)` on the saved input example"):
        export_onnx(str(tmp_path / "logged"), tmp_path / "out", backend="python")
    assert not (tmp_path / "out").exists()


def test_export_onnx_writes_a_text_front_without_mlflow_torch_or_transformers_and_a_batched_onnxruntime_network(
    tmp_path,
):
    import re

    from tests.support.export_models import read_config, read_handoff

    text_export_models.save_feature_extraction(str(tmp_path / "logged"))

    front = export_onnx(str(tmp_path / "logged"), tmp_path / "out", max_batch_size=8)  # --backend onnxruntime

    network = front.parent / f"{front.name}_network"
    front_config, network_config, handoff = read_config(front), read_config(network), read_handoff(network)
    imports = {
        module
        for source in ("model.py", "text_pipeline.py")
        for module in re.findall(r"^(?:import|from) (\w+)", (front / "1" / source).read_text(), re.M)
    }
    assert (front_config.backend, front_config.max_batch_size) == ("python", 0)
    assert front_config.parameters["mlflow_triton_forward_to"].string_value == network.name
    assert (network_config.platform, network_config.max_batch_size) == ("onnxruntime_onnx", 8)
    assert network_config.HasField("dynamic_batching")
    assert [(i.name, list(i.dims)) for i in network_config.input] == [("input_ids", [-1]), ("attention_mask", [-1])]
    assert [(o.name, list(o.dims)) for o in network_config.output] == [("last_hidden_state", [-1, 16])]
    assert not (network / "1" / "model.py").exists()
    assert imports <= {"json", "pathlib", "sys", "numpy", "tokenizers", "triton_python_backend_utils", "text_pipeline"}
    assert handoff["task"] == "feature-extraction" and handoff["parity"]["passed"]
    assert "ONNX Runtime backend did not run the network" in handoff["not_verified"][0]
    assert "onnxruntime" not in (network / "requirements.txt").read_text()


def test_check_compares_a_text_exports_floats_and_json_floats_within_its_recorded_float32_tolerance(tmp_path):
    import json

    from mlflow_triton.local._compare import compare, export_tolerance

    (tmp_path / "handoff.json").write_text(
        json.dumps({"task": "text-classification", "parity": {"tolerances": {"floats": {"rtol": 1e-4, "atol": 1e-5}}}})
    )
    tolerance = export_tolerance(tmp_path)
    want = {"_0": np.array([b'{"label":"a","score":0.5}'], dtype=object), "score": np.array([0.5])}
    close = {"_0": np.array([b'{"label":"a","score":0.50002}'], dtype=object), "score": np.array([0.50002])}
    relabelled = {"_0": np.array([b'{"label":"b","score":0.5}'], dtype=object), "score": np.array([0.5001])}

    assert tolerance == (1e-4, 1e-5)
    assert export_tolerance(tmp_path / "elsewhere") is None
    assert all(result["equal"] for result in compare(want, close, tolerance=tolerance).values())
    assert not any(result["equal"] for result in compare(want, close).values())  # FP64 and exact text otherwise
    assert not any(result["equal"] for result in compare(want, relabelled, tolerance=tolerance).values())


def test_export_onnx_writes_one_batched_python_model_whose_execution_joins_requests_of_different_lengths(tmp_path):
    """``--backend python``: tokenizer, network and post-processing in one model (before: a front and a network);
    one execution answers every request like pyfunc alone, and only the request it cannot answer gets a 400."""
    import mlflow.pyfunc

    from tests.support import fake_pb_utils
    from tests.support.export_models import read_config

    logged = text_export_models.save_text_classification(str(tmp_path / "logged"))
    directory = export_onnx(logged, tmp_path / "out", backend="python", max_batch_size=8)

    config = read_config(directory)
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [directory.name]
    assert (config.backend, config.max_batch_size, config.HasField("dynamic_batching")) == ("python", 8, True)
    [text_input] = config.input
    assert (list(text_input.dims), text_input.HasField("reshape")) == ([1], False)  # Triton refuses 0 texts itself
    texts = [["hello"], ["the small tiny network serves text example input model"], ["world", "model answer"]]
    claimed_zero = np.array([b"hello"], dtype=object)  # binary [0, 1] carrying one text: handed over as [1]
    requests = [{"input_0": np.array(t, dtype=object).reshape(-1, 1)} for t in (*texts, [""])]
    requests.insert(1, {"input_0": claimed_zero})
    model = fake_pb_utils.initialized_model(directory, name="one_text_model")
    responses = model.execute([fake_pb_utils.request_from_arrays(r) for r in requests])

    pyfunc = mlflow.pyfunc.load_model(logged)
    refused = [responses.pop(1), responses.pop()]
    assert [r.error().code() for r in refused] == [fake_pb_utils.TritonError.INVALID_ARG] * 2
    assert "`input_0` has 0 rows" in refused[0].error().message() and "no tokens" in refused[1].error().message()
    for request_texts, response in zip(texts, responses):
        outputs = fake_pb_utils.outputs_of(response)
        expected = pyfunc.predict(request_texts)
        assert [label.decode() for label in outputs["label"].ravel()] == expected["label"].tolist()
        np.testing.assert_allclose(outputs["score"].ravel(), expected["score"], rtol=RTOL, atol=ATOL)


def test_one_text_model_reads_onnxruntimes_threads_from_the_parameter_the_export_writes_without_spinning():
    from mlflow_triton.export import _config, _text_export

    code = _text_export.ONE_MODEL.read_text()

    assert f'THREADS_PARAMETER = "{_config.THREADS_PARAMETER}"' in code
    assert 'add_session_config_entry("session.intra_op.allow_spinning", "0")' in code
