"""scikit-learn -> ONNX with skl2onnx, in the logged model's tensor names.

* Inputs: a column schema becomes one ``[batch, 1]`` graph input per DataFrame
  column, named like the logged column tensor. A model whose first step is a
  ``ColumnTransformer`` selects its columns by name inside the graph; any other
  model receives the numeric columns joined into one matrix (``Concat``), as
  sklearn does with ``DataFrame.to_numpy()``. A tensor schema becomes one input.
* Outputs: ``predict`` -> the converter's first output (labels for classifiers,
  values for regressors); ``predict_proba`` -> its ``probabilities`` output
  (no ZipMap: a plain tensor). The output is renamed to the logged output tensor.
* Before converting, every step of the Pipeline is checked: a step without a
  registered converter, or a ``FunctionTransformer`` running a Python function,
  is refused with its path in the Pipeline and what to do instead.
"""

import re

import numpy as np

from mlflow_triton.shared_contract import BYTES_TYPE, NUMPY_TO_TRITON, TRITON_TO_NUMPY

from . import _deps, _graph, _trees
from ._errors import UnsupportedModelError

PREDICT_FNS = ("predict", "predict_proba")
_INTEGER_TYPES = (
    "TYPE_INT8",
    "TYPE_INT16",
    "TYPE_INT32",
    "TYPE_INT64",
    "TYPE_UINT8",
    "TYPE_UINT16",
    "TYPE_UINT32",
    "TYPE_UINT64",
    "TYPE_BOOL",
)
PROBABILITIES_OUTPUT = "probabilities"
_MATRIX_INPUT = "mlflow_triton_feature_matrix"
_SKL2ONNX_TYPES = {
    "TYPE_FP64": "DoubleTensorType",
    "TYPE_FP32": "FloatTensorType",
    "TYPE_INT64": "Int64TensorType",
    "TYPE_INT32": "Int32TensorType",
    "TYPE_BOOL": "BooleanTensorType",
    BYTES_TYPE: "StringTensorType",
}
WHAT_TO_DO = (
    "What to do: replace the step with transformers/estimators that skl2onnx converts "
    "(skl2onnx.supported_converters()), or register a converter for it with "
    "skl2onnx.update_registered_converter and convert the model yourself; until then keep serving the "
    "generated Python-backend repository, which runs the Pipeline as logged"
)


def convert(source):
    """``(onnx ModelProto, converter description)`` for a logged sklearn model."""
    skl2onnx = _deps.require("skl2onnx")
    model = source.raw_model()
    contract = source.layout.contract
    if source.predict_fn not in PREDICT_FNS:
        raise UnsupportedModelError(
            f"pyfunc_predict_fn {source.predict_fn!r} cannot be exported; supported: {', '.join(PREDICT_FNS)}. "
            "Re-log the model with one of them to export it"
        )
    if contract.outputs.structure != "tensor":
        raise UnsupportedModelError(
            f"The logged sklearn model returns {contract.outputs.structure!r}; export-onnx handles a single array"
        )
    _refuse_unsupported_steps(model, skl2onnx)
    initial_types, finish_inputs = _inputs(model, source.layout)
    options = {}
    final = _final_estimator(model)
    if _is_classifier(final):
        options[id(final)] = {"zipmap": False}
    try:
        onnx_model = skl2onnx.convert_sklearn(
            _trees.with_float32_trees(model), initial_types=initial_types, options=options
        )
    except Exception as error:
        raise UnsupportedModelError(_conversion_failure(model, error, skl2onnx.__version__)) from error
    _trees.check_tree_inputs(onnx_model)
    finish_inputs(onnx_model)
    _select_output(onnx_model, source)
    converter = {"name": "skl2onnx", "version": skl2onnx.__version__, "options": {"zipmap": False} if options else {}}
    if _any_step(model, _trees.compares_in_float32):
        converter["float32_before_trees"] = (
            "a Cast to float32 precedes every tree-based estimator: sklearn compares float32(x) with its split "
            "thresholds, and so does the graph"
        )
    return onnx_model, converter


def parity_probes(source):
    """``(tensors or None, note or None)``: parity rows at the trees' split thresholds, or why there are none."""
    model = source.raw_model()
    if not _any_step(model, _trees.compares_in_float32):
        return None, None
    probes = _trees.threshold_probes(model, source.layout, source.example_tensors)
    if probes is None:
        return None, (
            "Tree splits: the trees read transformed features (or sit inside another estimator), so inputs next to "
            "a split threshold were not probed specifically; the graph casts to float32 before the trees as sklearn "
            "does, but a transformation computed a rounding step differently would move a value across a split"
        )
    return probes, None


