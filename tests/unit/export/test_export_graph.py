"""The export's graph edits and tensor matching, on small hand-built ONNX graphs."""

import re
import types

import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import TensorProto, helper

from mlflow_triton.export import _graph, _tensors
from mlflow_triton.export._errors import ExportError, UnsupportedModelError
from mlflow_triton.repository.layout import TensorDeclaration
from mlflow_triton.shared_contract import FieldMapping


def _model(nodes, inputs, outputs, initializers=()):
    graph = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _run(model, feeds):
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return dict(zip([o.name for o in session.get_outputs()], session.run(None, feeds)))


def _float(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def test_rename_values_moves_an_existing_value_aside_when_the_target_name_is_taken():
    # "b" is an intermediate value; renaming input "a" to "b" must not merge the two.
    model = _model(
        [helper.make_node("Neg", ["a"], ["b"]), helper.make_node("Abs", ["b"], ["out"])],
        [_float("a", [None, 2])],
        [_float("out", [None, 2])],
    )

    _graph.rename_values(model, {"a": "b"})

    onnx.checker.check_model(model, full_check=True)
    assert [v.name for v in model.graph.input] == ["b"]
    np.testing.assert_array_equal(_run(model, {"b": np.array([[-1.0, 2.0]], np.float32)})["out"], [[1.0, 2.0]])


def test_keep_outputs_drops_other_outputs_and_the_nodes_only_they_need_when_pruned():
    model = _model(
        [helper.make_node("Neg", ["x"], ["kept"]), helper.make_node("Abs", ["x"], ["dropped"])],
        [_float("x", [None, 1])],
        [_float("kept", [None, 1]), _float("dropped", [None, 1])],
    )

    _graph.keep_outputs(model, ["kept"])

    assert [v.name for v in model.graph.output] == ["kept"]
    assert [n.op_type for n in model.graph.node] == ["Neg"]


def test_keep_outputs_raises_naming_the_outputs_when_one_is_missing():
    model = _model([helper.make_node("Neg", ["x"], ["y"])], [_float("x", [None, 1])], [_float("y", [None, 1])])

    with pytest.raises(ExportError, match="The converted graph has no output probabilities; outputs: y"):
        _graph.keep_outputs(model, ["probabilities"])


def test_cast_output_gives_the_logged_datatype_when_the_graph_computes_another():
    model = _model([helper.make_node("Neg", ["x"], ["y"])], [_float("x", [None, 1])], [_float("y", [None, 1])])

    _graph.cast_output(model, "y", "TYPE_FP64")

    onnx.checker.check_model(model, full_check=True)
    result = _run(model, {"x": np.array([[1.5]], np.float32)})["y"]
    assert (result.dtype, result.tolist()) == (np.float64, [[-1.5]])


def test_feed_matrix_from_columns_joins_cast_columns_when_the_model_takes_a_matrix():
    model = _model(
        [helper.make_node("Neg", ["m"], ["y"])],
        [helper.make_tensor_value_info("m", TensorProto.DOUBLE, [None, 2])],
        [helper.make_tensor_value_info("y", TensorProto.DOUBLE, [None, 2])],
    )

    _graph.feed_matrix_from_columns(model, "m", [("a", "TYPE_FP64"), ("n", "TYPE_INT64")])

    onnx.checker.check_model(model, full_check=True)
    result = _run(model, {"a": np.array([[0.5], [1.0]]), "n": np.array([[3], [4]], np.int64)})["y"]
    np.testing.assert_array_equal(result, [[-0.5, -3.0], [-1.0, -4.0]])


def _declaration(dims, data_type="TYPE_FP64"):
    return TensorDeclaration(name="t", data_type=data_type, dims=tuple(dims))


def _layout(inputs, outputs, data_type="TYPE_FP32"):
    """A logged layout (declarations and their fields) for tensors ``{name: dims}`` of one datatype."""

    def side(tensors):
        declarations = [TensorDeclaration(name=name, data_type=data_type, dims=dims) for name, dims in tensors.items()]
        return declarations, types.SimpleNamespace(fields=[FieldMapping(name, name) for name in tensors])

    (ins, in_fields), (outs, out_fields) = side(inputs), side(outputs)
    return types.SimpleNamespace(
        inputs=ins, outputs=outs, contract=types.SimpleNamespace(inputs=in_fields, outputs=out_fields)
    )


@pytest.mark.parametrize(
    ("logged", "graph", "dims", "reshape"),
    [
        ((-1,), (-1, 1), (1,), None),  # a sklearn column input: [batch, 1] in the graph
        ((-1,), (-1,), (1,), ()),  # a label vector output: [batch] in the graph, reshape []
        ((-1, 2), (-1, 2), (2,), None),
        ((-1, 2), (-1, -1), (2,), None),  # the logged size fills a symbolic graph axis
        ((-1, -1, 4), (-1, -1, 4), (-1, 4), None),
    ],
)
def test_match_derives_triton_dims_when_graph_shape_carries_the_logged_shape(logged, graph, dims, reshape):
    tensor = _tensors.match(
        _declaration(logged), FieldMapping("t", "t"), _graph.GraphTensor("t", "TYPE_FP64", graph), "output"
    )

    assert (tensor.dims, tensor.reshape) == (dims, reshape)


@pytest.mark.parametrize("opset", [11, 17])
def test_add_row_axis_makes_the_input_take_an_axis_of_one_after_the_batch_when_squeezed_in_the_graph(opset):
    model = _model([helper.make_node("Neg", ["x"], ["y"])], [_float("x", [None, 3])], [_float("y", [None, 3])])
    model.opset_import[0].version = opset

    _graph.add_row_axis(model, "x")

    onnx.checker.check_model(model, full_check=True)
    [x] = _graph.describe(model.graph.input)
    assert x.dims == (-1, 1, 3)
    feed = np.arange(6, dtype=np.float32).reshape(2, 1, 3)
    np.testing.assert_array_equal(_run(model, {"x": feed})["y"], -feed[:, 0])


def test_conform_declares_no_input_reshaped_to_an_empty_shape_when_the_graph_takes_batch_vectors_and_matrices():
    """A 0-row request to an input reshaped to [] stopped Triton 2.51 (python_be.cc reads shape[0] of no shape)."""
    model = _model(
        [helper.make_node("Unsqueeze", ["v", "one"], ["v2"]), helper.make_node("Mul", ["m", "v2"], ["y"])],
        [_float("v", [None]), _float("m", [None, 3])],
        [_float("y", [None, 3])],
        [helper.make_tensor("one", TensorProto.INT64, [1], [1])],
    )
    layout = _layout({"v": (-1,), "m": (-1, 3)}, {"y": (-1, 3)})

    inputs, [y] = _tensors.conform(model, layout)

    declared = {t.name: (t.dims, t.reshape) for t in inputs}
    assert declared == {"v": ((1,), None), "m": ((3,), (1, 3))}
    assert {t.name: t.dims for t in _graph.describe(model.graph.input)} == {"v": (-1, 1), "m": (-1, 1, 3)}
    v, m = np.array([1.0, 2.0], np.float32), np.arange(6, dtype=np.float32).reshape(2, 3)
    feeds = {t.name: t.to_graph(array) for t, array in zip(inputs, (v, m))}
    np.testing.assert_array_equal(y.from_graph(_run(model, feeds)["y"]), m * v[:, None])


@pytest.mark.parametrize(
    ("logged", "graph", "message"),
    [
        ((-1, 2), (-1, 3), "input `t`: axis 1 is 3 in the converted graph but 2 in the logged model"),
        ((-1, 2), (4, 2), "has shape [4, 2]: its first (batch) axis must be variable"),
        ((-1, 2), (-1, 2, 5), "has shape [-1, 2, 5], which cannot carry the logged dims [-1, 2]"),
    ],
)
def test_match_raises_naming_the_tensor_when_graph_shape_cannot_carry_the_logged_shape(logged, graph, message):
    with pytest.raises(ExportError, match=re.escape(message)):
        _tensors.match(
            _declaration(logged), FieldMapping("t", "t"), _graph.GraphTensor("t", "TYPE_FP64", graph), "input"
        )


def test_exported_tensor_round_trips_text_when_converted_to_graph_and_back():
    tensor = _tensors.ExportedTensor("c", "colour", "text", "TYPE_STRING", (-1,), (1,))
    logged = np.array(["grün".encode(), b"red"], dtype=object)

    graph = tensor.to_graph(logged)

    assert (graph.shape, graph.tolist()) == ((2, 1), [["grün"], ["red"]])
    assert tensor.from_graph(graph).tolist() == logged.tolist()
    assert tensor.to_wire(logged).shape == (2, 1)


def test_check_graph_raises_unsupported_model_error_naming_the_op_when_the_checker_refuses_the_graph():
    # A TreeEnsembleRegressor declared to answer double (what skl2onnx wrote for float64 inputs):
    # shape inference refuses.
    tree = helper.make_node(
        "TreeEnsembleRegressor",
        ["x"],
        ["y"],
        domain="ai.onnx.ml",
        n_targets=1,
        nodes_featureids=[0],
        nodes_modes=["LEAF"],
        nodes_nodeids=[0],
        nodes_treeids=[0],
        nodes_truenodeids=[0],
        nodes_falsenodeids=[0],
        nodes_values=[0.0],
        target_ids=[0],
        target_nodeids=[0],
        target_treeids=[0],
        target_weights=[1.0],
    )
    graph = helper.make_graph(
        [tree],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.DOUBLE, [None, 1])],
        [helper.make_tensor_value_info("y", TensorProto.DOUBLE, [None, 1])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("ai.onnx.ml", 3)])

    with pytest.raises(
        UnsupportedModelError,
        match=r"the ONNX checker refuses the converted graph at op "
        r"TreeEnsembleRegressor \(InferenceError: .*\)\. .*What to do: ",
    ):
        _tensors.check_graph(model)


def test_exported_tensor_describes_the_computed_datatype_when_a_cast_widens_the_output():
    tensor = _tensors.ExportedTensor("y", None, None, "TYPE_FP64", (-1,), (1,), computed_as="TYPE_FP32")

    assert tensor.describe()["computed_as"] == "TYPE_FP32"
