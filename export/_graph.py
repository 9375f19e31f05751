"""Small, checked edits of an ONNX graph, and what its inputs and outputs look like.

The converters name things their own way; these edits make the graph speak the
logged model's language: tensor names of the logged ``config.pbtxt``, only the
outputs the logged pyfunc returns, and their logged datatypes.
"""

import dataclasses

import numpy as np

from mlflow_triton.shared_contract import NUMPY_TO_TRITON, TRITON_TO_NUMPY

from . import _deps
from ._errors import ExportError


@dataclasses.dataclass(frozen=True)
class GraphTensor:
    """One graph input or output: Triton datatype and dims (-1 where symbolic); ``dims`` None if unknown."""

    name: str
    data_type: str
    dims: "tuple[int, ...] | None"


def triton_type(elem_type):
    """ONNX element type -> Triton config datatype (``TYPE_STRING`` for strings)."""
    onnx = _deps.require("onnx")
    return NUMPY_TO_TRITON[np.dtype(onnx.helper.tensor_dtype_to_np_dtype(elem_type)).name]


def elem_type(data_type):
    """Triton config datatype -> ONNX element type."""
    onnx = _deps.require("onnx")
    return onnx.helper.np_dtype_to_tensor_dtype(np.dtype(TRITON_TO_NUMPY[data_type]))


def describe(values):
    """``GraphTensor`` for each ``ValueInfoProto`` of a graph's inputs or outputs."""
    described = []
    for value in values:
        tensor_type = value.type.tensor_type
        dims = None
        if tensor_type.HasField("shape"):
            dims = tuple(d.dim_value if d.HasField("dim_value") else -1 for d in tensor_type.shape.dim)
        described.append(GraphTensor(value.name, triton_type(tensor_type.elem_type), dims))
    return described


def rename_values(model, renames):
    """Rename values (inputs, outputs, intermediates) everywhere, including inside subgraphs.

    A target name that the graph already uses for another value is first moved
    out of the way to a fresh name, so no two values ever merge.
    """
    renames = {old: new for old, new in renames.items() if old != new}
    if not renames:
        return
    used = _all_names(model.graph)
    for new in list(renames.values()):
        if new in used and new not in renames:
            renames[new] = _fresh(new, used | set(renames.values()))
            used.add(renames[new])
    _apply(model.graph, renames)


def keep_outputs(model, names):
    """Make ``names`` the graph's only outputs (in that order) and drop nodes nothing needs any more."""
    graph = model.graph
    by_name = {value.name: value for value in graph.output}
    missing = [name for name in names if name not in by_name]
    if missing:
        raise ExportError(f"The converted graph has no output {', '.join(missing)}; outputs: {', '.join(by_name)}")
    kept = [by_name[name] for name in names]
    del graph.output[:]
    graph.output.extend(kept)
    _prune(graph)


def cast_output(model, name, data_type):
    """Append a ``Cast`` so that output ``name`` has ``data_type``; the graph's own value gets a new name."""
    onnx = _deps.require("onnx")
    graph = model.graph
    [value] = [v for v in graph.output if v.name == name]
    source = _fresh(f"{name}_before_cast", _all_names(graph))
    rename_values(model, {name: source})
    graph.node.append(onnx.helper.make_node("Cast", [source], [name], to=elem_type(data_type), name=f"cast_{name}"))
    value.name = name
    value.type.tensor_type.elem_type = elem_type(data_type)


def cast_input(model, name, data_type):
    """Make input ``name`` take ``data_type``, cast at once to the type the graph was built for."""
    onnx = _deps.require("onnx")
    graph = model.graph
    [value] = [v for v in graph.input if v.name == name]
    built_for = value.type.tensor_type.elem_type
    inside = _fresh(f"{name}_as_{onnx.TensorProto.DataType.Name(built_for).lower()}", _all_names(graph))
    rename_values(model, {name: inside})
    graph.node.insert(0, onnx.helper.make_node("Cast", [name], [inside], to=built_for, name=f"cast_{inside}"))
    value.name = name
    value.type.tensor_type.elem_type = elem_type(data_type)


