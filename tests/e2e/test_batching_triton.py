"""A batched generated repository (``max_batch_size=N``) on a real Triton 2.51.

Concurrent clients send requests of different row counts; every answer is compared with
``pyfunc.predict`` of that request alone (floats within the proof's ulps, the rest exactly), and
Triton's statistics show fewer executions than requests: requests were joined. The repository is served as
logged, behind its zero-row guard: clients call the front, whose 16 instances forward to the batched model
(``<name>_batched``, whose statistics show the joining). A request the model cannot predict, sent among them, gets
its own 500 with the model's words (through the front, as from the batched model alone) and the others are
answered. The shipped request (batched shapes) is answered like ``pyfunc.predict`` of the example.

One small scikit-learn Pipeline, one server, the sklearn example's serving environment (cached).
"""

import concurrent.futures
import shutil
import time

import mlflow.pyfunc
import numpy as np
import pandas as pd
import pytest
from sklearn.compose import ColumnTransformer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

from mlflow_triton import sklearn
from mlflow_triton._batching import ROW_INDEPENDENCE_ULPS, ulps_per_element
from mlflow_triton.local import TritonInstallation, TritonServer, ensure_serving_env, send_shipped_request
from mlflow_triton.local._compare import compare
from mlflow_triton.repository.guard import files_directory, served_directories
from tests.support.oracle import expected_example_tensors
from tests.support.v2_http import counts_since, post_infer, statistics

pytestmark = [pytest.mark.triton, pytest.mark.filterwarnings("ignore")]

NAME = "batched"
BATCHED = NAME  # one model directory: Triton's joining shows in its statistics
CLIENTS = 8
REQUESTS_PER_CLIENT = 6
TRAINING = pd.DataFrame(
    {
        "age": [22.0, 35.5, 47.0, 58.25, 31.0, 64.5, 29.0, 41.0],
        "city": ["Oslo", "Zürich", "Oslo", "東京", "Zürich", "東京", "Oslo", "Zürich"],
        "visits": [1, 4, 2, 7, 3, 5, 6, 2],
    }
)


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """(server, package path, repository directory) of the Pipeline logged with ``max_batch_size=16``."""
    root = tmp_path_factory.mktemp("batching")
    pipeline = make_pipeline(
        ColumnTransformer([("n", StandardScaler(), ["age", "visits"]), ("c", OneHotEncoder(), ["city"])]),
        LogisticRegression(),
    ).fit(TRAINING, [0, 1, 0, 1, 1, 0, 1, 0])
    package = root / "package"
    sklearn.save_model(
        pipeline,
        package,
        input_example=TRAINING.iloc[:3],
        pyfunc_predict_fn="predict_proba",
        triton_model_name=NAME,
        max_batch_size=16,
        max_queue_delay_microseconds=20_000,
    )
    repository = root / "repository"
    repository.mkdir()
    models = served_directories(package / "model_repository" / NAME)  # one directory
    for directory in models:
        shutil.copytree(directory, repository / directory.name)
    installation = TritonInstallation.bundled(progress=None)
    requirements = files_directory(repository / NAME) / "requirements.txt"
    env = ensure_serving_env(requirements, installation.serving_constraints, progress=None)
    started = time.monotonic()
    with TritonServer(repository, [d.name for d in models], installation=installation, serving_env=env) as server:
        print(f"[timing] batched sklearn server ready: {time.monotonic() - started:.1f}s")
        yield server, package, repository / NAME


def post(server, frame):
    """POST ``frame`` as a v2 JSON body in the batched shapes (each column ``[rows, 1]``); (status, body)."""
    inputs = [
        {"name": "age", "datatype": "FP64", "shape": [len(frame), 1], "data": frame["age"].tolist()},
        {"name": "city", "datatype": "BYTES", "shape": [len(frame), 1], "data": frame["city"].tolist()},
        {"name": "visits", "datatype": "INT64", "shape": [len(frame), 1], "data": frame["visits"].tolist()},
    ]
    return post_infer(server, NAME, inputs)


def frames_for(client):
    """The requests of one client: 1 to 5 rows each, drawn from the training rows."""
    rng = np.random.default_rng(client)
    return [
        TRAINING.iloc[rng.integers(0, len(TRAINING), size=int(rng.integers(1, 6)))].reset_index(drop=True)
        for _ in range(REQUESTS_PER_CLIENT)
    ]


def test_batched_repository_answers_concurrent_clients_like_pyfunc_predict_of_each_request_alone(served):
    server, package, _ = served
    pyfunc = mlflow.pyfunc.load_model(str(package))
    before = statistics(server, BATCHED)
    frames = [frame for client in range(CLIENTS) for frame in frames_for(client)]

    with concurrent.futures.ThreadPoolExecutor(max_workers=CLIENTS) as pool:
        answers = list(pool.map(lambda frame: post(server, frame), frames))

    requests, rows, executions = counts_since(server, BATCHED, before, len(frames))
    for frame, (status, body) in zip(frames, answers):
        assert status == 200, body
        [output] = body["outputs"]
        assert output["shape"] == [len(frame), 2]
        got = np.array(output["data"], dtype=np.float64).reshape(output["shape"])
        assert ulps_per_element(pyfunc.predict(frame), got).max() <= ROW_INDEPENDENCE_ULPS
    assert (requests, rows) == (len(frames), sum(map(len, frames)))
    assert executions < requests
    print(f"[batching] {requests} requests ({rows} rows) from {CLIENTS} clients in {executions} executions")


def test_batched_repository_answers_the_others_when_one_concurrent_request_cannot_be_predicted(served):
    server, package, _ = served
    pyfunc = mlflow.pyfunc.load_model(str(package))
    unknown_city = TRAINING.iloc[:2].assign(city=["Oslo", "Atlantis"])  # OneHotEncoder(handle_unknown="error")
    frames = [TRAINING.iloc[i : i + 2].reset_index(drop=True) for i in range(6)]
    frames.insert(3, unknown_city)

    with concurrent.futures.ThreadPoolExecutor(max_workers=len(frames)) as pool:
        answers = list(pool.map(lambda frame: post(server, frame), frames))

    statuses = [status for status, _ in answers]
    assert statuses == [200, 200, 200, 500, 200, 200, 200], answers[3]
    assert answers[3][1]["error"].startswith("Prediction failed: ValueError; its message may quote the request")
    for frame, (status, body) in zip(frames, answers):
        if status == 200:
            got = np.array(body["outputs"][0]["data"], dtype=np.float64).reshape(body["outputs"][0]["shape"])
            assert ulps_per_element(pyfunc.predict(frame), got).max() <= ROW_INDEPENDENCE_ULPS


def test_batched_repository_answers_its_shipped_request_in_batched_shapes_like_pyfunc_predict(served):
    server, package, model_dir = served

    response = send_shipped_request(server.url, model_dir)

    assert response.outputs["output_0"].shape == (3, 2)
    comparison = compare(expected_example_tensors(package, files_directory(model_dir)), response.outputs)
    assert all(result["equal"] for result in comparison.values()), comparison
