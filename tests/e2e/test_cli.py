"""`mlflow-triton check` and `mlflow-triton serve` end to end, through the installed console script.

A user's own script (``tests/support/user_script.py``, not an example) logs a scikit-learn Pipeline, a
PyTorch module with ``code_paths`` and a Transformers pipeline to a sqlite store with
``registered_model_name``; the command line proves and serves them on the bundled Triton 2.51. Their
requirements are the flavors' defaults, the same as the examples', so the serving environments the
example-runner tests build are reused from ``$MLFLOW_TRITON_CACHE``. Never skipped in CI.
"""

import dataclasses
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from mlflow_triton import sklearn as triton_sklearn
from mlflow_triton.local import check_command
from mlflow_triton.local._compare import FLOAT_TOLERANCES, compare
from mlflow_triton.local.send import decode_response
from tests.support.oracle import expected_example_tensors
from tests.support.ports import free_ports
from tests.support.processes import (
    LineReader,
    listening_sockets,
    processes_mentioning,
    stop_politely,
    triton_processes_under,
)

REPO_ROOT = Path(__file__).resolve().parents[2]
CONSOLE_SCRIPT = Path(sys.executable).with_name("mlflow-triton")
USER_SCRIPT = REPO_ROOT / "tests" / "support" / "user_script.py"

pytestmark = pytest.mark.triton


