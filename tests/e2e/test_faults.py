"""Faults on the real Triton 2.51 with load running: what clients see, and that nothing is lost or left behind.

The example Pipeline's generated repository is served (the sklearn serving environment, cached) while
three clients -- HTTP JSON, HTTP binary, gRPC -- send valid requests in a loop
(``tests/support/background_load.py``). Every answer any client got is compared with
``pyfunc.predict`` of its request: a fault may cost answers, never change one.

Observed on Triton 2.51 (and asserted here, as the README documents it):

* **The stub process killed** (SIGKILL): Triton does not restart it and keeps reporting the model and
  the server ready; every request then fails with HTTP 500 / INTERNAL "Stub process '<model>_0_0' is not
  healthy." (after about a second each, one at a time). Unloading and loading the model
  (``POST /v2/repository/models/<model>/unload``, then ``.../load``) starts a new stub, which answers
  correctly. (``load`` alone reloads only when Triton sees a file of the model directory changed since
  the last load -- such as the ``__pycache__`` Python writes at the first one -- so it is not a remedy.)
* **Unload and load** under load: unloading returns at once; until the model is loaded again requests
  fail with HTTP 404 / NOT_FOUND "Request for unknown model: '<model>' has no available versions".
* **SIGTERM to tritonserver** under ``mlflow-triton serve``: Triton stops accepting connections, keeps
  answering requests on open HTTP keep-alive connections (correctly) for up to its exit timeout (10 s),
  unloads the model (a request arriving then gets 404 / NOT_FOUND "unknown model") and exits; clients
  get connection errors (refused, reset, closed without response) or gRPC UNAVAILABLE. ``serve``
  reports "tritonserver exited by itself", exits with status 1, and no tritonserver or stub process is
  left. (Sent to ``serve`` itself, SIGTERM makes it stop the server the same way and exit with 0:
  ``tests/e2e/test_cli.py``.)
* **A killed stub outlives its unload**: the unloaded instance stays "live" in Triton, so stopping the
  server later waits the whole exit timeout and ends with "Exit timeout expired. Exiting immediately."

How the tests synchronise: on what the clients and the server report, polled with a deadline
(``BackgroundLoad.wait_for_answers`` / ``wait_for_failures``, ``wait_until``), never on a sleep. The stub
and unload tests share one module-scoped server and do not depend on their order: each starts from the
``served`` fixture, which first brings the model back to ready with one live stub whatever an earlier
test left. The load-error tests load broken copies under other names beside it; the ``serve`` tests
start their own servers, on explicit free ports chosen again when one was taken meanwhile.
"""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from benchmarks.soak import MODEL_NAME, Oracle, save_soak_model, start_server
from benchmarks.soak_client import stub_pids
from benchmarks.soak_requests import Layout
from tests.support.background_load import BackgroundLoad
from tests.support.ports import PORT_TAKEN_MESSAGE, PortTaken, with_free_ports
from tests.support.processes import LineReader, stop_politely, triton_processes_under

pytestmark = pytest.mark.triton

CONSOLE_SCRIPT = Path(sys.executable).with_name("mlflow-triton")
STUB_NOT_HEALTHY = f"Stub process '{MODEL_NAME}_0_0' is not healthy."
UNKNOWN_MODEL = f"Request for unknown model: '{MODEL_NAME}' has no available versions"
# What a client may see when the server it talks to goes away (http.client / socket errors, gRPC codes).
CONNECTION_ERRORS = re.compile(
    r"^(ConnectionRefusedError|ConnectionResetError|BrokenPipeError|RemoteDisconnected|ConnectionAbortedError"
    r"|IncompleteRead|BadStatusLine|TimeoutError): |^failed to connect to all addresses|^Socket closed"
    r"|^recvmsg:Connection reset by peer|^Connection reset|^Broken pipe|^Stream removed|^GOAWAY received"
)


@pytest.fixture(scope="module")
def soak_model(tmp_path_factory):
    """(MLflow package, served repository copy, layout, oracle) of the example Pipeline."""
    package, model_dir = save_soak_model(tmp_path_factory.mktemp("faults"))
    return package, model_dir, Layout.from_repository(model_dir), Oracle(package, model_dir)


@pytest.fixture(scope="module")
def server(soak_model):
    _, model_dir, _, _ = soak_model
    started = time.monotonic()
    # A killed stub's instance never finishes unloading: Triton waits its whole exit timeout (stop_timeout - 5 s).
    server = start_server(model_dir, model_dir.parents[1] / "tritonserver.log", progress=None, stop_timeout=8.0)
    print(f"[timing] server ready: {time.monotonic() - started:.1f}s")
    try:
        yield server
    finally:
        server.__exit__(None, None, None)


