"""Stopping what check and serve started: a second Ctrl-C still kills it, and logs are this run's."""

import subprocess
import sys

import pytest

from mlflow_triton.local import TritonInstallation, TritonServer
from mlflow_triton.local.errors import TritonStartError
from mlflow_triton.local.serving_env import _stop_process_group
from tests.support.fake_triton import fake_triton

IGNORES_SIGTERM = [
    sys.executable,
    "-c",
    "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('ready', flush=True); time.sleep(120)",
]


class CtrlCWhileWaiting(subprocess.Popen):
    """A process whose first bounded wait is interrupted, as a second Ctrl-C during the grace period does."""

    def wait(self, timeout=None):
        if timeout is not None:
            raise KeyboardInterrupt
        return super().wait()


def start_ignoring_sigterm():
    proc = CtrlCWhileWaiting(IGNORES_SIGTERM, stdout=subprocess.PIPE, start_new_session=True)
    assert proc.stdout.readline() == b"ready\n"
    return proc


def test_stop_process_group_kills_the_group_before_propagating_when_ctrl_c_interrupts_the_grace_period():
    proc = start_ignoring_sigterm()

    with pytest.raises(KeyboardInterrupt):
        _stop_process_group(proc)
    assert proc.returncode is not None


@pytest.fixture
def failing_triton(tmp_path):
    """A "tritonserver" that prints one line and exits 3 at once."""
    return TritonInstallation.custom(*fake_triton(tmp_path, "echo 'this run: fake tritonserver failed'\nexit 3"))


def test_server_stop_kills_the_server_and_closes_its_log_when_ctrl_c_interrupts_the_grace_period(
    failing_triton, tmp_path
):
    server = TritonServer(tmp_path, "m", installation=failing_triton, log_path=tmp_path / "server.log")
    server._log_file = log = open(tmp_path / "server.log", "ab")  # noqa: SIM115 (the server closes it)
    server._proc = proc = start_ignoring_sigterm()

    with pytest.raises(KeyboardInterrupt):
        server.stop()
    assert (proc.returncode is not None, log.closed, server._log_file) == (True, True, None)


def test_server_start_reports_only_this_runs_log_and_does_not_retry_when_an_old_log_says_address_in_use(
    failing_triton, tmp_path
):
    log_path = tmp_path / "tritonserver-m.log"
    log_path.write_text("E0101 old run: Address already in use\n" * 50)
    server = TritonServer(tmp_path, "m", installation=failing_triton, log_path=log_path)

    with pytest.raises(TritonStartError, match="tritonserver exited with status 3 during startup") as raised:
        server.start()
    assert "old run" not in raised.value.log_tail
    assert log_path.read_text().count("this run: fake tritonserver failed") == 1


CTRL_C_DURING_THE_FORK = """
import os, signal, sys, time
from mlflow_triton.local.serving_env import _run_logged


class Quiet:
    def step(self, *args, **kwargs):
        pass


fired = []


def ctrl_c_once():  # the parent's at-fork hook: a Ctrl-C that lands while Popen forks
    if not fired:
        fired.append(True)
        os.kill(os.getpid(), signal.SIGINT)


os.register_at_fork(before=ctrl_c_once)
with open(sys.argv[1], "w") as log:
    try:
        sleeper = [sys.executable, "-c", "import time; time.sleep(30)"]
        status = _run_logged(sleeper, log, Quiet(), time.monotonic(), "pip")
    except KeyboardInterrupt:
        print("interrupted", flush=True)
    else:
        print(f"went on: {status}", flush=True)
"""


def test_pip_runner_raises_the_interrupt_and_stops_pip_when_ctrl_c_lands_while_it_forks(tmp_path):
    # Without the signals held across the fork, Python drops the Ctrl-C inside its at-fork hook and
    # the build goes on as if nothing happened.
    done = subprocess.run(
        [sys.executable, "-c", CTRL_C_DURING_THE_FORK, str(tmp_path / "pip.log")],
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert done.stdout.strip() == "interrupted", done.stderr
