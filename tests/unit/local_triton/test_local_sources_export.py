"""resolve_model on directories written by ``mlflow-triton export-onnx``: served with --backend python only."""

import re

import pytest

from mlflow_triton.local import resolve_model
from mlflow_triton.local.errors import ModelSourceError
from mlflow_triton.local.sources import EXPORT_HANDOFF

PYTHON_CONFIG = 'name: "classifier_onnx"\nbackend: "python"\nmax_batch_size: 64\ndynamic_batching {\n}\n'
ONNXRUNTIME_CONFIG = 'name: "classifier_onnx"\nplatform: "onnxruntime_onnx"\nmax_batch_size: 64\n'


def _export_directory(root, config, files=("1/model.onnx", "1/model.py", "requirements.txt", "request.json")):
    directory = root / "classifier_onnx"
    (directory / "1").mkdir(parents=True)
    (directory / "config.pbtxt").write_text(config)
    (directory / EXPORT_HANDOFF).write_text("{}")
    for name in files:
        (directory / name).write_text("x")
    return directory


def test_resolve_model_serves_an_export_directory_as_it_is_when_its_backend_is_python(tmp_path):
    directory = _export_directory(tmp_path, PYTHON_CONFIG)

    source = resolve_model(str(directory), tmp_path / "download")

    assert (source.repository, source.name, source.pyfunc_uri, source.generated) == (
        directory,
        "classifier_onnx",
        None,
        False,
    )
    assert source.requirements_file == directory / "requirements.txt"


def test_resolve_model_refuses_an_onnxruntime_export_saying_to_export_with_python_backend(tmp_path):
    directory = _export_directory(tmp_path, ONNXRUNTIME_CONFIG, files=("1/model.onnx", "request.json"))

    with pytest.raises(
        ModelSourceError,
        match=re.escape(
            f"{directory}: an mlflow-triton export-onnx directory for Triton's ONNX Runtime backend (platform "
            "'onnxruntime_onnx'); the Triton bundled with mlflow-triton has only the Python backend"
        ),
    ) as raised:
        resolve_model(str(directory), tmp_path / "download")
    assert "--backend python" in str(raised.value)


def test_resolve_model_names_the_missing_files_when_a_python_export_is_incomplete(tmp_path):
    directory = _export_directory(tmp_path, PYTHON_CONFIG, files=("1/model.onnx",))

    with pytest.raises(ModelSourceError, match=re.escape("export-onnx directory without 1/model.py, requirements.txt")):
        resolve_model(str(directory), tmp_path / "download")
