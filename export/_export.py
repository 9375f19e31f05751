"""``export_onnx``: a logged model -> a new, batching Triton model directory ``<name>_onnx/``.

Data flows one way: model URI -> local copy (temporary workspace) -> contract,
pyfunc and saved example -> converted graph in the logged tensor names ->
parity against pyfunc -> files built in a staging sibling -> rename into place.
Every check runs before the first byte is written under ``out_dir``; any
failure leaves ``out_dir`` as it was, and the logged model is only read.
"""

import json
import os
import pathlib
import tempfile
import urllib.parse
from typing import Literal

from mlflow_triton import flavors
from mlflow_triton.repository import request_files
from mlflow_triton.repository.guard import checked_zero_row_guard
from mlflow_triton.repository.layout import (
    CONFIG_FILE,
    MODEL_FILE,
    REQUIREMENTS_FILE,
    VERSION_DIRECTORY,
    unbatchable_tensor,
)
from mlflow_triton.repository.names import check_model_name
from mlflow_triton.repository.paths import checked_out, lies_inside

from . import _config, _deps, _handoff, _parity, _pytorch, _sklearn, _tensors, _text_export, _writer
from ._errors import InvalidArgumentError, UnsupportedModelError
from ._source import read_logged_model

SUFFIX = "_onnx"
# Keyed by exporter (a flavor's registry entry names its own: ``mlflow_triton.flavors.exporter``).
CONVERTERS = {"sklearn": _sklearn.convert, "pytorch": _pytorch.convert}
PROBES = {"sklearn": _sklearn.parity_probes}
TEXT_EXPORTER = "text"  # _text_export: an ONNX network with its tokenizer and text pipeline
MODEL_PY = pathlib.Path(__file__).with_name("_python_backend_model.py")
REQUIREMENTS_HEADER = (
    "# Serving environment for this exported model's 1/model.py: onnxruntime and numpy only (no MLflow).\n"
    "# onnxruntime is the release the parity check ran with; Triton 2.51's Python-backend stub needs numpy<2.\n"
)


def export_onnx(
    model_uri: str,
    out_dir: str | os.PathLike[str],
    *,
    max_batch_size: int = 64,
    backend: Literal["onnxruntime", "python"] = "onnxruntime",
    zero_row_guard: bool = True,
) -> pathlib.Path:
    """Export a model logged by mlflow-triton to ``out_dir/<triton model name>_onnx/``; returns that path.

    ``backend="onnxruntime"`` writes a directory for Triton's ONNX Runtime backend
    (``platform: "onnxruntime_onnx"``); ``backend="python"`` writes the same
    ``model.onnx`` with a small generated ``model.py`` that runs onnxruntime over
    Triton's dynamic batches in any Triton with the Python backend, on the
    threads its config's ``intra_op_thread_count`` names (0: onnxruntime's
    default, as the parity check runs it) without spinning. Both configs
    enable ``dynamic_batching`` with ``max_batch_size`` and declare the inputs so
    that Triton itself refuses a request without rows (``_tensors``): every
    export is one model directory. ``zero_row_guard`` is still accepted (a bool)
    and changes nothing; ``--backend python`` exports of earlier releases needed
    a front model for such a request.

    The converted graph is compared with the logged model's ``pyfunc.predict``
    before anything is written (see ``handoff.json`` in the result). Raises
    ``InvalidArgumentError`` for bad arguments or an existing target,
    ``UnsupportedModelError`` for what a converter cannot express and
    ``ParityError`` when the outputs differ; ``out_dir`` is then unchanged.
    """
    out_dir = _check_arguments(model_uri, out_dir, max_batch_size, backend)
    checked_zero_row_guard(zero_row_guard)  # accepted for callers of earlier releases; nothing to guard
    for module_name in ("onnx", "onnxruntime", "hypothesis"):  # every export's: the graph, its parity check
        _deps.require(module_name)
    with tempfile.TemporaryDirectory(prefix="mlflow-triton-export-") as workspace:
        source = read_logged_model(model_uri, pathlib.Path(workspace) / "model")
        name = check_model_name(f"{source.name}{SUFFIX}")
        exporter = flavors.exporter(source.flavor)
        if exporter == TEXT_EXPORTER:
            check_model_name(_text_export.network_name(name))
            return _text_export.export_text(source, out_dir, name, max_batch_size=max_batch_size, backend=backend)
        _writer.check_target(out_dir / name)
        _check_batchable(source.layout)
        _check_plain_columns(source.layout)
        if exporter is None or exporter not in CONVERTERS:
            raise UnsupportedModelError(
                f"Flavor {source.flavor!r} cannot be exported; supported: {', '.join(flavors.exported_by(CONVERTERS))}"
            )
        onnx_model, converter = CONVERTERS[exporter](source)
        inputs, outputs = _tensors.conform(onnx_model, source.layout)
        try:
            predictor = _parity.OnnxPredictor(onnx_model, inputs, outputs)
        except Exception as error:
            raise UnsupportedModelError(_load_failure(error)) from error
        probes, probe_note = PROBES.get(exporter, lambda _: (None, None))(source)
        parity = _parity.check_parity(source, predictor, max_batch_size, probes=probes)
        if probe_note and "not_probed" not in parity:
            parity["not_probed"] = probe_note
        config = _config.build_export_config(name, inputs, outputs, backend=backend, max_batch_size=max_batch_size)
        onnx_bytes = onnx_model.SerializeToString()

        def fill(directory):
            (directory / VERSION_DIRECTORY).mkdir()
            (directory / VERSION_DIRECTORY / _config.ONNX_FILENAME).write_bytes(onnx_bytes)
            (directory / CONFIG_FILE).write_text(_config.render_config(config), encoding="utf-8")
            if backend == "python":
                (directory / VERSION_DIRECTORY / MODEL_FILE).write_text(
                    MODEL_PY.read_text(encoding="utf-8"), encoding="utf-8"
                )
                (directory / REQUIREMENTS_FILE).write_text(requirements(), encoding="utf-8")
            request_files = _write_request(directory, source, inputs, outputs)
            report = _handoff.handoff(
                name=name,
                backend=backend,
                max_batch_size=max_batch_size,
                source=source,
                converter=converter,
                onnx_model=onnx_model,
                onnx_bytes=onnx_bytes,
                inputs=inputs,
                outputs=outputs,
                parity=parity,
                request_files=request_files,
            )
            (directory / "handoff.json").write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")

        return _writer.write_directory(out_dir, name, fill)


