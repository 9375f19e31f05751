"""A batched PyTorch and a batched Transformers repository (``max_batch_size=8``) on a real Triton 2.51 (#31.6).

The proof of ``test_batching_triton.py`` for the two other flavors: concurrent clients send requests of different
row counts; every answer is compared with ``pyfunc.predict`` of that request alone (floats within the proof's ulps
at their row's scale, labels exactly), and Triton's statistics show fewer executions than requests: requests were
joined. The text classifier gets texts of 1 to 24 words, so a joined execution holds texts of different lengths.
MLflow's pipeline wrapper runs a pipeline logged without ``model_config={"batch_size": N}`` text by text, so the
joined texts are never padded to one length (docs/batching.md says what a ``batch_size`` does).

One server holds both models; its environment is the union of their requirements, reused from a cached one that
satisfies them (in a full run the Transformers example's, built by tests/e2e/test_runner.py, which pytest collects
before this file: hence its name).
"""

import concurrent.futures
import time

import mlflow.pyfunc
import numpy as np
import pytest

from mlflow_triton import pytorch, transformers
from mlflow_triton._batching import ROW_INDEPENDENCE_ULPS, ulps_per_element
from mlflow_triton.local import TritonInstallation, TritonServer, send_shipped_request
from mlflow_triton.local._compare import differences
from mlflow_triton.local.serving_env import ensure_env_for_requirements, requirement_lines
from mlflow_triton.repository.config import read_config, wire_arrays
from mlflow_triton.repository.guard import files_directory
from tests.support import tiny_models
from tests.support.oracle import expected_example_tensors
from tests.support.v2_http import counts_since, post_binary, post_infer, statistics

pytestmark = [pytest.mark.triton, pytest.mark.filterwarnings("ignore")]

MLP, CLASSIFIER = "mlp_batched", "classifier_batched"
MAX_BATCH_SIZE = 8
CLIENTS = 8
REQUESTS_PER_CLIENT = 5
# Texts of 1 to 24 words from the tiny tokenizer's vocabulary (its pipeline was built for at most 32 positions).
TEXTS = [
    "hello",
    "tiny network",
    "the model serves text",
    "a small triton request answer",
    "mlflow signature tensor input example hello world",
    "the tiny network serves a small answer to every text request",
    "hello world " * 8,
    "triton mlflow signature tensor request answer small tiny network the a model serves text example input hello",
    "model " * 24,
    "answer the request",
]
EXAMPLE_TEXTS = TEXTS[:3]


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """(server, {model name: MLflow package}) of the tiny MLP and the tiny BERT classifier, both batched."""
    root = tmp_path_factory.mktemp("batching-frameworks")
    pytorch.save_model(
        tiny_models.shared_tiny_mlp(),
        root / MLP,
        input_example=tiny_models.mlp_example(3),
        code_paths=[str(tiny_models.CUSTOM_NET_DIR)],
        triton_model_name=MLP,
        max_batch_size=MAX_BATCH_SIZE,
        max_queue_delay_microseconds=20_000,
    )
    transformers.save_model(
        tiny_models.shared_text_classification_pipeline(),
        root / CLASSIFIER,
        input_example=EXAMPLE_TEXTS,
        triton_model_name=CLASSIFIER,
        max_batch_size=MAX_BATCH_SIZE,
        max_queue_delay_microseconds=20_000,
    )
    packages = {name: root / name for name in (MLP, CLASSIFIER)}
    repositories = [package / "model_repository" / name for name, package in packages.items()]  # one each
    requirements = {
        line
        for r in repositories
        if (r / "requirements.txt").is_file()
        for line in requirement_lines((r / "requirements.txt").read_text())
    }
    installation = TritonInstallation.bundled(progress=None)
    env = ensure_env_for_requirements(
        sorted(requirements), installation.serving_constraints, progress=None, reuse_superset=True, source="the models"
    )
    started = time.monotonic()
    with TritonServer(
        [r.parent for r in repositories], [r.name for r in repositories], installation=installation, serving_env=env
    ) as server:
        print(f"[timing] batched PyTorch + Transformers server ready: {time.monotonic() - started:.1f}s")
        yield server, packages


def post(server, model, inputs):
    """POST one v2 JSON request of ``inputs`` (already in the batched shapes) to ``model``; (status, body)."""
    return post_infer(server, model, inputs)


def concurrently(server, model, requests, encode):
    """Every request posted by ``CLIENTS`` concurrent clients; (answers in order, Triton's counts for them)."""
    before = statistics(server, model)
    with concurrent.futures.ThreadPoolExecutor(max_workers=CLIENTS) as pool:
        answers = list(pool.map(lambda request: post(server, model, encode(request)), requests))
    return answers, counts_since(server, model, before, len(requests))


def outputs_of(status, body):
    assert status == 200, body
    return {output["name"]: output for output in body["outputs"]}


def mlp_requests():
    """1 to 4 rows each, every row a different float32 input (no two requests alike)."""
    rng = np.random.default_rng(31)
    return [
        rng.uniform(-2.0, 2.0, size=(int(rng.integers(1, 5)), tiny_models.MLP_SIZES["input_size"])).astype(np.float32)
        for _ in range(CLIENTS * REQUESTS_PER_CLIENT)
    ]


def text_requests():
    """1 to 3 texts each, of different lengths, drawn from ``TEXTS``."""
    rng = np.random.default_rng(31)
    return [
        [TEXTS[i] for i in rng.choice(len(TEXTS), size=int(rng.integers(1, 4)), replace=False)]
        for _ in range(CLIENTS * REQUESTS_PER_CLIENT)
    ]