def _any_step(model, predicate):
    return any(predicate(step) for _, step in _steps(model, []))


def _refuse_unsupported_steps(model, skl2onnx):
    from skl2onnx._supported_operators import (
        sklearn_operator_name_map,  # the registry update_registered_converter fills
    )
    from sklearn.preprocessing import FunctionTransformer

    for path, step in _steps(model, []):
        label = _step_label(path, step)
        _trees.refuse_double_trees(label, step)
        if isinstance(step, FunctionTransformer) and (step.func is not None or step.inverse_func is not None):
            function = getattr(step.func, "__name__", repr(step.func))
            raise UnsupportedModelError(
                f"{label} is a FunctionTransformer running the Python function {function!r}, which ONNX cannot "
                f"express. {WHAT_TO_DO}"
            )
        if type(step) not in sklearn_operator_name_map:
            raise UnsupportedModelError(
                f"{label} ({type(step).__module__}.{type(step).__name__}) has no converter in skl2onnx "
                f"{skl2onnx.__version__}. {WHAT_TO_DO}"
            )


def _steps(estimator, path):
    """``(path, step)`` for every leaf of nested Pipelines, ColumnTransformers and FeatureUnions."""
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import FeatureUnion, Pipeline

    if isinstance(estimator, Pipeline):
        children = [(name, step) for name, step in estimator.steps]
    elif isinstance(estimator, ColumnTransformer):
        children = [(name, step) for name, step, _ in estimator.transformers_]
    elif isinstance(estimator, FeatureUnion):
        children = list(estimator.transformer_list)
    else:
        yield path, estimator
        return
    for name, step in children:
        if step is None or (isinstance(step, str) and step in ("drop", "passthrough")):
            continue
        yield from _steps(step, [*path, name])


def _step_label(path, step):
    if not path:
        return f"The model ({type(step).__name__})"
    return f"Step `{' > '.join(path)}`"


def _final_estimator(model):
    from sklearn.pipeline import Pipeline

    while isinstance(model, Pipeline):
        model = model.steps[-1][1]
    return model


def _first_step(model):
    from sklearn.pipeline import Pipeline

    while isinstance(model, Pipeline):
        model = model.steps[0][1]
    return model


def _is_classifier(estimator):
    from sklearn.base import is_classifier

    return is_classifier(estimator)


def _inputs(model, layout):
    """``(initial_types, finish)``: skl2onnx's input types and the edit that names the graph inputs."""
    from sklearn.compose import ColumnTransformer

    mapping = layout.contract.inputs
    declared = {d.name: d for d in layout.inputs}
    if mapping.structure == "tensor":
        declaration = declared[mapping.fields[0].tensor]
        shape = [None if d == -1 else d for d in declaration.dims]
        return [(declaration.name, _tensor_type(declaration.data_type, "input", shape))], _rename_inputs(
            [declaration.name]
        )
    if mapping.structure != "columns":
        raise UnsupportedModelError(
            f"The logged sklearn model takes {mapping.structure!r}; export-onnx handles DataFrame columns or one array"
        )
    columns = [(field, declared[field.tensor]) for field in mapping.fields]
    for field, _declaration in columns:
        if field.content == "binary":
            raise UnsupportedModelError(f"Column `{field.name}`: binary columns cannot be converted by skl2onnx")
    if len(columns) == 1 or isinstance(_first_step(model), ColumnTransformer):
        widened = _integer_columns_read_as_numbers(model, columns)
        types = [
            (
                _column_key(field),
                _tensor_type("TYPE_FP64" if d.name in widened else d.data_type, f"column `{field.name}`", [None, 1]),
            )
            for field, d in columns
        ]
        rename = _rename_inputs([d.name for _, d in columns])

        def finish(onnx_model):
            rename(onnx_model)
            for _field, declaration in columns:
                if declaration.name in widened:
                    _graph.cast_input(onnx_model, declaration.name, declaration.data_type)

        return types, finish
    text = [field.name for field, d in columns if d.data_type == BYTES_TYPE]
    if text:
        raise UnsupportedModelError(
            f"Text column(s) {', '.join(map(repr, text))} reach {type(_first_step(model)).__name__} directly; "
            "export-onnx converts several columns per column only when the first step is a ColumnTransformer"
        )
    matrix_type = NUMPY_TO_TRITON[np.result_type(*(TRITON_TO_NUMPY[d.data_type] for _, d in columns)).name]
    matrix = _tensor_type(matrix_type, "feature matrix", [None, len(columns)])

    def finish(onnx_model):
        _graph.feed_matrix_from_columns(onnx_model, _MATRIX_INPUT, [(d.name, d.data_type) for _, d in columns])

    return [(_MATRIX_INPUT, matrix)], finish


