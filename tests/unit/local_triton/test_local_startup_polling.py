"""TritonServer's startup poll: a model is called missing only on an index that answered."""

import pytest

from mlflow_triton.local import TritonInstallation, TritonServer
from mlflow_triton.local.errors import TritonStartError
from tests.support.fake_triton import fake_triton


class AliveProcess:
    def poll(self):
        return None


def polling_server(tmp_path, monkeypatch, indexes):
    """A server whose process stays alive and whose repository index answers ``indexes`` in turn."""
    installation = TritonInstallation.custom(*fake_triton(tmp_path, "exit 0"))
    server = TritonServer(tmp_path, "m", installation=installation, log_path=tmp_path / "server.log")
    server._proc = AliveProcess()
    answers = iter(indexes)
    monkeypatch.setattr(server, "_repository_index", lambda: next(answers))
    monkeypatch.setattr(server, "_status", lambda path: 200)  # endpoints answer from now on
    monkeypatch.setattr(server, "_fail", lambda message, reason=None: TritonStartError(message, reason, "", None))
    monkeypatch.setattr("time.sleep", lambda seconds: None)
    return server


def test_an_index_that_did_not_answer_yet_does_not_make_the_model_missing(tmp_path, monkeypatch):
    # The HTTP endpoint opens between the first index poll and the health probes (seen in CI).
    server = polling_server(tmp_path, monkeypatch, [None, [{"name": "m", "state": "READY"}]])

    server._wait_ready()  # returns: the model is ready


def test_a_model_absent_from_an_answering_index_is_reported_with_the_repository(tmp_path, monkeypatch):
    server = polling_server(tmp_path, monkeypatch, [None, [{"name": "other", "state": "READY"}]])

    with pytest.raises(TritonStartError, match="model 'm' is not in the repository"):
        server._wait_ready()


def test_an_unavailable_model_is_reported_with_triton_s_reason(tmp_path, monkeypatch):
    server = polling_server(tmp_path, monkeypatch, [[{"name": "m", "state": "UNAVAILABLE", "reason": "boom"}]])

    with pytest.raises(TritonStartError, match="model 'm' failed to load") as raised:
        server._wait_ready()
    assert "boom" in str(raised.value)
