"""The "Starting Triton by hand" bash block of docs/repository.md runs as written and serves the model (#18.5d).

The block is taken from docs/repository.md (the first ```bash block under the heading) and run by ``bash -e``
in a fresh working directory, as a reader runs it: it installs the wheel's Triton with pip, builds a
serving environment from the repository's ``requirements.txt``, and starts ``tritonserver`` in the
foreground. What the reader has before it is what the block's first line names: the copy
``triton.load_model(uri, dst_path="serving")`` returned, here of the sklearn example (Triton model
``classifier``) logged to a sqlite store. The only change is the three port numbers (free ones instead
of 8000-8002, which another server on this machine may hold). The served model must become ready and
answer the shipped request like ``pyfunc.predict``.

It downloads ``nvidia-pytriton`` and the serving environment's packages as the reader would (pip's
cache makes repeated runs quick) and takes a minute or two.
"""

import os
import re
import signal
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from mlflow_triton import triton
from mlflow_triton.local import send_shipped_request
from mlflow_triton.local._compare import compare
from tests.support.environment import preserved_environment
from tests.support.oracle import expected_example_tensors
from tests.support.ports import free_ports
from tests.support.processes import triton_processes_under

PAGE = Path(__file__).resolve().parents[2] / "docs" / "repository.md"
HEADING = "## Starting Triton by hand"
DOCUMENTED_PORTS = {"--http-port": 8000, "--grpc-port": 8001, "--metrics-port": 8002}

pytestmark = [pytest.mark.triton, pytest.mark.filterwarnings("ignore")]


def by_hand_block(text):
    """The first ```bash block after the "Starting Triton by hand" heading."""
    section = text[text.index(HEADING) :]
    return re.search(r"^```bash\n(.*?)^```", section, flags=re.MULTILINE | re.DOTALL).group(1)


def with_ports(block, ports):
    """``block`` with each documented port option set to the free port given for it."""
    for (option, documented), port in zip(DOCUMENTED_PORTS.items(), ports):
        block, count = re.subn(rf"{option} {documented}\b", f"{option} {port}", block)
        assert count == 1, f"{option} {documented} is not in the block of {PAGE.name}"
    return block


def reader_environment():
    """A reader's shell: no virtualenv or MLflow settings of this test session."""
    return {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("MLFLOW_") and k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME")
    }


def ready(url):
    try:
        with urllib.request.urlopen(f"{url}/v2/health/ready", timeout=5) as response:
            return response.status == 200
    except OSError:
        return False


def stop(process):
    """SIGTERM to the block's process group (bash and the server it started), then SIGKILL."""
    if process.poll() is not None:
        return
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=30)


@pytest.fixture
def serving_copy(tmp_path):
    """The sklearn example logged to a sqlite store in ``tmp_path`` and fetched to ``tmp_path/serving``."""
    from examples.runner.cli import use_local_store
    from examples.sklearn_example import log_example

    with preserved_environment():
        store = tmp_path / "store"
        store.mkdir()
        info = log_example(use_local_store(store), registered_model_name="by-hand")
        return triton.load_model(info.model_uri, dst_path=str(tmp_path / "serving"))


def test_readme_triton_by_hand_block_serves_the_model_like_pyfunc_when_run_as_written(serving_copy, tmp_path):
    block = by_hand_block(PAGE.read_text())
    assert serving_copy == tmp_path / "serving" / "model_repository" / "classifier"  # the block's DIR
    ports = free_ports(3)
    log_path = tmp_path / "by-hand.log"

    with open(log_path, "w") as log:
        process = subprocess.Popen(
            ["bash", "-e", "-c", with_ports(block, ports)],
            cwd=tmp_path,
            env=reader_environment(),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    url = f"http://127.0.0.1:{ports[0]}"
    try:
        deadline = time.monotonic() + 900
        while not ready(url):
            assert process.poll() is None, f"the block ended ({process.returncode}):\n{log_path.read_text()[-6000:]}"
            assert time.monotonic() < deadline, f"not ready after 900s:\n{log_path.read_text()[-6000:]}"
            time.sleep(1)
        response = send_shipped_request(url, serving_copy)
        comparison = compare(expected_example_tensors(str(serving_copy.parents[1]), serving_copy), response.outputs)
    finally:
        stop(process)

    assert response.form == "json"
    assert comparison and all(result["equal"] for result in comparison.values()), comparison
    assert triton_processes_under(tmp_path) == []
