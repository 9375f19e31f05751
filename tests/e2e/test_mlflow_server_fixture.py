"""The ``mlflow server`` test helper stops every process it started, also on failure."""

import socket
import sys
from pathlib import Path

import pytest

from tests.support.mlflow_server import HOST, MlflowServerError, running_mlflow_server

pytestmark = [
    pytest.mark.mlflow_server,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads process groups from /proc"),
]


def _living_members(process_group):
    """Pids of non-zombie processes in ``process_group``."""
    members = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        state, pgrp = fields[0], int(fields[2])
        if pgrp == process_group and state != "Z":
            members.append(int(stat.parent.name))
    return members


def _accepts_connections(url):
    port = int(url.rsplit(":", 1)[1])
    with socket.socket() as sock:
        sock.settimeout(1)
        return sock.connect_ex((HOST, port)) == 0


def test_server_is_healthy_on_loopback_and_stopped_when_the_body_raises(tmp_path):
    with pytest.raises(RuntimeError, match="test body failed"):
        with running_mlflow_server(tmp_path) as server:
            started = (server.url, server.pid, _living_members(server.pid), _accepts_connections(server.url))
            raise RuntimeError("test body failed")

    url, pid, members_while_running, accepted = started
    assert url.startswith(f"http://{HOST}:")
    assert accepted
    assert len(members_while_running) >= 2  # the mlflow CLI and its uvicorn server
    assert _living_members(pid) == []
    assert not _accepts_connections(url)
    assert (tmp_path / "mlflow.db").is_file()


def test_server_is_stopped_when_it_does_not_become_healthy_in_time(tmp_path, monkeypatch):
    started = []
    import tests.support.mlflow_server as helper

    start = helper._start
    monkeypatch.setattr(helper, "_start", lambda *args: started.append(start(*args)) or started[-1])

    with pytest.raises(MlflowServerError, match="was not healthy after 1 s; log:"):
        with running_mlflow_server(tmp_path, startup_timeout=1):
            pass

    [process] = started
    assert process.returncode is not None
    assert _living_members(process.pid) == []