def _integer_columns_read_as_numbers(model, columns):
    """Tensor names of integer and bool columns that reach only numeric steps.

    sklearn's numeric steps (scalers, imputers, passthrough next to float columns, the estimators)
    turn integers into float64 first; skl2onnx's converters refuse integer inputs for many of them
    or mix types in ``Concat``. Such a column is declared double to the converter and cast from its
    logged type at the graph's input, which is the conversion sklearn does (exact below 2**53).
    A column an encoder reads keeps its type: its values are categories.
    """
    from sklearn.compose import ColumnTransformer

    integers = {field.name: d.name for field, d in columns if d.data_type in _INTEGER_TYPES}
    if not integers:
        return set()
    first = _first_step(model)
    if not isinstance(first, ColumnTransformer):
        return set() if _reads_categories(first) else set(integers.values())
    categorical = set()
    for _, transformer, selected in first.transformers_:
        if isinstance(transformer, str) and transformer == "drop":
            continue
        names = [selected] if isinstance(selected, str) else list(selected) if _is_name_list(selected) else None
        if names is None:  # a slice, mask or callable: which columns it reads is not known here
            return set()
        if not isinstance(transformer, str) and _reads_categories(transformer):
            categorical.update(names)
    return {tensor for name, tensor in integers.items() if name not in categorical}


def _reads_categories(step):
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder, OrdinalEncoder, TargetEncoder

    first = _first_step(step) if isinstance(step, Pipeline) else step
    return isinstance(first, (OneHotEncoder, OrdinalEncoder, TargetEncoder))


def _is_name_list(selected):
    try:
        return all(isinstance(name, str) for name in selected)
    except TypeError:
        return False


def _column_key(field):
    return field.name if field.name is not None else field.tensor


def _tensor_type(data_type, label, shape):
    from skl2onnx.common import data_types

    name = _SKL2ONNX_TYPES.get(data_type)
    if name is None:
        raise UnsupportedModelError(f"The {label} is {data_type}; skl2onnx inputs can be {', '.join(_SKL2ONNX_TYPES)}")
    return getattr(data_types, name)(shape)


def _rename_inputs(tensor_names):
    """skl2onnx sanitizes input names (``sepal length (cm)`` -> ``sepal_length__cm_``); name them as logged."""

    def finish(onnx_model):
        graph_names = [value.name for value in onnx_model.graph.input]
        _graph.rename_values(onnx_model, dict(zip(graph_names, tensor_names)))

    return finish


def _select_output(onnx_model, source):
    """Keep the output the logged pyfunc returns, named as the logged output tensor."""
    outputs = [value.name for value in onnx_model.graph.output]
    if source.predict_fn == "predict_proba":
        if PROBABILITIES_OUTPUT not in outputs:
            raise UnsupportedModelError(
                f"The converted model has no {PROBABILITIES_OUTPUT!r} output for predict_proba; outputs: "
                f"{', '.join(outputs)}"
            )
        chosen = PROBABILITIES_OUTPUT
    else:
        chosen = outputs[0]
    _graph.keep_outputs(onnx_model, [chosen])
    _graph.rename_values(onnx_model, {chosen: source.layout.contract.outputs.fields[0].tensor})


def _conversion_failure(model, error, version):
    """skl2onnx's error, with the step it names located in the Pipeline when possible."""
    text = f"{type(error).__name__}: {str(error).strip().splitlines()[0]}"
    named = re.search(r"<class '([\w.]+)'>", str(error))
    if named:
        class_name = named.group(1).rsplit(".", 1)[-1]
        for path, step in _steps(model, []):
            if type(step).__name__ == class_name:
                return f"{_step_label(path, step)} could not be converted by skl2onnx {version} ({text}). {WHAT_TO_DO}"
    return f"skl2onnx {version} could not convert the model ({text}). {WHAT_TO_DO}"