@pytest.fixture
def served(server):
    """The module's server with the model ready and one live stub, whatever an earlier test left behind."""
    if status(server, f"/v2/models/{MODEL_NAME}/ready") != 200 or len(stub_pids(server.pid)) != 1:
        assert control(server, "unload") == (200, "")
        assert control(server, "load") == (200, "")
    wait_until(
        lambda: status(server, f"/v2/models/{MODEL_NAME}/ready") == 200 and len(stub_pids(server.pid)) == 1,
        120,
        "the model ready with one stub",
    )
    return server


def control(server, action, model=MODEL_NAME):
    """``POST /v2/repository/models/<model>/<action>``; returns (HTTP status, error text)."""
    request = urllib.request.Request(
        f"{server.url}/v2/repository/models/{model}/{action}", data=b"{}", headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=300) as response:
            return response.status, ""
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read()).get("error", "")


def status(server, path):
    try:
        with urllib.request.urlopen(server.url + path, timeout=10) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


def wait_until(condition, timeout, what):
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout}s")
        time.sleep(0.1)


def failure_messages(load, **window):
    return {message for (_, message) in load.failures(**window)}


def test_triton_answers_500_stub_not_healthy_until_unload_and_load_when_the_stub_process_is_killed(served, soak_model):
    server = served
    _, _, layout, oracle = soak_model
    [stub] = stub_pids(server.pid)

    with BackgroundLoad(server.http_port, server.grpc_url, layout, seed=1) as load:
        load.wait_for_answers(30)
        killed = time.monotonic()
        os.kill(stub, signal.SIGKILL)
        wait_until(lambda: stub_pids(server.pid) == [], 60, "the killed stub is still listed")
        load.wait_for_failures(3, sent_after=killed + 0.5)  # a request sent at the kill may still be answered
        after_kill = (
            status(server, f"/v2/models/{MODEL_NAME}/ready"),
            status(server, "/v2/health/ready"),
            stub_pids(server.pid),
        )
        reload_started = time.monotonic()
        assert control(server, "unload") == (200, "")
        assert control(server, "load") == (200, "")
        reloaded = time.monotonic()
        load.wait_for_answers(30, after=reloaded)

    assert after_kill == (200, 200, [])  # Triton 2.51 neither notices nor restarts the stub
    [new_stub] = stub_pids(server.pid)
    assert new_stub != stub
    assert load.wrong_answers(oracle) == []
    assert load.failures(answered_before=killed) == {}
    assert failure_messages(load) <= {STUB_NOT_HEALTHY, UNKNOWN_MODEL}
    dead_window = load.failures(sent_after=killed + 0.5, sent_before=reload_started)
    assert {(code, message) for code, message in dead_window} <= {
        ("500", STUB_NOT_HEALTHY),
        ("INTERNAL", STUB_NOT_HEALTHY),
    }
    assert sum(dead_window.values()) >= 3
    assert failure_messages(load, sent_after=reload_started, sent_before=reloaded) <= {STUB_NOT_HEALTHY, UNKNOWN_MODEL}
    assert load.failures(sent_after=reloaded) == {}


def test_triton_answers_404_meanwhile_and_correctly_afterwards_when_the_model_is_unloaded_and_loaded(
    served, soak_model
):
    server = served
    _, _, layout, oracle = soak_model
    [stub] = stub_pids(server.pid)

    with BackgroundLoad(server.http_port, server.grpc_url, layout, seed=2) as load:
        load.wait_for_answers(30)
        unloading = time.monotonic()
        assert control(server, "unload") == (200, "")
        wait_until(lambda: status(server, f"/v2/models/{MODEL_NAME}/ready") != 200, 30, "model still ready")
        not_ready = time.monotonic()
        unloaded_failures = load.wait_for_failures(1, sent_after=not_ready)
        assert control(server, "load") == (200, "")
        loaded = time.monotonic()
        load.wait_for_answers(30, after=loaded)

    assert {(code, message) for code, message in unloaded_failures} <= {
        ("404", UNKNOWN_MODEL),
        ("NOT_FOUND", UNKNOWN_MODEL),
    }
    assert unloaded_failures
    assert load.wrong_answers(oracle) == []
    assert load.failures(answered_before=unloading) == {}
    assert failure_messages(load, sent_after=unloading, sent_before=loaded) <= {UNKNOWN_MODEL}
    assert load.failures(sent_after=loaded) == {}
    [new_stub] = stub_pids(server.pid)
    assert new_stub != stub


