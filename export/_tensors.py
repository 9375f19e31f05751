"""The exported model's tensors: the logged tensors, batchable, in the ONNX graph's shapes.

Names and datatypes are those of the logged ``config.pbtxt``, so a client of the
generated repository recognises them. Shapes differ in one documented way:
with ``max_batch_size > 0`` Triton's ``dims`` leave out the batch axis and may
not be empty, so

* a logged rank-one tensor (a DataFrame column ``[-1]``, a label vector) is sent
  and answered as ``[batch, 1]``;
* every other tensor keeps its logged shape, ``[batch, *dims]``.

No input is declared with a ``reshape`` to an empty shape. Triton core's
``Normalize`` (core ``src/infer_request.cc``) takes a request whose first
dimension is 0 for one without a batch axis; after ``reshape { shape: [] }``
the Python backend was handed a shapeless tensor and read its first
dimension through a null pointer (python_backend ``src/python_be.cc``,
``CheckIncomingRequests``: ``total_batch_size += shape[0]``), stopping the
server. So:

* a rank-one input (a column) is ``dims: [1]`` with no reshape, its graph
  input ``[batch, 1]`` (a graph that takes ``[batch]`` gets a ``Squeeze`` in
  front): Triton core itself refuses a request without rows (its byte size is
  not one row's);
* every other input is ``dims: [*dims]`` with ``reshape { shape: [1, *dims] }``
  and its graph input takes ``[batch, 1, *dims]`` (``_graph.add_row_axis``). A
  request that claims 0 rows but carries bytes (binary ``[0, *dims]``) then
  reaches the backend as ``[1, *dims]``: one row, as the dynamic batcher
  counted it (``max(1, batch size)``), so it cannot push an execution past
  ``max_batch_size``, and ``model.py`` refuses it (the wrong rank) alone;
* an output the graph holds as ``[batch]`` (sklearn labels) keeps ``dims: [1]``
  with ``reshape { shape: [] }``: Triton applies an output's reshape itself.

Arrays travel between three forms: *logged* (what the generated repository's
codecs produce and ``pyfunc`` consumes), *graph* (what onnxruntime takes and
returns) and *wire* (what a client sends to the exported model).
"""

import dataclasses
import re

import numpy as np

from mlflow_triton.shared_contract import BYTES_TYPE

from . import _deps, _graph
from ._errors import ExportError, UnsupportedModelError


@dataclasses.dataclass(frozen=True)
class ExportedTensor:
    """One input or output of the exported model."""

    name: str
    field: "str | None"  # the original MLflow name (column, dict key) or None
    content: "str | None"  # "text" for BYTES text, else None
    data_type: str
    logged_dims: "tuple[int, ...]"  # the logged config's dims, batch axis first
    graph_dims: "tuple[int, ...]"  # the ONNX graph's dims after the batch axis, -1 where variable
    computed_as: "str | None" = None  # the graph's own datatype where a Cast converts it to ``data_type``
    row_axis: bool = False  # an input whose graph takes [batch, 1, *dims] (config reshape [1, *dims])

    @property
    def dims(self):
        """Triton ``dims`` with ``max_batch_size > 0`` (batch axis left out, never empty)."""
        return self.graph_dims or (1,)

    @property
    def reshape(self):
        """The config's ``reshape`` shape, or None: ``(1, *dims)`` for an input with the row axis, ``()`` for an
        output the graph holds as ``[batch]``."""
        if self.row_axis:
            return (1, *self.dims)
        return None if self.graph_dims else ()

    @property
    def is_column(self):
        """A logged rank-one tensor carried as ``[batch, 1]`` by the graph."""
        return self._extra_axis and self.graph_dims == (1,)

    @property
    def _extra_axis(self):
        return len(self.graph_dims) == len(self.logged_dims)  # graph rank = logged rank + 1

    def to_graph(self, array):
        """A logged-form array as onnxruntime takes it (text as ``str``)."""
        if self._extra_axis:
            array = array[..., np.newaxis]
        if self.row_axis:
            array = array[:, np.newaxis]
        if self.content == "text":
            array = _text(array)
        return array

    def from_graph(self, array):
        """An onnxruntime output in the logged form (text as UTF-8 ``bytes``)."""
        array = np.asarray(array)
        if self._extra_axis:
            array = array.reshape(array.shape[:-1])
        if self.data_type == BYTES_TYPE:
            array = _utf8(array)
        return array

    def to_wire(self, array):
        """A logged-form array as a client sends it to the exported model: ``[batch, *dims]``."""
        if self._extra_axis or not self.graph_dims:
            return array[..., np.newaxis]
        return array

    def describe(self):
        """The mapping as recorded in handoff.json."""
        return {
            "tensor": self.name,
            "field": self.field,
            "data_type": self.data_type,
            "logged_dims": list(self.logged_dims),
            "exported_dims": list(self.dims),
            "reshape": None if self.reshape is None else list(self.reshape),
            "computed_as": self.computed_as,
        }


