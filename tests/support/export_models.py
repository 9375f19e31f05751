"""Logged models for the export tests, and ways to look at an exported directory.

The models are the project's own examples (``examples/sklearn_example.py``,
``examples/pytorch_example.py``) saved with mlflow-triton's ``save_model``, so
the export reads exactly what the wrappers produce. ``drive_exported`` runs an
exported ``1/model.py`` in-process through the fake ``triton_python_backend_utils``
with several requests in one ``execute`` call, as Triton's dynamic batcher does.
"""

import hashlib
import json

import numpy as np
from google.protobuf import json_format, text_format
from tritonclient.grpc import model_config_pb2

from mlflow_triton import pytorch as mt_pytorch
from mlflow_triton import sklearn as mt_sklearn
from tests.support import fake_pb_utils


def save_sklearn_example(path, **options):
    """The example Pipeline (numeric + text columns) saved at ``path``; ``options`` go to save_model."""
    from examples.sklearn_example import fitted_pipeline

    pipeline, frame = fitted_pipeline()
    options.setdefault("pyfunc_predict_fn", "predict_proba")
    mt_sklearn.save_model(pipeline, path, input_example=frame.iloc[:3], **options)
    return path


def save_pytorch_example(path, **options):
    """The example network (custom architecture, packaged with code_paths) saved at ``path``."""
    from examples import pytorch_example

    mt_pytorch.save_model(
        pytorch_example.build_network(),
        path,
        input_example=pytorch_example.example_input(),
        code_paths=[str(pytorch_example.ARCHITECTURE_DIR)],
        **options,
    )
    return path


def digest(directory):
    """``{relative path: sha256}`` of every file under ``directory`` (directories included as None)."""
    return {
        p.relative_to(directory).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else None
        for p in sorted(directory.rglob("*"))
    }


def read_config(directory):
    return text_format.Parse((directory / "config.pbtxt").read_text(encoding="utf-8"), model_config_pb2.ModelConfig())


def read_handoff(directory):
    return json.loads((directory / "handoff.json").read_text(encoding="utf-8"))


def drive_exported(directory, requests, handed=()):
    """Run the exported ``1/model.py`` on ``requests`` (dicts of wire-shaped arrays, ``[rows, *dims]``) in ONE
    execute call, each input reshaped as Triton hands it (``as_handed``), except the requests at the positions in
    ``handed``, already in the shapes Triton hands them; return the responses."""
    config = read_config(directory)
    model = fake_pb_utils.initialized_model(directory, name=f"exported_{directory.name}")
    try:
        return model.execute(
            [
                fake_pb_utils.request_from_arrays(arrays if i in handed else as_handed(config, arrays))
                for i, arrays in enumerate(requests)
            ]
        )
    finally:
        model.finalize()


def as_handed(config, arrays):
    """Wire-shaped request arrays as Triton core hands them to the batched model of ``config`` (a ``ModelConfig``):
    ``fake_pb_utils.as_handed``, the one account of core's reshape the tests keep."""
    return fake_pb_utils.as_handed(json_format.MessageToDict(config, preserving_proto_field_name=True), arrays)


def split_rows(arrays, sizes):
    """Split every array of a request along its first axis into consecutive requests of ``sizes`` rows."""
    bounds = np.cumsum(sizes)[:-1]
    names = list(arrays)
    parts = [np.split(arrays[name], bounds) for name in names]
    return [{name: part[i] for name, part in zip(names, parts)} for i in range(len(sizes))]


def config_graph_mismatches(directory):
    """Where config.pbtxt (parsed with tritonclient's ModelConfig) disagrees with 1/model.onnx; [] when it matches.

    Checked the way Triton's ONNX Runtime backend checks a batching model: the same
    input and output names, each datatype the graph's element type, and ``dims``
    equal to the graph's shape without its (variable) batch axis -- or ``[1]`` with
    ``reshape { shape: [] }`` for a graph output of shape ``[batch]``. No input is reshaped to ``[]``: a column's
    graph input is ``[batch, 1]`` (``dims: [1]``, no reshape), any other's ``[batch, 1, *dims]`` with
    ``reshape { shape: [1, *dims] }``.
    """
    import onnx
    from onnx import helper
    from tritonclient.utils import np_to_triton_dtype

    config = read_config(directory)
    graph = onnx.load(str(directory / "1" / "model.onnx")).graph
    problems = []
    for side, entries, values in (("input", config.input, graph.input), ("output", config.output, graph.output)):
        entries = {e.name: e for e in entries}
        if sorted(entries) != sorted(v.name for v in values):
            problems.append(f"{side} names: config {sorted(entries)} != graph {sorted(v.name for v in values)}")
            continue
        for value in values:
            entry = entries[value.name]
            tensor_type = value.type.tensor_type
            wire = np_to_triton_dtype(helper.tensor_dtype_to_np_dtype(tensor_type.elem_type))
            expected_type = "TYPE_STRING" if wire == "BYTES" else f"TYPE_{wire}"
            actual_type = model_config_pb2.DataType.Name(entry.data_type)
            if actual_type != expected_type:
                problems.append(f"{value.name}: config {actual_type} != graph {expected_type}")
            shape = [d.dim_value if d.HasField("dim_value") else -1 for d in tensor_type.shape.dim]
            if not shape or shape[0] != -1:
                problems.append(f"{value.name}: graph batch axis is not variable: {shape}")
            reshape = list(entry.reshape.shape) if entry.HasField("reshape") else None
            if side == "input":
                expected_dims, expected_reshape = (shape[2:], shape[1:]) if shape[1:] != [1] else ([1], None)
            else:
                expected_dims, expected_reshape = (shape[1:], None) if shape[1:] else ([1], [])
            if (list(entry.dims), reshape) != (expected_dims, expected_reshape):
                problems.append(
                    f"{value.name}: config dims {list(entry.dims)} (reshape {reshape}) != graph {shape} "
                    f"(expected dims {expected_dims}, reshape {expected_reshape})"
                )
    if config.max_batch_size < 1 or not config.HasField("dynamic_batching"):
        problems.append(
            f"batching: max_batch_size {config.max_batch_size}, dynamic_batching {config.HasField('dynamic_batching')}"
        )
    return problems