def test_serve_exits_leaving_no_process_and_no_wrong_answer_when_tritonserver_gets_sigterm_with_requests_in_flight(
    soak_model, tmp_path
):
    """``mlflow-triton serve`` of the generated directory; SIGTERM to the server it started.

    (SIGTERM to the command itself stops the server the same way; ``tests/e2e/test_cli.py`` checks that it leaves
    no process behind.)
    """
    _, model_dir, layout, oracle = soak_model
    command, stderr, work, (http, grpc, _) = with_free_ports(
        lambda *ports: start_serve(model_dir, tmp_path / f"work-{ports[0]}", *ports)
    )
    try:
        [server_pid] = [
            pid
            for pid in triton_processes_under(work)
            if Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].endswith(b"tritonserver")
        ]
        with BackgroundLoad(http, f"127.0.0.1:{grpc}", layout, seed=3) as load:
            load.wait_for_answers(30)
            signalled = time.monotonic()
            os.kill(server_pid, signal.SIGTERM)
            exit_status = command.wait(120)
            exited = time.monotonic()
            load.wait_for_failures(1, sent_after=exited)  # the server is gone: nothing answers any more
    finally:
        stop_politely(command)
    print(
        f"[timing] SIGTERM to tritonserver -> serve exited: {exited - signalled:.1f}s; outcomes: "
        f"{sum(1 for r in load.snapshot() if r.outcome.answer_class == 'answered')} answers, "
        f"{load.failures(sent_after=signalled)}"
    )

    assert load.wrong_answers(oracle) == []
    assert load.failures(answered_before=signalled) == {}
    unexplained = {
        message
        for message in failure_messages(load, sent_after=signalled)
        if not CONNECTION_ERRORS.search(message) and message != UNKNOWN_MODEL
    }
    assert unexplained == set()
    assert load.failures(sent_after=exited)
    assert exit_status == 1, stderr.text()
    assert re.search(r"tritonserver exited by itself with status -?\d+", stderr.text())
    assert triton_processes_under(work) == []


