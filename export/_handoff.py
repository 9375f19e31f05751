"""handoff.json: what was exported, how it was checked, and what was not verified."""

import hashlib

import mlflow_triton

from . import _deps

SHAPES_NOTE = (
    "Tensor names and datatypes are the logged model's. Triton's dims leave out the batch axis "
    "(max_batch_size > 0): a logged rank-one tensor (a DataFrame column, a label vector) is sent and answered as "
    "[batch, 1]; every other tensor keeps its logged shape. reshape [] marks a graph tensor of shape [batch]."
)


def handoff(
    *, name, backend, max_batch_size, source, converter, onnx_model, onnx_bytes, inputs, outputs, parity, request_files
):

    ort = _deps.require("onnxruntime")
    return {
        "exported_model": name,
        "backend": backend,
        "max_batch_size": max_batch_size,
        "source": {
            "model_uri": source.model_uri,
            "triton_model_name": source.name,
            "flavor": source.flavor,
            "pyfunc_predict_fn": source.predict_fn if source.flavor == "sklearn" else None,
            "mlflow_version": source.mlmodel.mlflow_version,
        },
        "converter": converter,
        "onnx": onnx_record(onnx_model, onnx_bytes),
        "onnxruntime_version": ort.__version__,
        "tensors": {
            "inputs": [t.describe() for t in inputs],
            "outputs": [t.describe() for t in outputs],
            "shapes": SHAPES_NOTE,
        },
        "parity": parity,
        "request_files": request_files,
        "not_verified": not_verified(backend, onnx_model, parity, ort.__version__, outputs),
        "mlflow_triton_version": mlflow_triton.__version__,
    }


def onnx_record(onnx_model, onnx_bytes):
    """handoff.json's ``onnx``: the graph file, its hash, IR version, opsets and ops."""
    return {
        "file": "1/model.onnx",
        "sha256": hashlib.sha256(onnx_bytes).hexdigest(),
        "ir_version": onnx_model.ir_version,
        "opsets": {entry.domain or "ai.onnx": entry.version for entry in onnx_model.opset_import},
        "onnx_version": _deps.require("onnx").__version__,
        "ops": sorted({node.op_type for node in onnx_model.graph.node}),
    }


def widened_outputs(outputs):
    """One note per output the graph computes in a narrower float type than the logged one."""
    from ._parity import tolerance

    notes = []
    for tensor in outputs:
        if tensor.computed_as is None or tensor.computed_as == tensor.data_type:
            continue
        rtol, atol = tolerance(tensor) or (0, 0)
        notes.append(
            f"Output `{tensor.name}` is logged as {tensor.data_type} but the graph computes it in "
            f"{tensor.computed_as} and a Cast widens it: it carries {tensor.computed_as} rounding (parity compared "
            f"it within atol {atol:g} + rtol {rtol:g} * |pyfunc|, not the {tensor.data_type} tolerance "
            "`mlflow-triton check` applies)"
        )
    return notes


def not_verified(backend, onnx_model, parity, ort_version, outputs=()):
    notes = widened_outputs(outputs)
    if backend == "onnxruntime":
        notes.append(
            "Triton's ONNX Runtime backend did not run this directory: the Triton bundled with mlflow-triton's "
            "tooling has only the Python backend. config.pbtxt was checked against the ONNX graph's inputs and "
            "outputs only. Serve it with a Triton that has the onnxruntime backend (for example an NGC tritonserver "
            "container) and send request.json / request.bin before relying on it. That backend embeds its own "
            f"onnxruntime release, which may differ from the {ort_version} the parity check used"
        )
    else:
        notes.append(
            "Serving: the export starts no Triton. Build the serving environment from requirements.txt "
            "(onnxruntime + numpy<2, no MLflow), serve this directory and send request.json / request.bin"
        )
    notes.append("Inputs outside the compared ranges, and missing values (NaN, None), were not compared")
    notes.append("GPU execution: onnxruntime ran on CPU and the config has one KIND_CPU instance")
    notes.append("Throughput and latency: not measured by the export")
    rejected = next(
        (
            i.get("batches_rejected_by_pyfunc", 0)
            for i in parity["inputs_compared"]
            if "batches_rejected_by_pyfunc" in i
        ),
        0,
    )
    if rejected:
        notes.append(
            f"{rejected} generated batch(es) that pyfunc.predict refused (it raised) were not compared: the export "
            "may answer inputs the logged model rejects"
        )
    if parity.get("not_probed"):
        notes.append(parity["not_probed"])
    if any(node.op_type == "StringNormalizer" for node in onnx_model.graph.node):
        notes.append(
            "The graph contains StringNormalizer (TfidfVectorizer / CountVectorizer): onnxruntime needs the "
            'en_US.UTF-8 locale in the serving process, or the session fails with "Failed to construct locale '
            'with name:en_US.UTF-8" (Debian: install the locales package and generate en_US.UTF-8)'
        )
    return notes
