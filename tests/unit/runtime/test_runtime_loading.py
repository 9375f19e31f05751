"""runtime/loading.py: device placement, the load_predictor lock and environment restoration."""

import os
import threading
import time

import mlflow.pyfunc
import pytest

from mlflow_triton.runtime import loading
from mlflow_triton.runtime.loading import (
    DEVICE_VARIABLE,
    OFFLINE_ENVIRONMENT,
    device_for_instance,
    device_setting,
    load_predictor,
    temporary_environment,
)

TOUCHED = (DEVICE_VARIABLE, *OFFLINE_ENVIRONMENT)


@pytest.fixture
def clean_environment(monkeypatch):
    """Start every test with none of the variables load_predictor sets."""
    for name in TOUCHED:
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize(
    ("kind", "device_id", "device"),
    [
        ("CPU", "0", "cpu"),
        ("CPU", "3", "cpu"),
        ("KIND_CPU", 0, "cpu"),
        ("MODEL", "0", "cpu"),
        (None, None, "cpu"),
        ("GPU", "0", "cuda:0"),
        ("GPU", "1", "cuda:1"),
        ("GPU", 1, "cuda:1"),
        ("gpu", "2", "cuda:2"),
        ("KIND_GPU", "1", "cuda:1"),
        ("GPU", None, "cuda:0"),
    ],
)
def test_device_for_instance_follows_triton_instance_when_kind_and_id_are_given(kind, device_id, device):
    assert device_for_instance(kind, device_id) == device


@pytest.mark.parametrize(
    ("flavor", "device", "setting"),
    [
        ("pytorch", "cpu", "cpu"),
        ("pytorch", "cuda:1", "cuda:1"),
        ("sklearn", "cpu", "cpu"),
        ("transformers", "cpu", "-1"),
        ("transformers", "cuda:0", "0"),
        ("transformers", "cuda:1", "1"),
    ],
)
def test_device_setting_speaks_the_flavors_dialect_when_device_is_given(flavor, device, setting):
    assert device_setting(flavor, device) == setting


@pytest.mark.parametrize(
    ("flavor", "device", "setting"),
    [
        ("pytorch", "cuda:1", "cuda:1"),
        ("pytorch", "cpu", "cpu"),
        ("transformers", "cuda:1", "1"),
        ("transformers", "cpu", "-1"),
    ],
)
def test_load_predictor_sets_device_and_offline_variables_when_loading(
    monkeypatch, clean_environment, flavor, device, setting
):
    seen = {}

    def fake_load_model(uri):
        seen["uri"] = uri
        seen["environment"] = {name: os.environ.get(name) for name in TOUCHED}
        return "predictor"

    monkeypatch.setattr(mlflow.pyfunc, "load_model", fake_load_model)

    predictor = load_predictor("/models/m/1/artifact", flavor, device)

    assert predictor == "predictor"
    assert seen["uri"] == "/models/m/1/artifact"
    assert seen["environment"] == {**OFFLINE_ENVIRONMENT, DEVICE_VARIABLE: setting}


def test_load_predictor_never_overlaps_loads_when_called_from_many_threads(monkeypatch, clean_environment):
    threads_count = 8
    intervals = []
    devices_seen = []
    record = threading.Lock()
    start = threading.Barrier(threads_count)

    def slow_load_model(uri):
        entered = time.monotonic()
        devices_seen.append((uri, os.environ[DEVICE_VARIABLE]))
        time.sleep(0.02)
        with record:
            intervals.append((entered, time.monotonic()))
        return uri

    monkeypatch.setattr(mlflow.pyfunc, "load_model", slow_load_model)

    def load(index):
        start.wait()
        load_predictor(f"/artifact/{index}", "pytorch", f"cuda:{index}")

    threads = [threading.Thread(target=load, args=(i,)) for i in range(threads_count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    intervals.sort()
    assert len(intervals) == threads_count
    assert all(earlier[1] <= later[0] for earlier, later in zip(intervals, intervals[1:]))
    assert sorted(devices_seen) == sorted((f"/artifact/{i}", f"cuda:{i}") for i in range(threads_count))
    assert DEVICE_VARIABLE not in os.environ


def test_load_predictor_releases_the_lock_when_loading_fails(monkeypatch):
    def failing_load_model(uri):
        raise OSError("disk gone")

    monkeypatch.setattr(mlflow.pyfunc, "load_model", failing_load_model)
    with pytest.raises(OSError, match="disk gone"):
        load_predictor("/artifact", "sklearn", "cpu")

    assert not loading._LOAD_LOCK.locked()


@pytest.mark.parametrize("outcome", ["success", "failure"])
def test_load_predictor_restores_environment_exactly_when_loading_ends(monkeypatch, outcome):
    # One variable set before (with a value load_predictor overrides), the others unset.
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    monkeypatch.setenv(DEVICE_VARIABLE, "cuda:7")
    for name in ("TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE", "HF_HUB_DISABLE_TELEMETRY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("MLFLOW_HUGGINGFACE_USE_DEVICE_MAP", "")
    before = dict(os.environ)

    def fake_load_model(uri):
        assert os.environ["HF_HUB_OFFLINE"] == "1"
        assert os.environ[DEVICE_VARIABLE] == "cpu"
        if outcome == "failure":
            raise RuntimeError("cannot load")
        return "predictor"

    monkeypatch.setattr(mlflow.pyfunc, "load_model", fake_load_model)
    if outcome == "failure":
        with pytest.raises(RuntimeError, match="cannot load"):
            load_predictor("/artifact", "pytorch", "cpu")
    else:
        load_predictor("/artifact", "pytorch", "cpu")

    assert dict(os.environ) == before


def test_temporary_environment_restores_set_and_unset_variables_when_the_body_raises(monkeypatch):
    monkeypatch.setenv("MLFLOW_TRITON_TEST_SET", "before")
    monkeypatch.delenv("MLFLOW_TRITON_TEST_UNSET", raising=False)
    before = dict(os.environ)

    with pytest.raises(KeyError, match="inside"):
        with temporary_environment({"MLFLOW_TRITON_TEST_SET": "during", "MLFLOW_TRITON_TEST_UNSET": "during"}):
            raise KeyError("inside")

    assert dict(os.environ) == before


def test_temporary_environment_applies_values_when_inside_the_block(monkeypatch):
    monkeypatch.setenv("MLFLOW_TRITON_TEST_SET", "before")
    monkeypatch.delenv("MLFLOW_TRITON_TEST_UNSET", raising=False)

    with temporary_environment({"MLFLOW_TRITON_TEST_SET": "during", "MLFLOW_TRITON_TEST_UNSET": ""}):
        inside = (os.environ["MLFLOW_TRITON_TEST_SET"], os.environ["MLFLOW_TRITON_TEST_UNSET"])

    assert inside == ("during", "")
    assert os.environ["MLFLOW_TRITON_TEST_SET"] == "before"
    assert "MLFLOW_TRITON_TEST_UNSET" not in os.environ
