"""benchmarks.hot_path: the baseline composed as its ref wrote it (sources, runtime version, config) and the
report's one-request ratio."""

from pathlib import Path

import numpy as np
import pytest
from mlflow.models import ModelSignature
from mlflow.types import ColSpec, Schema, TensorSpec

from benchmarks.hot_path import config_as_written, report, runtime_version, source_labels
from mlflow_triton import _model_py
from mlflow_triton._batching import Batching, batched_layout
from mlflow_triton._schema import layout_from_signature
from mlflow_triton.repository.config import as_model_config_json, build_config
from mlflow_triton.runtime import RUNTIME_VERSION
from tests.support.fake_pb_utils import as_handed

COLUMNS = Schema([ColSpec("double", "x"), ColSpec("string", "name")])
TENSOR = Schema([TensorSpec(np.dtype("float32"), (-1, 3), "pixels")])
OUTPUTS = Schema([TensorSpec(np.dtype("float32"), (-1, 2))])
SENT = {"x": np.zeros((5, 1)), "name": np.full((5, 1), b"a", dtype=object), "pixels": np.zeros((5, 3), np.float32)}


def _batched_config(inputs):
    layout = layout_from_signature(ModelSignature(inputs=inputs, outputs=OUTPUTS), "sklearn")
    return build_config("m", batched_layout(layout, Batching(max_batch_size=8)))


def _handed_shapes(config, inputs):
    sent = {name: SENT[name] for name in inputs.input_names()}
    return {name: array.shape for name, array in as_handed(as_model_config_json(config), sent).items()}


@pytest.mark.parametrize(
    ("inputs", "before", "since"),
    [
        pytest.param(COLUMNS, {"x": (5,), "name": (5,)}, {"x": (5, 1), "name": (5, 1)}, id="columns"),
        pytest.param(TENSOR, {"pixels": (5, 3)}, {"pixels": (5, 1, 3)}, id="tensor"),
    ],
)
def test_config_as_written_hands_inputs_as_the_baselines_runtime_declared_them(inputs, before, since):
    config = _batched_config(inputs)

    assert _handed_shapes(config_as_written(config, (2, 10, 1)), inputs) == before
    assert _handed_shapes(config_as_written(config, (2, 11, 0)), inputs) == since


def test_config_as_written_changes_only_the_inputs_reshape_and_leaves_the_given_config_alone():
    config = _batched_config(COLUMNS)
    given = config.SerializeToString()

    written = config_as_written(config, (2, 10, 1))

    assert config.SerializeToString() == given
    assert written.output == config.output and written.parameters == config.parameters
    assert [(e.name, list(e.dims)) for e in written.input] == [(e.name, list(e.dims)) for e in config.input]


def test_source_labels_and_runtime_version_read_this_checkouts_composer_and_runtime():
    root = Path(__file__).resolve().parents[3]

    assert source_labels((root / "logging_side" / "_model_py.py").read_text()) == tuple(
        label for label, _ in _model_py.SOURCES
    )
    assert runtime_version((root / "runtime" / "__init__.py").read_text()) == tuple(
        int(part) for part in RUNTIME_VERSION.split(".")
    )


def test_report_gives_unbatched_over_batched_at_one_request_for_the_runtimes_own_time_and_with_predict():
    cell = {"case": "tabular", "target": "one request", "requests": 1, "rows": 1000}
    cell.update(own={"batched": 400.0, "unbatched": 380.0}, us={"batched": 8000.0, "unbatched": 8400.0})

    text = report([cell], "`ref` (runtime 2.10.1)", "python -m benchmarks.hot_path", "a machine")

    assert "| tabular | 1000 | 400 | 380 | 0.95 | 8000 | 8400 | 1.05 |" in text.splitlines()
    assert "Baseline: the runtime at `ref` (runtime 2.10.1)" in text