def test_batched_pytorch_repository_answers_concurrent_clients_like_pyfunc_predict_of_each_request_alone(served):
    server, packages = served
    pyfunc = mlflow.pyfunc.load_model(str(packages[MLP]))
    requests = mlp_requests()

    answers, (count, rows, executions) = concurrently(
        server,
        MLP,
        requests,
        lambda x: [{"name": "input_0", "datatype": "FP32", "shape": list(x.shape), "data": x.ravel().tolist()}],
    )

    largest = 0.0
    for x, answer in zip(requests, answers):
        [output] = outputs_of(*answer).values()
        got = np.array(output["data"], dtype=np.float32).reshape(output["shape"])
        expected = pyfunc.predict(x)
        assert got.shape == expected.shape == (len(x), tiny_models.MLP_SIZES["output_size"])
        largest = max(largest, ulps_per_element(expected, got).max())
        assert largest <= ROW_INDEPENDENCE_ULPS
    assert (count, rows) == (len(requests), sum(map(len, requests)))
    assert executions < count
    print(
        f"[batching] pytorch: {count} requests ({rows} rows) from {CLIENTS} clients in {executions} executions; "
        f"largest difference {largest:g} ulps"
    )


def test_batched_transformers_repository_answers_concurrent_texts_of_different_lengths_like_pyfunc_predict_alone(
    served,
):
    server, packages = served
    pyfunc = mlflow.pyfunc.load_model(str(packages[CLASSIFIER]))
    requests = text_requests()

    answers, (count, rows, executions) = concurrently(
        server,
        CLASSIFIER,
        requests,
        lambda texts: [{"name": "input_0", "datatype": "BYTES", "shape": [len(texts), 1], "data": texts}],
    )

    largest = 0.0
    for texts, answer in zip(requests, answers):
        outputs = outputs_of(*answer)
        expected = pyfunc.predict(texts)
        assert outputs["label"]["shape"] == outputs["score"]["shape"] == [len(texts), 1]
        assert outputs["label"]["data"] == expected["label"].tolist()
        got = np.array(outputs["score"]["data"], dtype=np.float64)
        largest = max(largest, ulps_per_element(expected["score"].to_numpy(dtype=np.float64), got).max())
        assert largest <= ROW_INDEPENDENCE_ULPS
    assert (count, rows) == (len(requests), sum(map(len, requests)))
    assert executions < count
    print(
        f"[batching] transformers: {count} requests ({rows} texts) from {CLIENTS} clients in {executions} "
        f"executions; largest difference {largest:g} ulps"
    )


def test_batched_pytorch_repository_answers_valid_clients_exactly_beside_clients_claiming_0_rows_with_bytes(served):
    """4 clients send valid requests while 2 send binary ``[0, 4]`` requests that carry 1 or 2 rows of bytes:
    Triton hands the first to the model one axis short (``[1, 4]``) and refuses the second itself; both are 4xx,
    and no valid request joined with them is failed or changed."""
    server, packages = served
    pyfunc = mlflow.pyfunc.load_model(str(packages[MLP]))
    valid = mlp_requests()[:24]
    size = tiny_models.MLP_SIZES["input_size"]
    hostile = [np.ones((rows, size), dtype=np.float32) for rows in (1, 2) for _ in range(6)]

    def send_valid(x):
        return post(
            server, MLP, [{"name": "input_0", "datatype": "FP32", "shape": list(x.shape), "data": x.ravel().tolist()}]
        )

    def send_hostile(x):
        return post_binary(server, MLP, [("input_0", "FP32", [0, size], x.tobytes())], timeout=30)

    with concurrent.futures.ThreadPoolExecutor(max_workers=6) as pool:
        valid_answers = [pool.submit(lambda chunk: [send_valid(x) for x in chunk], valid[i::4]) for i in range(4)]
        hostile_answers = [pool.submit(lambda chunk: [send_hostile(x) for x in chunk], hostile[i::2]) for i in range(2)]
        valid_answers = [answer for future in valid_answers for answer in future.result()]
        hostile_answers = [answer for future in hostile_answers for answer in future.result()]

    for x, answer in zip([x for i in range(4) for x in valid[i::4]], valid_answers):
        [output] = outputs_of(*answer).values()
        got = np.array(output["data"], dtype=np.float32).reshape(output["shape"])
        assert ulps_per_element(pyfunc.predict(x), got).max() <= ROW_INDEPENDENCE_ULPS
    for x, (status, body) in zip([x for i in range(2) for x in hostile[i::2]], hostile_answers):
        assert 400 <= status < 500, body
        if len(x) == 1:  # carried one row's bytes: handed to the model as [1, 4], refused by the runtime
            assert body["error"].startswith("Tensor `input_0` must be sent as [rows, 4] with at least one row")
    assert server.poll() is None


@pytest.mark.parametrize("model", [MLP, CLASSIFIER])
def test_batched_repository_answers_its_shipped_request_in_batched_shapes_like_pyfunc_predict(served, model):
    server, packages = served
    front = packages[model] / "model_repository" / model
    repository = files_directory(front)

    config, _ = read_config(repository / "config.pbtxt")

    response = send_shipped_request(server.url, front)

    # A batched repository answers a rank-one output (the labels, the scores) as [rows, 1].
    expected = wire_arrays(config, "output", expected_example_tensors(packages[model], repository))
    assert differences(expected, response.outputs) == []