def requirements():
    """requirements.txt of a ``--backend python`` export (the same text for every model)."""
    return f"{REQUIREMENTS_HEADER}onnxruntime=={_deps.require('onnxruntime').__version__}\nnumpy<2\n"


def _write_request(directory, source, inputs, outputs):
    """The saved example as the exported model's ready-to-send request (``[batch, *dims]`` shapes)."""
    tensors = {t.name: t.to_wire(source.example_tensors[t.name]) for t in inputs}
    return request_files.write_request(
        directory,
        tensors,
        {t.name: t.data_type for t in inputs},
        {t.name: t.content for t in inputs},
        {t.name: t.data_type for t in outputs},
    )


def _load_failure(error):
    if "locale" not in str(error):
        return _tensors.unusable_graph("onnxruntime cannot load the converted graph", error)
    message = f"onnxruntime cannot load the converted graph: {type(error).__name__}: {str(error).strip()}"
    if "locale" in str(error):
        message += (
            ". The graph contains StringNormalizer (TfidfVectorizer / CountVectorizer), which needs the "
            "en_US.UTF-8 locale here and in the serving process: install and generate it (Debian: "
            "apt-get install locales, then enable en_US.UTF-8 in /etc/locale.gen and run locale-gen)"
        )
    return message + "; nothing was written"


def _check_arguments(model_uri: object, out_dir: object, max_batch_size: object, backend: object) -> pathlib.Path:
    if not isinstance(model_uri, str) or not model_uri:
        raise InvalidArgumentError(f"model_uri must be a non-empty string, got {model_uri!r}")
    if backend not in _config.BACKENDS:
        raise InvalidArgumentError(f"backend {backend!r} is not supported; supported: {', '.join(_config.BACKENDS)}")
    if isinstance(max_batch_size, bool) or not isinstance(max_batch_size, int) or max_batch_size < 1:
        raise InvalidArgumentError(
            f"max_batch_size must be an integer >= 1 (the largest batch Triton forms), got {max_batch_size!r}"
        )
    if not isinstance(out_dir, (str, os.PathLike)) or not str(out_dir):
        raise InvalidArgumentError(f"out_dir must be a directory path, got {out_dir!r}")
    out_dir = checked_out(out_dir, kind="folder", label="out_dir", error=InvalidArgumentError)
    logged = _local_model_path(model_uri)
    if logged is not None and lies_inside(out_dir, logged):
        raise InvalidArgumentError(
            f"out_dir {str(out_dir)!r} lies inside the logged model {str(logged)!r}, which export-onnx never "
            "modifies; choose a directory outside it"
        )
    return out_dir


def _local_model_path(model_uri):
    parsed = urllib.parse.urlparse(model_uri)
    if parsed.scheme == "file":
        return pathlib.Path(urllib.parse.unquote(parsed.path)).resolve()
    if parsed.scheme == "" or len(parsed.scheme) == 1:  # a plain path (or a Windows drive letter)
        return pathlib.Path(model_uri).expanduser().resolve()
    return None


def _check_plain_columns(layout):
    """Optional and datetime columns travel with masks and nanoseconds that only the generated runtime reads."""
    for field in layout.contract.inputs.fields:
        if field.uses_column_adapters:
            what = "a datetime column" if field.content == "datetime" else "an optional column (a missing-value mask)"
            raise UnsupportedModelError(
                f"Column `{field.name}` is {what}: an ONNX graph cannot read its tensors as the logged model's "
                "runtime does; serve the model's generated repository, or re-log it with required, non-datetime "
                "columns to export it"
            )


def _check_batchable(layout):
    """Dynamic batching concatenates requests along the first axis: it must be variable everywhere."""
    unbatchable = unbatchable_tensor(layout)
    if unbatchable:
        side, declaration = unbatchable
        raise UnsupportedModelError(
            f"Logged {side} tensor `{declaration.name}` has dims {list(declaration.dims)}: its first axis "
            f"is {declaration.dims[0]}, not -1, so Triton cannot batch requests along it. Re-log the model "
            "with a signature whose first axis is -1 (a variable batch) to export it"
        )
