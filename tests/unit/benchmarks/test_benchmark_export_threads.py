"""benchmarks.export_threads: each variant is the export with one setting changed, and the report."""

import pytest

from benchmarks.export_threads import SPINNING_OFF, VARIANTS, report, variant
from mlflow_triton.export import _config, _export
from mlflow_triton.repository.config import read_model_config
from mlflow_triton.repository.layout import CONFIG_FILE


def _export_root(tmp_path):
    root = tmp_path / "export"
    network = root / "m_onnx_batched"
    (network / "1").mkdir(parents=True)
    config = _config.batched_config("m_onnx_batched", backend="python", max_batch_size=8)
    (network / CONFIG_FILE).write_text(_config.render_config(config))
    (network / "1" / "model.py").write_text(_export.MODEL_PY.read_text())
    (root / "m_onnx").mkdir()
    (root / "m_onnx" / CONFIG_FILE).write_text('name: "m_onnx"\n')
    return root


def _threads_of(directory):
    return read_model_config(directory / CONFIG_FILE).parameters[_config.THREADS_PARAMETER].string_value


def test_the_benchmark_measures_the_export_as_it_writes_the_threads():
    assert VARIANTS["written"] == (str(_config.SERVED_THREADS), False)
    assert SPINNING_OFF in _export.MODEL_PY.read_text()


@pytest.mark.parametrize(("threads", "spinning"), [("1", False), ("0", True)])
def test_variant_copies_the_export_changing_only_the_networks_threads_or_spinning(tmp_path, threads, spinning):
    root = _export_root(tmp_path)
    model_py = (root / "m_onnx_batched" / "1" / "model.py").read_text()

    copy = variant(root, "m_onnx_batched", threads, spinning, tmp_path / "copy")

    assert _threads_of(copy / "m_onnx_batched") == threads
    assert _threads_of(root / "m_onnx_batched") == "0"
    assert (copy / "m_onnx" / CONFIG_FILE).read_text() == 'name: "m_onnx"\n'
    copied = (copy / "m_onnx_batched" / "1" / "model.py").read_text()
    spinning_on = SPINNING_OFF.replace('"0"', '"1"')
    assert copied == (model_py.replace(SPINNING_OFF, spinning_on) if spinning else model_py)
    assert (spinning_on in copied) is spinning


def test_variant_refuses_an_export_whose_config_names_no_thread_count(tmp_path):
    root = _export_root(tmp_path)
    (root / "m_onnx_batched" / CONFIG_FILE).write_text('name: "m_onnx_batched"\nbackend: "python"\n')

    with pytest.raises(AssertionError, match="does not name intra_op_thread_count 0"):
        variant(root, "m_onnx_batched", "1", False, tmp_path / "copy")


def test_report_gives_the_ratio_of_the_export_as_written_to_each_variant_per_cell():
    summary = lambda rps: {"rps": rps, "p50_ms": 2.0, "errors": []}  # noqa: E731
    cells = [
        {"clients": 1, "written": summary(600.0), "one thread": summary(500.0), "spinning": summary(300.0)},
        {"clients": 16, "written": summary(1500.0), "one thread": summary(0.0), "spinning": summary(750.0)},
    ]
    info = {"nproc": 2, "cpu": "cpu", "python": "3.11", "load_average_start": "1 1 1"}

    text = report(cells, "text", info, "2 2 2", "python -m benchmarks.export_threads")

    lines = [line.replace(" ", "") for line in text.splitlines()]
    assert "|1|600.0|500.0|300.0|1.20|2.00|2.0|2.0|2.0|0|" in lines
    assert "|16|1500.0|0.0|750.0|—|2.00|2.0|2.0|2.0|0|" in lines
    assert "**spinning**: intra_op_thread_count 0, spinning on" in text