def user_environment(**overrides):
    """A user's shell: no MLflow settings left by other tests, the shared serving-environment cache, no model hub."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_") or k == "MLFLOW_TRITON_CACHE"}
    environment.update(HF_HUB_OFFLINE="1", **overrides)
    return environment


@dataclasses.dataclass(frozen=True)
class UserStore:
    tracking_uri: str
    directory: Path


@pytest.fixture(scope="module")
def user_store(tmp_path_factory):
    """The user's script run in a fresh process against a new sqlite store."""
    directory = tmp_path_factory.mktemp("user-store")
    tracking_uri = f"sqlite:///{directory / 'mlflow.db'}"
    completed = subprocess.run(
        [sys.executable, str(USER_SCRIPT), tracking_uri, (directory / "artifacts").as_uri()],
        cwd=directory,
        env=user_environment(),
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert completed.returncode == 0, completed.stderr[-4000:]
    assert [line.split()[:2] for line in completed.stdout.splitlines()] == [
        ["user-classifier", "1"],
        ["user-network", "1"],
        ["user-text", "1"],
    ]
    return UserStore(tracking_uri, directory)


def mlflow_triton(*args, store, timeout=1800, **environment):
    """The console script as a user runs it; returns the finished process."""
    return subprocess.run(
        [str(CONSOLE_SCRIPT), *args, "--tracking-uri", store.tracking_uri],
        cwd=store.directory,
        env=user_environment(**environment),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_check_passes_when_models_of_every_flavor_are_checked_from_the_command_line(user_store, tmp_path):
    uris = ["models:/user-classifier/1", "models:/user-network@champion", "models:/user-text/1"]

    completed = mlflow_triton("check", *uris, "--work-dir", str(tmp_path), store=user_store)

    assert completed.returncode == 0, completed.stdout + completed.stderr[-6000:]
    verdicts = re.findall(r"^(PASS|FAIL) (\S+): (.*)$", completed.stdout, re.M)
    assert [(verdict, uri) for verdict, uri, _ in verdicts] == [("PASS", uri) for uri in uris]
    assert verdicts[0][2] == ("Triton 2.51.0 answered the shipped json request like pyfunc.predict (output_0)")
    report = json.loads((tmp_path / "report.json").read_text())
    assert [(entry["model_uri"], entry["triton_model"], entry["passed"]) for entry in report] == [
        (uris[0], "classifier", True),
        (uris[1], "network", True),
        (uris[2], "text_classifier", True),
    ]
    # feedback on long work: how long the server took, where its log is
    assert len(re.findall(r"tritonserver ready in \d+\.\d+s on http://127\.0\.0\.1:\d+", completed.stderr)) == 3
    assert all(Path(entry["logs"]["tritonserver"]).is_file() for entry in report)
    assert triton_processes_under(tmp_path) == []


def test_check_compares_a_user_input_file_when_its_values_differ_from_the_example(user_store, tmp_path):
    rows = pd.DataFrame(
        {"length": [2.5, 19.0, 10.0, 7.25, 14.0], "width": [1.0, 6.5, 4.0, 3.0, 0.5], "count": [0, 8, 3, 1, 6]}
    )
    rows.to_csv(tmp_path / "user-rows.csv", index=False)

    completed = mlflow_triton(
        "check",
        "models:/user-classifier/1",
        "--input",
        str(tmp_path / "user-rows.csv"),
        "--work-dir",
        str(tmp_path / "work"),
        store=user_store,
    )

    assert completed.returncode == 0, completed.stdout + completed.stderr[-6000:]
    assert (
        "; and the input file user-rows.csv (5 rows, json) like pyfunc.predict of it"
        in completed.stdout.splitlines()[0]
    )
    [entry] = json.loads((tmp_path / "work" / "report.json").read_text())
    [checked] = entry["inputs"]
    assert (checked["rows"], checked["equal"], checked["comparison"]["output_0"]["equal"]) == (5, True, True)
    sent = json.loads(Path(checked["request"]).read_text())
    assert {item["name"]: item["data"] for item in sent["inputs"]} == {
        "length": rows["length"].tolist(),
        "width": rows["width"].tolist(),
        "count": rows["count"].tolist(),
    }


@pytest.mark.parametrize("stop_signal", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_serve_answers_the_printed_curl_commands_and_stops_everything_when_signalled(user_store, tmp_path, stop_signal):
    http, grpc, metrics = free_ports()
    work = tmp_path / "work"
    command = [
        str(CONSOLE_SCRIPT),
        "serve",
        "models:/user-network@champion",
        "models:/user-text/1",
        "--http-port",
        str(http),
        "--grpc-port",
        str(grpc),
        "--metrics-port",
        str(metrics),
        "--work-dir",
        str(work),
        "--tracking-uri",
        user_store.tracking_uri,
    ]
    server = subprocess.Popen(
        command,
        cwd=user_store.directory,
        env=user_environment(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    stdout, stderr = LineReader(server.stdout), LineReader(server.stderr)
    try:
        stdout.wait_for("Press Ctrl-C", timeout=900)
        listing = "\n".join(stdout.lines)
        assert (
            f"HTTP http://127.0.0.1:{http}   gRPC 127.0.0.1:{grpc}   metrics http://127.0.0.1:{metrics}/metrics"
            in listing
        )
        curls = {
            name: line.strip() for name, line in re.findall(r"^  (\w+)  \(models:/\S+\)\n( {4}curl .*)$", listing, re.M)
        }
        assert sorted(curls) == ["network", "text_classifier"]

        for name, curl in curls.items():
            answer = subprocess.run(["bash", "-c", curl], capture_output=True, timeout=120)
            served = work / "repository" / name
            root = next((work / "download").glob(f"*/model_repository/{name}")).parents[1]
            comparison = compare(expected_example_tensors(root, served), decode_response(answer.stdout, {}))
            assert all(result["equal"] for result in comparison.values()), (name, comparison, answer.stdout[:500])

        [server_pid] = [
            pid
            for pid in triton_processes_under(work)
            if "tritonserver" in Path(f"/proc/{pid}/cmdline").read_text(errors="replace").split("\0")[0]
        ]
        assert listening_sockets(server_pid) == {("127.0.0.1", http), ("127.0.0.1", grpc), ("127.0.0.1", metrics)}

        server.send_signal(stop_signal)
        assert server.wait(60) == 0, stderr.text()
    finally:
        stop_politely(server)
    assert "tritonserver stopped" in stderr.text()
    assert triton_processes_under(work) == []


@pytest.fixture(scope="module")
def triton_directory(tmp_path_factory):
    """A generated Triton model directory (three columns, the sklearn serving environment)."""
    from examples.sklearn_example import fitted_pipeline

    pipeline, frame = fitted_pipeline()
    package = tmp_path_factory.mktemp("package") / "model"
    triton_sklearn.save_model(
        pipeline,
        package,
        input_example=frame.iloc[:3],
        pyfunc_predict_fn="predict_proba",
        triton_model_name="three_columns",
    )
    return package / "model_repository" / "three_columns"


def broken_copy(repository, tmp_path, edit):
    copy = tmp_path / "source" / repository.name
    shutil.copytree(repository, copy)
    edit(copy)
    return copy


def replace_in(path, old, new):
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


def damage_model_py(model_dir):
    """A served model.py that fails while Triton loads it: Triton's load error and its log tail are quoted."""
    with (model_dir / "1" / "model.py").open("a", encoding="utf-8") as model_py:
        model_py.write('\nraise ImportError("model.py damaged on purpose by the test")\n')


def set_max_batch_size(model_dir):
    """A batching config its contract does not record: check refuses it before starting Triton, as the runtime's
    initialize would (a batched repository's contract records its max_batch_size)."""
    config = model_dir / "config.pbtxt"
    text = config.read_text()
    assert "max_batch_size: 0\n" in text  # the generated config states it explicitly
    config.write_text(text.replace("max_batch_size: 0\n", "max_batch_size: 4\n"))


def change_first_input_datatype(model_dir):
    replace_in(model_dir / "config.pbtxt", "data_type: TYPE_FP64", "data_type: TYPE_FP32")


def drop_first_request_input(model_dir):
    request = model_dir / "request.json"
    body = json.loads(request.read_text())
    body["inputs"] = body["inputs"][1:]
    request.write_text(json.dumps(body))


def add_one_to_every_output(model_dir):
    """A served model.py that answers 200 with changed values: the worst defect, which check must catch."""
    replace_in(
        model_dir / "1" / "model.py",
        "pb_utils.Tensor(name, array) for name, array in outputs.items()",
        "pb_utils.Tensor(name, array + 1) for name, array in outputs.items()",
    )


@pytest.mark.parametrize(
    ("edit", "reason"),
    [
        (
            add_one_to_every_output,
            r"outputs differ from pyfunc.predict: output_0: \d+ of \d+ element\(s\) differ \(allclose "
            rf"rtol={FLOAT_TOLERANCES['float64'][0]} atol={FLOAT_TOLERANCES['float64'][1]}\), first at flat index 0: "
            r"got \S+, expected \S+$",
        ),
        (damage_model_py, r"Triton did not load the model: .*damaged on purpose.* \(log: .+\.log\)"),
        (
            set_max_batch_size,
            r"config.pbtxt: max_batch_size must be 0 \(shapes carry their own batch dimension\), got 4$",
        ),
        (
            change_first_input_datatype,
            r"Triton rejected the shipped request \(HTTP 400\): .*data-type is 'FP64', but model '\w+' expects 'FP32'",
        ),
        (drop_first_request_input, r"Triton rejected the shipped request \(HTTP 400\): .*expected 3 inputs but got 2"),
    ],
    ids=[
        "model-answers-changed-values",
        "model-fails-to-load",
        "config-batching-not-in-contract",
        "config-datatype-changed",
        "request-column-missing",
    ],
)
def test_check_fails_with_triton_error_text_when_repository_is_broken(triton_directory, tmp_path, edit, reason):
    broken = broken_copy(triton_directory, tmp_path, edit)
    lines = []

    status = check_command([str(broken)], work_dir=tmp_path / "work", out=lines.append, progress=None)

    assert status == 1
    verdict = next(line for line in lines if line.startswith(("PASS", "FAIL")))
    assert re.match(rf"FAIL {re.escape(str(broken))}: {reason}", verdict), lines
    if edit is damage_model_py:  # the log tail is quoted with the reason
        assert lines[0].startswith("--- last lines of the Triton log (") and "damaged on purpose" in lines[0]
    assert triton_processes_under(tmp_path) == []


def test_check_interrupted_while_building_the_environment_leaves_no_process_and_no_partial_environment(
    triton_directory, tmp_path
):
    cache = tmp_path / "cache"
    child = subprocess.Popen(
        [str(CONSOLE_SCRIPT), "check", str(triton_directory), "--work-dir", str(tmp_path / "w")],
        env=user_environment(MLFLOW_TRITON_CACHE=str(cache)),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    stderr = LineReader(child.stderr)
    try:
        building = stderr.wait_for("building serving environment", timeout=300)
        pip_log = Path(re.search(r"pip log: (\S+)\)", building).group(1))
        deadline = time.monotonic() + 120
        while "Collecting" not in (pip_log.read_text() if pip_log.exists() else "") and time.monotonic() < deadline:
            time.sleep(0.2)
        assert processes_mentioning(cache), "pip is not running"
        child.send_signal(signal.SIGINT)
        status = child.wait(60)
    finally:
        stop_politely(child)

    assert status == 130
    assert (
        "interrupted (Ctrl-C); every process it started is stopped and nothing half-built is left in the cache"
        in stderr.text()
    )
    assert list((cache / "envs").iterdir()) == []
    deadline = time.monotonic() + 10
    while processes_mentioning(cache) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert processes_mentioning(cache) == []


def test_check_interrupted_while_the_server_starts_leaves_no_tritonserver_or_stub(triton_directory, tmp_path):
    work = tmp_path / "work"
    child = subprocess.Popen(
        [str(CONSOLE_SCRIPT), "check", str(triton_directory), "--work-dir", str(work)],
        env=user_environment(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    stderr = LineReader(child.stderr)
    try:
        stderr.wait_for("starting tritonserver", timeout=900)
        deadline = time.monotonic() + 30
        while not triton_processes_under(work) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert triton_processes_under(work), "tritonserver did not start"
        child.send_signal(signal.SIGINT)
        status = child.wait(60)
    finally:
        stop_politely(child)

    assert status == 130, stderr.text()
    assert triton_processes_under(work) == []


def test_serve_quotes_pip_and_each_models_line_when_requirements_cannot_share_an_environment(
    triton_directory, tmp_path, monkeypatch
):
    from mlflow_triton.local import TritonInstallation, serve_models
    from mlflow_triton.local.errors import RepositoryAssemblyError

    monkeypatch.setenv("MLFLOW_TRITON_CACHE", str(tmp_path / "cache"))
    new, old = tmp_path / "models" / "new_numpy", tmp_path / "models" / "old_numpy"
    for directory, line in ((new, "numpy>=2.0"), (old, "numpy<1.25")):
        shutil.copytree(triton_directory, directory)
        replace_in(directory / "config.pbtxt", 'name: "three_columns"', f'name: "{directory.name}"')
        (directory / "requirements.txt").write_text(f"{line}\n")  # only numpy: pip resolves it in seconds

    http, grpc, metrics = free_ports()

    with pytest.raises(RepositoryAssemblyError) as raised:
        serve_models(
            [str(new), str(old)],
            tmp_path / "work",
            TritonInstallation.bundled(progress=None),
            progress=None,
            http_port=http,
            grpc_port=grpc,
            metrics_port=metrics,
        )

    message = str(raised.value)
    assert message.startswith(
        "the models' requirements cannot share one serving environment: pip cannot install "
        "them together under the Triton installation's constraints.\npip said:\n"
    ), message
    assert f"  {new} (new_numpy) requirements.txt: numpy>=2.0" in message
    assert f"  {old} (old_numpy) requirements.txt: numpy<1.25" in message
    assert list((tmp_path / "cache" / "envs").iterdir()) == []
    assert processes_mentioning(tmp_path / "cache") == [] and triton_processes_under(tmp_path) == []