def match(declaration, field, graph_tensor, side, computed_as=None):
    """The ``ExportedTensor`` for a logged declaration and the graph tensor carrying it.

    Raises ExportError when the graph's shape cannot carry the logged one.
    """
    logged = tuple(declaration.dims)
    label = f"{side} `{declaration.name}`"
    if graph_tensor.data_type != declaration.data_type:
        raise ExportError(
            f"The converted graph's {label} is {graph_tensor.data_type}, the logged model's {declaration.data_type}"
        )
    graph = graph_tensor.dims if graph_tensor.dims is not None else logged
    if not graph or graph[0] != -1:
        raise ExportError(
            f"The converted graph's {label} has shape {list(graph)}: its first (batch) axis must be variable"
        )
    if len(graph) == len(logged):
        trailing = _merge(graph[1:], logged[1:], label)
    elif len(graph) == len(logged) + 1 and graph[-1] == 1:
        trailing = (*_merge(graph[1:-1], logged[1:], label), 1)
    else:
        raise ExportError(
            f"The converted graph's {label} has shape {list(graph)}, which cannot carry the logged dims {list(logged)}"
        )
    return ExportedTensor(
        name=declaration.name,
        field=field.name,
        content=field.content,
        data_type=declaration.data_type,
        logged_dims=logged,
        graph_dims=trailing,
        computed_as=computed_as,
    )


def _merge(graph, logged, label):
    merged = []
    for axis, (in_graph, in_log) in enumerate(zip(graph, logged), start=1):
        if in_graph != -1 and in_log != -1 and in_graph != in_log:
            raise ExportError(
                f"{label}: axis {axis} is {in_graph} in the converted graph but {in_log} in the logged model"
            )
        merged.append(in_graph if in_graph != -1 else in_log)
    return tuple(merged)


def _text(array):
    """BYTES (UTF-8 ``bytes``) -> ``str`` objects, as onnxruntime's string tensors take them."""
    flat = np.empty(array.size, dtype=object)
    flat[:] = [item.decode("utf-8") if isinstance(item, bytes) else str(item) for item in array.ravel()]
    return flat.reshape(array.shape)


def _utf8(array):
    flat = np.empty(array.size, dtype=object)
    flat[:] = [item.encode("utf-8") if isinstance(item, str) else bytes(item) for item in array.ravel()]
    return flat.reshape(array.shape)


