"""benchmarks.cpu_share: the server's process tree read from /proc, each process named by its part, and the CPU
time per part, per request and as a share, from two readings."""

import os

import pytest

from benchmarks.cpu_share import CLIENTS_LABEL, SERVER_LABEL, label, process_tree, report, shares

TICKS = os.sysconf("SC_CLK_TCK")
STUB = "/opt/triton/backends/python/triton_python_backend_stub /repo/{model}/1/model.py triton_python_backend_shm_1"


def _process(proc, pid, parent, command, user_ticks, system_ticks, name="proc name (with) spaces"):
    directory = proc / str(pid)
    directory.mkdir()
    fields = ["S", str(parent), *["0"] * 9, str(user_ticks), str(system_ticks), "0", "0"]
    (directory / "stat").write_text(f"{pid} ({name}) {' '.join(fields)}\n")
    (directory / "cmdline").write_bytes(command.replace(" ", "\0").encode() + b"\0")


def test_process_tree_holds_the_root_and_every_process_below_it_with_their_user_and_system_time(tmp_path):
    _process(tmp_path, 10, 1, "tritonserver --model-repository /repo", 3 * TICKS, TICKS)
    _process(tmp_path, 11, 10, STUB.format(model="front"), TICKS, 0)
    _process(tmp_path, 12, 11, "child of a stub", 0, TICKS // 2)
    _process(tmp_path, 20, 1, "another server", 7 * TICKS, 0)
    (tmp_path / "self").mkdir()

    tree = process_tree(10, proc=tmp_path)

    assert sorted(tree) == [10, 11, 12]
    assert tree[10] == ("tritonserver --model-repository /repo", pytest.approx(4.0))
    assert tree[11] == (STUB.format(model="front"), pytest.approx(1.0))
    assert tree[12][1] == pytest.approx(0.5)


def test_label_names_a_stub_by_its_model_directory_and_anything_else_as_the_server():
    models = ["text_onnx", "text_onnx_network"]

    assert label(STUB.format(model="text_onnx_network"), models) == "text_onnx_network (Python stub)"
    assert label(STUB.format(model="text_onnx"), models) == "text_onnx (Python stub)"
    assert label(STUB.format(model="other"), models) == "Python stub of another model"
    assert label("/opt/triton/bin/tritonserver --model-repository /repo", models) == SERVER_LABEL


def test_shares_add_each_parts_processes_between_two_readings_and_count_a_new_one_from_zero():
    front, network = STUB.format(model="front"), STUB.format(model="network")
    before = {1: ("tritonserver", 10.0), 2: (front, 1.0), 3: (front, 2.0), 4: (network, 0.5)}
    after = {1: ("tritonserver", 12.0), 2: (front, 3.0), 3: (front, 3.0), 4: (network, 1.5), 5: (front, 1.0)}

    parts = shares(before, after, ["front", "network"], clients_cpu=1.0, requests=1000)

    assert [(part["part"], part["cpu_s"]) for part in parts] == [
        ("front (Python stub)", pytest.approx(4.0)),
        (SERVER_LABEL, pytest.approx(2.0)),
        (CLIENTS_LABEL, pytest.approx(1.0)),
        ("network (Python stub)", pytest.approx(1.0)),
    ]
    assert parts[0]["ms_per_request"] == pytest.approx(4.0) and parts[0]["share"] == pytest.approx(0.5)
    assert sum(part["share"] for part in parts) == pytest.approx(1.0)


def test_report_prints_each_part_and_the_total_per_request():
    parts = shares({}, {1: ("tritonserver", 3.0)}, [], clients_cpu=1.0, requests=2000)
    measured = {"rps": 200.0, "requests": 2000, "seconds": 10.0, "parts": parts}
    info = {"nproc": 2, "cpu": "cpu", "python": "3.11", "load_average_start": "1.00"}

    text = report(measured, "text", 16, info, "2.00", "python -m benchmarks.cpu_share")

    assert "2000 requests in 10.0 s (200.0 req/s); 4.00 CPU seconds in all, 2.000 ms per request." in text
    rows = [[cell.strip() for cell in line.split("|")[1:-1]] for line in text.splitlines() if line.startswith("| ")]
    assert rows[0] == ["part", "CPU s", "ms per request", "share"]
    assert rows[2:] == [[SERVER_LABEL, "3.00", "1.500", "75%"], [CLIENTS_LABEL, "1.00", "0.500", "25%"]]