def start_serve(model_dir, work, http, grpc, metrics):
    """``mlflow-triton serve model_dir`` on those ports, once it says it serves; (process, stderr, work, ports).

    Raises :class:`PortTaken` when the command exits because one of the ports was taken meanwhile.
    """
    environment = {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_") or k == "MLFLOW_TRITON_CACHE"}
    command = subprocess.Popen(
        [
            str(CONSOLE_SCRIPT),
            "serve",
            str(model_dir),
            "--http-port",
            str(http),
            "--grpc-port",
            str(grpc),
            "--metrics-port",
            str(metrics),
            "--work-dir",
            str(work),
        ],
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    stdout, stderr = LineReader(command.stdout), LineReader(command.stderr)
    try:
        stdout.wait_for("Press Ctrl-C", timeout=600)
    except AssertionError:
        stop_politely(command)
        if PORT_TAKEN_MESSAGE.search(stderr.text()):
            raise PortTaken(stderr.text()) from None
        raise
    return command, stderr, work, (http, grpc, metrics)


# -- a model whose initialize fails: the runtime's message is Triton's load error -------------------------------


def remove_artifact(model_dir):
    shutil.rmtree(model_dir / "1" / "artifact")


def damage_model_file(model_dir):
    [model_file] = [path for path in (model_dir / "1" / "artifact").iterdir() if path.stem == "model"]
    model_file.write_bytes(b"\x80\x04 not a model any more")


def unsupported_mapping_version(model_dir):
    config = model_dir / "config.pbtxt"
    text = config.read_text()
    assert '\\"version\\":2' in text
    config.write_text(text.replace('\\"version\\":2', '\\"version\\":99'))


BROKEN_MODELS = {
    "missing-artifact": (
        "skops",
        remove_artifact,
        r"ModelLoadError: The MLflow model directory {artifact} is missing: a generated Triton model directory carries "
        r"a complete copy of the logged model in <version>/artifact/; fetch the directory again with "
        r"mlflow_triton\.triton\.load_model\(model_uri, dst_path=\.\.\.\) and serve that copy",
    ),
    "damaged-skops-file": (
        "skops",
        damage_model_file,
        r"ModelLoadError: MLflow could not load the sklearn model in {artifact}: BadZipFile: File is not a zip file\. "
        r"Its files may be damaged or incomplete",
    ),
    "damaged-pickle": (
        "cloudpickle",
        damage_model_file,
        r"ModelLoadError: MLflow could not load the sklearn model in {artifact}: UnpicklingError: .+\. Its files may "
        r"be damaged or incomplete",
    ),
    "unsupported-mapping-version": (
        "skops",
        unsupported_mapping_version,
        r"ContractError: Mapping version 99 is not supported; supported: 1, 2, 3, 4",
    ),
}


@pytest.fixture(scope="module")
def cloudpickle_repository(tmp_path_factory):
    """The example Pipeline saved with ``serialization_format="cloudpickle"`` (a ``model.pkl``)."""
    from examples.sklearn_example import fitted_pipeline
    from mlflow_triton import sklearn as triton_sklearn

    pipeline, frame = fitted_pipeline()
    package = tmp_path_factory.mktemp("cloudpickle") / "package"
    triton_sklearn.save_model(
        pipeline,
        package,
        input_example=frame.iloc[:3],
        pyfunc_predict_fn="predict_proba",
        serialization_format="cloudpickle",
        triton_model_name=MODEL_NAME,
    )
    return package / "model_repository" / MODEL_NAME


def broken_copy(source, repository, name, edit):
    """``source`` copied into the served ``repository`` as model ``name``, then broken by ``edit``."""
    target = repository / name
    shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__"))
    config = target / "config.pbtxt"
    config.write_text(config.read_text().replace(f'name: "{MODEL_NAME}"', f'name: "{name}"', 1))
    edit(target)
    return target


@pytest.mark.parametrize("case", BROKEN_MODELS)
def test_triton_refuses_the_model_with_the_runtime_message_as_load_error_when_initialize_fails(
    server, soak_model, cloudpickle_repository, case
):
    _, model_dir, _, _ = soak_model
    serialization, edit, reason = BROKEN_MODELS[case]
    name = f"broken_{case.replace('-', '_')}"
    source = model_dir if serialization == "skops" else cloudpickle_repository
    broken = broken_copy(source, model_dir.parent, name, edit)
    expected = reason.format(artifact=re.escape(str(broken / "1" / "artifact")))

    load_status, load_error = control(server, "load", name)

    assert load_status == 400
    assert re.match(
        rf"load failed for model '{name}': version 1 is at UNAVAILABLE state: Internal: {expected}", load_error
    ), load_error
    [entry] = [entry for entry in server_index(server) if entry["name"] == name]
    assert entry["state"] == "UNAVAILABLE"
    assert re.match(rf"Internal: {expected}", entry["reason"]), entry["reason"]
    assert status(server, f"/v2/models/{MODEL_NAME}/ready") == 200  # the served model is untouched
    assert status(server, f"/v2/models/{name}/ready") == 400


def server_index(server):
    request = urllib.request.Request(
        f"{server.url}/v2/repository/index", data=b"{}", headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


def test_serve_fails_quoting_the_runtime_load_error_when_the_model_file_is_damaged(soak_model, tmp_path, capsys):
    """``check`` would refuse earlier: its ``pyfunc.predict`` oracle cannot load the file either."""
    from mlflow_triton.local import serve_command

    _, model_dir, _, _ = soak_model
    broken = tmp_path / "source" / MODEL_NAME
    shutil.copytree(model_dir, broken, ignore=shutil.ignore_patterns("__pycache__"))
    damage_model_file(broken)

    def serve(http, grpc, metrics):
        exit_status = serve_command(
            [str(broken)],
            http_port=http,
            grpc_port=grpc,
            metrics_port=metrics,
            work_dir=tmp_path / "work",
            out=lambda line: None,
        )
        error = capsys.readouterr().err
        if exit_status == 1 and PORT_TAKEN_MESSAGE.search(error):
            raise PortTaken(error)
        return exit_status, error

    exit_status, error = with_free_ports(serve)

    assert exit_status == 1
    assert re.search(
        rf"^mlflow-triton serve: error: model '{MODEL_NAME}' failed to load\nTriton says: Internal: "
        r"ModelLoadError: MLflow could not load the sklearn model in \S+/1/artifact: BadZipFile: File is "
        r"not a zip file\. Its files may be damaged or incomplete \(fetch the directory again with "
        r"mlflow_triton\.triton\.load_model\(model_uri, dst_path=\.\.\.\) and serve that copy\), or the "
        r"serving environment may lack a package or version the model needs \(compare it with "
        r"requirements\.txt\)$",
        error,
        re.M,
    ), error
    assert triton_processes_under(tmp_path) == []
