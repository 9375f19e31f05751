"""Log tiny sklearn models from several threads and processes at the same moment.

``log_at_once(tracking_uri, experiment_id, registered_model_name, threads, processes)``
starts ``processes`` child interpreters (``python -m tests.support.concurrent_logging``),
waits until each has imported everything and fitted its model, then releases the
children and ``threads`` threads of this process together; every worker calls
``mlflow_triton.sklearn.log_model`` once, registering a version of
``registered_model_name``. Returns one ``WorkerResult`` per worker.

The children inherit the environment (``TMPDIR`` included), so a test that
points ``TMPDIR`` at an empty directory can check that no worker left a staging
directory behind.
"""

import dataclasses
import json
import pathlib
import subprocess
import sys
import threading
import time
import traceback

REPOSITORY_ROOT = pathlib.Path(__file__).resolve().parents[2]
READY, GO, RESULT = "READY", "GO", "RESULT "
CHILD_TIMEOUT_S = 600


@dataclasses.dataclass(frozen=True)
class WorkerResult:
    worker: str
    version: "int | str | None"  # the Registry version it created (a str through REST), None when it failed
    model_id: "str | None"
    error: "str | None"  # "<exception type>: <message>" when it failed
    seconds: float


def _tiny_classifier():
    import pandas as pd
    from sklearn.linear_model import LogisticRegression

    frame = pd.DataFrame({"width": [1.0, 2.0, 3.0, 4.0], "height": [0.5, 1.5, 2.0, 3.5]})
    return LogisticRegression().fit(frame, [0, 1, 0, 1]), frame.iloc[:2]


def _log_one(worker, registered_model_name, classifier, example):
    from mlflow_triton import sklearn

    started = time.monotonic()
    try:
        info = sklearn.log_model(
            classifier, input_example=example, name=worker, registered_model_name=registered_model_name
        )
    except Exception as error:  # reported, not raised: the test asserts on every outcome
        traceback.print_exc()
        return WorkerResult(worker, None, None, f"{type(error).__name__}: {error}", time.monotonic() - started)
    return WorkerResult(worker, info.registered_model_version, info.model_id, None, time.monotonic() - started)


def log_at_once(tracking_uri, experiment_id, registered_model_name, *, threads, processes):
    """Run ``threads`` + ``processes`` simultaneous ``log_model`` calls; return their results."""
    children = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.support.concurrent_logging",
                tracking_uri,
                experiment_id,
                registered_model_name,
                f"process-{index}",
            ],
            cwd=REPOSITORY_ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for index in range(processes)
    ]
    try:
        for child in children:
            line = child.stdout.readline().strip()
            if line != READY:
                child.kill()
                raise RuntimeError(f"a logging child did not get ready: {line!r}\n{child.stderr.read()[-3000:]}")
        classifier, example = _tiny_classifier()
        results = [None] * threads
        workers = [
            threading.Thread(
                target=lambda i=i: results.__setitem__(
                    i, _log_one(f"thread-{i}", registered_model_name, classifier, example)
                )
            )
            for i in range(threads)
        ]
        for child in children:
            child.stdin.write(GO + "\n")
            child.stdin.flush()
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        return results + [_child_result(child) for child in children]
    finally:
        for child in children:
            if child.poll() is None:
                child.kill()
                child.wait()


def _child_result(child):
    stdout, stderr = child.communicate(timeout=CHILD_TIMEOUT_S)
    lines = [line for line in stdout.splitlines() if line.startswith(RESULT)]
    if child.returncode != 0 or not lines:
        return WorkerResult("process", None, None, f"child exited {child.returncode}: {stderr[-3000:]}", 0.0)
    return WorkerResult(**json.loads(lines[-1][len(RESULT) :]))


def _child_main(tracking_uri, experiment_id, registered_model_name, worker):
    import mlflow

    import mlflow_triton.sklearn  # noqa: F401  (import before the start signal, like the threads)

    mlflow.set_tracking_uri(tracking_uri)
    mlflow.set_experiment(experiment_id=experiment_id)
    classifier, example = _tiny_classifier()
    print(READY, flush=True)
    if sys.stdin.readline().strip() != GO:
        sys.exit(3)
    result = _log_one(worker, registered_model_name, classifier, example)
    print(RESULT + json.dumps(dataclasses.asdict(result)), flush=True)


if __name__ == "__main__":
    _child_main(*sys.argv[1:5])


def assert_complete_and_contiguous(results, client, registered_model_name, experiment_id, download_root):
    """Every call succeeded; versions 1..n, one LoggedModel each, each a complete Triton repository."""
    from mlflow_triton import triton

    assert [r for r in results if r.error is not None] == []
    assert sorted(int(r.version) for r in results) == list(range(1, len(results) + 1))  # str through REST
    versions = client.search_model_versions(f"name = '{registered_model_name}'")
    assert sorted(int(v.version) for v in versions) == list(range(1, len(results) + 1))
    assert sorted(v.source for v in versions) == sorted(f"models:/{r.model_id}" for r in results)
    logged = client.search_logged_models(experiment_ids=[experiment_id])
    assert sorted(m.model_id for m in logged) == sorted(r.model_id for r in results)
    for version in versions:
        repository = triton.load_model(
            f"models:/{registered_model_name}/{version.version}", dst_path=download_root / str(version.version)
        )
        assert (repository / "1" / "model.py").is_file()
        assert (repository / "1" / "artifact" / "MLmodel").is_file()
        assert (repository / "config.pbtxt").is_file() and (repository / "request.json").is_file()