def conform(onnx_model, layout):
    """Cast the graph's outputs to the logged datatypes and match every tensor with the logged one.

    Returns ``(inputs, outputs)`` as ``ExportedTensor`` tuples in the logged order;
    an output the graph computes in another datatype records it in ``computed_as``.
    Raises ExportError when the graph's inputs or outputs are not the logged ones,
    UnsupportedModelError when the ONNX checker refuses the graph.
    """
    _same_names("input", [v.name for v in onnx_model.graph.input], [d.name for d in layout.inputs])
    _same_names("output", [v.name for v in onnx_model.graph.output], [d.name for d in layout.outputs])
    for graph_input in _graph.describe(onnx_model.graph.input):
        if graph_input.dims is not None and len(graph_input.dims) == 1:  # [batch]: served as a [batch, 1] column
            _graph.add_row_axis(onnx_model, graph_input.name)
    graph_outputs = {t.name: t for t in _graph.describe(onnx_model.graph.output)}
    computed_as = {}
    for declaration in layout.outputs:
        produced = graph_outputs[declaration.name].data_type
        if produced != declaration.data_type:
            if BYTES_TYPE in (produced, declaration.data_type):
                raise ExportError(
                    f"The converted graph's output `{declaration.name}` is {produced}, the logged model's "
                    f"{declaration.data_type}; text and numbers do not convert into each other"
                )
            _graph.cast_output(onnx_model, declaration.name, declaration.data_type)
            computed_as[declaration.name] = produced
    fields = {
        "input": {f.tensor: f for f in layout.contract.inputs.fields},
        "output": {f.tensor: f for f in layout.contract.outputs.fields},
    }
    described = {
        "input": {t.name: t for t in _graph.describe(onnx_model.graph.input)},
        "output": {t.name: t for t in _graph.describe(onnx_model.graph.output)},
    }
    inputs, outputs = (
        tuple(
            match(
                d,
                fields[side][d.name],
                described[side][d.name],
                side,
                computed_as.get(d.name) if side == "output" else None,
            )
            for d in declarations
        )
        for side, declarations in (("input", layout.inputs), ("output", layout.outputs))
    )
    inputs = tuple(_with_row_axis(onnx_model, tensor) for tensor in inputs)
    check_graph(onnx_model)
    return inputs, outputs


def _with_row_axis(onnx_model, tensor):
    """A column as it is; any other input with the row axis added to its graph input (see the module's docstring)."""
    if tensor.is_column:
        return tensor
    _graph.add_row_axis(onnx_model, tensor.name)
    return dataclasses.replace(tensor, row_axis=True)


def check_graph(onnx_model):
    """``onnx.checker`` with shape inference; a refusal becomes UnsupportedModelError naming the op."""
    try:
        _deps.require("onnx").checker.check_model(onnx_model, full_check=True)
    except Exception as error:  # noqa: BLE001 - ValidationError, InferenceError, ...
        raise UnsupportedModelError(unusable_graph("the ONNX checker refuses the converted graph", error)) from error


def at_op(text, *patterns):
    """``" at op <name>"`` from the first of ``patterns`` (each with one group: the op) found in a converter's or
    checker's message, or ``""``: where a refusal names the op that caused it."""
    for pattern in patterns:
        found = re.search(pattern, text)
        if found:
            return f" at op {found.group(1)}"
    return ""


def unusable_graph(what, error):
    """The message for a converted graph that cannot be used: the op it names and what to do."""
    text = " ".join(str(error).split())
    located = at_op(text, r"op_type:\s*(\w+)", r"for (\w+)\(\d+\) node", r"node \((\w+)\)")
    return (
        f"{what}{located} ({type(error).__name__}: {text[:500]}). The converter wrote an op or a datatype "
        "this onnx/onnxruntime cannot use. What to do: log the model with FP32 inputs (cast the training "
        "DataFrame to float32) if the op runs on float32 only, replace the step that produces this op, or keep "
        "serving the generated Python-backend repository, which runs the model as logged; nothing was written"
    )


def _same_names(side, graph_names, logged_names):
    if sorted(graph_names) != sorted(logged_names):
        raise ExportError(
            f"The converted graph's {side}s are {', '.join(graph_names) or 'none'}; the logged model's "
            f"{side}s are {', '.join(logged_names)}"
        )