def add_row_axis(model, name):
    """Make input ``name`` take ``[batch, 1, *rest]`` where the graph takes ``[batch, *rest]`` (a ``Squeeze``).

    The exported config declares such an input with ``reshape { shape: [1, *dims] }``, so Triton hands it the extra
    axis (``_tensors``: why a request claiming 0 rows must then count as one row).
    """
    onnx = _deps.require("onnx")
    graph = model.graph
    [value] = [v for v in graph.input if v.name == name]
    inside = _fresh(f"{name}_rows", _all_names(graph))
    rename_values(model, {name: inside})
    opset = max(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))
    if opset >= 13:  # Squeeze takes its axes as an input from opset 13 on
        axes = _fresh(f"{name}_row_axis", _all_names(graph))
        graph.initializer.append(onnx.numpy_helper.from_array(np.array([1], dtype=np.int64), axes))
        node = onnx.helper.make_node("Squeeze", [name, axes], [inside], name=f"squeeze_{inside}")
    else:
        node = onnx.helper.make_node("Squeeze", [name], [inside], axes=[1], name=f"squeeze_{inside}")
    graph.node.insert(0, node)
    value.name = name
    dims = value.type.tensor_type.shape.dim
    kept = [onnx.TensorShapeProto.Dimension() for _ in dims]
    for copy, dim in zip(kept, dims):
        copy.CopyFrom(dim)
    del dims[:]
    dims.add().CopyFrom(kept[0])
    dims.add().dim_value = 1
    for dim in kept[1:]:
        dims.add().CopyFrom(dim)


def feed_matrix_from_columns(model, matrix_input, columns):
    """Replace the ``[N, k]`` input ``matrix_input`` by k ``[N, 1]`` column inputs joined with ``Concat``.

    ``columns`` is ``[(name, data_type), ...]`` in matrix order; a column whose
    datatype differs from the matrix's is cast first (pandas' ``to_numpy`` does
    the same when sklearn receives a DataFrame of mixed numeric columns).
    """
    onnx = _deps.require("onnx")
    graph = model.graph
    [matrix] = [v for v in graph.input if v.name == matrix_input]
    matrix_elem = matrix.type.tensor_type.elem_type
    parts, nodes, inputs = [], [], []
    used = _all_names(graph) | {name for name, _ in columns}
    for name, data_type in columns:
        column_elem = elem_type(data_type)
        inputs.append(onnx.helper.make_tensor_value_info(name, column_elem, [None, 1]))
        part = name
        if column_elem != matrix_elem:
            part = _fresh(f"{name}_cast", used)
            used.add(part)
            nodes.append(onnx.helper.make_node("Cast", [name], [part], to=matrix_elem, name=f"cast_{part}"))
        parts.append(part)
    nodes.append(onnx.helper.make_node("Concat", parts, [matrix_input], axis=1, name="concat_columns"))
    graph.input.remove(matrix)
    graph.input.extend(inputs)
    for position, node in enumerate(nodes):
        graph.node.insert(position, node)


def _all_names(graph):
    names = {v.name for v in [*graph.input, *graph.output, *graph.value_info]}
    names.update(i.name for i in graph.initializer)
    for node in graph.node:
        names.update(node.input)
        names.update(node.output)
        for subgraph in _subgraphs(node):
            names |= _all_names(subgraph)
    names.discard("")
    return names


def _apply(graph, renames):
    for value in [*graph.input, *graph.output, *graph.value_info]:
        value.name = renames.get(value.name, value.name)
    for initializer in graph.initializer:
        initializer.name = renames.get(initializer.name, initializer.name)
    for node in graph.node:
        node.input[:] = [renames.get(n, n) for n in node.input]
        node.output[:] = [renames.get(n, n) for n in node.output]
        for subgraph in _subgraphs(node):
            _apply(subgraph, renames)


def _subgraphs(node):
    for attribute in node.attribute:
        if attribute.HasField("g"):
            yield attribute.g
        yield from attribute.graphs


def _fresh(base, used):
    candidate, counter = base, 1
    while candidate in used:
        counter += 1
        candidate = f"{base}_{counter}"
    return candidate


def _prune(graph):
    """Drop nodes whose outputs no graph output depends on (subgraph references count as uses)."""
    needed = {value.name for value in graph.output}
    kept = []
    for node in reversed(graph.node):
        if any(output in needed for output in node.output):
            kept.append(node)
            needed.update(node.input)
            for subgraph in _subgraphs(node):
                needed |= _all_names(subgraph)
    del graph.node[:]
    graph.node.extend(reversed(kept))
    used_initializers = [i for i in graph.initializer if i.name in needed]
    del graph.initializer[:]
    graph.initializer.extend(used_initializers)
