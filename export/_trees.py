"""Tree-based sklearn estimators in ONNX: compare as sklearn does, and probe the splits.

scikit-learn's trees cast X to float32 and compare ``float32(x) <= threshold``
(a float64 threshold). skl2onnx stores thresholds as float32 attributes; fed a
float32 input it picks, for each split, the float32 threshold that makes
``float32(x) <= t32`` equal to sklearn's comparison, but fed float64 it narrows
the thresholds and compares in double, so values next to a split answer
differently (and regressors/probabilities do not even pass the ONNX checker).
So a float32 ``Cast`` goes in front of every estimator that compares in float32
(``skl2onnx.sklapi.CastTransformer``, "Issues when switching to float" in the
skl2onnx documentation), and after conversion every tree node must read float32.

HistGradientBoosting* compares float64 values with float64 thresholds, which a
float32 ONNX threshold cannot reproduce: it is refused.

``threshold_probes`` builds the parity inputs at every split threshold and its
float32 / float64 neighbours, where the model's features are the raw columns.
"""

import numpy as np

from mlflow_triton.shared_contract import TRITON_TO_NUMPY

from . import _deps
from ._errors import UnsupportedModelError

TREE_OPS = ("TreeEnsembleClassifier", "TreeEnsembleRegressor", "TreeEnsemble")
# Ops whose output has their first input's element type (ONNX infers none for the ai.onnx.ml Imputer).
_SAME_TYPE_OPS = (
    "Imputer",
    "Identity",
    "Reshape",
    "Flatten",
    "Gather",
    "ArrayFeatureExtractor",
    "Squeeze",
    "Unsqueeze",
    "Transpose",
    "Slice",
    "Concat",
)
MAX_PROBED_THRESHOLDS = 2000
_SERVE_INSTEAD = "keep serving the generated Python-backend repository, which runs the Pipeline as logged"


def _float32_families():
    from sklearn.ensemble import BaseEnsemble, IsolationForest, RandomTreesEmbedding
    from sklearn.ensemble._gb import BaseGradientBoosting
    from sklearn.tree import BaseDecisionTree

    return (BaseDecisionTree, BaseGradientBoosting, IsolationForest, RandomTreesEmbedding), BaseEnsemble


def _double_families():
    from sklearn.ensemble import HistGradientBoostingClassifier, HistGradientBoostingRegressor

    return HistGradientBoostingClassifier, HistGradientBoostingRegressor


def compares_in_float32(estimator):
    """True for estimators whose predictions depend on X only through ``float32(X)`` (sklearn's trees)."""
    trees, ensembles = _float32_families()
    if isinstance(estimator, trees):
        return True
    members = getattr(estimator, "estimators_", None)
    if isinstance(estimator, ensembles) and members is not None and len(members):
        return all(compares_in_float32(member) for member in np.ravel(np.asarray(members, dtype=object)))
    return False


def refuse_double_trees(path_label, step):
    """HistGradientBoosting* splits compare float64 values: ONNX's float32 thresholds cannot reproduce that."""
    if isinstance(step, _double_families()):
        raise UnsupportedModelError(
            f"{path_label} ({type(step).__name__}) compares float64 feature values with float64 split thresholds; "
            "the ONNX tree ops skl2onnx writes hold float32 thresholds, so values next to a split would be "
            "answered differently. What to do: use GradientBoosting*, RandomForest* or ExtraTrees* (sklearn "
            f"compares those in float32, which ONNX reproduces exactly), or {_SERVE_INSTEAD}"
        )


def with_float32_trees(model):
    """``model`` with a float32 ``CastTransformer`` in front of every estimator that compares in float32.

    A run of ``SimpleImputer(missing_values=nan)`` steps right before such an
    estimator gets the cast in front of it instead (ONNX Runtime's Imputer runs
    on float32; imputing float32(x) with float32(statistic) is what sklearn's
    tree then sees). Fitted estimators are shared, not copied.
    """
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import FeatureUnion, Pipeline

    if isinstance(model, Pipeline):
        steps = [(name, step if compares_in_float32(step) else with_float32_trees(step)) for name, step in model.steps]
        return Pipeline(_cast_before_trees(steps))
    if isinstance(model, ColumnTransformer):
        copy = _shallow_copy(model)
        copy.transformers_ = [
            (n, with_float32_trees(t) if not isinstance(t, str) else t, c) for n, t, c in model.transformers_
        ]
        return copy
    if isinstance(model, FeatureUnion):
        copy = _shallow_copy(model)
        copy.transformer_list = [
            (n, with_float32_trees(t) if not isinstance(t, str) else t) for n, t in model.transformer_list
        ]
        return copy
    if compares_in_float32(model):
        return Pipeline(_cast_before_trees([("estimator", model)]))
    return model


def _cast_before_trees(steps):
    from sklearn.pipeline import Pipeline

    cast_transformer = _deps.require("skl2onnx.sklapi").CastTransformer
    result = []
    for name, step in steps:
        if not isinstance(step, Pipeline) and compares_in_float32(step):
            position = len(result)
            while position and _imputes_nan(result[position - 1][1]):
                position -= 1
            result.insert(position, (f"mlflow_triton_float32_before_{name}", cast_transformer(dtype=np.float32)))
        result.append((name, step))
    return result


def _imputes_nan(step):
    from sklearn.impute import SimpleImputer

    missing = getattr(step, "missing_values", None)
    return isinstance(step, SimpleImputer) and isinstance(missing, float) and np.isnan(missing)


def _shallow_copy(estimator):
    copy = type(estimator).__new__(type(estimator))
    copy.__dict__.update(estimator.__dict__)
    return copy


def check_tree_inputs(onnx_model):
    """Refuse a graph in which a tree op reads anything but float32 (its splits would differ from sklearn's)."""
    onnx = _deps.require("onnx")
    tree_nodes = [n for n in onnx_model.graph.node if n.op_type in TREE_OPS]
    if not tree_nodes:
        return
    types = {v.name: v.type.tensor_type.elem_type for v in onnx_model.graph.input}
    try:
        inferred = onnx.shape_inference.infer_shapes(onnx_model)
        types.update({v.name: v.type.tensor_type.elem_type for v in inferred.graph.value_info})
    except Exception:  # noqa: BLE001 - unknown types are refused below
        pass
    for node in onnx_model.graph.node:  # in topological order
        if node.op_type == "Cast":
            types[node.output[0]] = next(a.i for a in node.attribute if a.name == "to")
        elif node.op_type in _SAME_TYPE_OPS and node.input and node.input[0] in types:
            types.setdefault(node.output[0], types[node.input[0]])
    for node in tree_nodes:
        elem = types.get(node.input[0])
        if elem != onnx.TensorProto.FLOAT:
            described = onnx.TensorProto.DataType.Name(elem) if elem else "an unknown type"
            raise UnsupportedModelError(
                f"The converted graph's tree op {node.op_type} ({node.name or 'unnamed'}) reads {described}, not "
                "float32: sklearn compares float32(x) with its split thresholds, so values next to a split would be "
                "answered differently. This happens when a tree sits inside an ensemble export-onnx does not cast "
                "(VotingClassifier, StackingClassifier, ...). What to do: put the trees at the end of a Pipeline, "
                f"or {_SERVE_INSTEAD}"
            )


def thresholds(estimator):
    """``{feature index: sorted split thresholds}`` of a tree-based estimator, or None if unknown."""
    trees = []
    if hasattr(estimator, "tree_"):
        trees = [estimator]
    elif hasattr(estimator, "estimators_") and not hasattr(estimator, "estimators_features_"):
        members = list(np.ravel(np.asarray(estimator.estimators_, dtype=object)))
        if not all(hasattr(m, "tree_") for m in members):
            return None
        trees = members
    if not trees:
        return None
    found = {}
    for tree in trees:
        split = tree.tree_.feature >= 0
        for feature, threshold in zip(tree.tree_.feature[split], tree.tree_.threshold[split]):
            found.setdefault(int(feature), set()).add(float(threshold))
    return {feature: sorted(values) for feature, values in found.items()}


def neighbours(threshold, dtype):
    """The values next to a split as a column of ``dtype`` can hold them."""
    if dtype.kind == "f":
        t32 = np.float32(threshold)
        values = {threshold, float(t32)}
        values.update(float(np.nextafter(threshold, d)) for d in (-np.inf, np.inf))
        values.update(float(np.nextafter(t32, np.float32(d))) for d in (-np.inf, np.inf))
        if dtype.itemsize == 4:
            values = {float(np.float32(v)) for v in values}
        return sorted(v for v in values if np.isfinite(dtype.type(v)))
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return sorted(
            {
                int(v)
                for v in (np.floor(threshold), np.ceil(threshold), np.floor(threshold) + 1)
                if info.min <= v <= info.max
            }
        )
    return []


def threshold_probes(model, layout, example):
    """Logged-form rows at each split threshold and its neighbours, or None where features are not raw columns.

    The probed feature is set in copies of the example's first row. Handled: the
    tree is the model, or the last step of a Pipeline whose other steps are
    float32 casts or a ColumnTransformer that only passes columns through.
    """
    from sklearn.pipeline import Pipeline

    steps = model.steps if isinstance(model, Pipeline) else [("model", model)]
    *before, (_, final) = steps
    found = thresholds(final)
    if found is None:
        return None
    features = _raw_features(before, layout, example)
    if features is None:
        return None
    base = {name: array[:1] for name, array in example.items()}
    rows = []
    pairs = sorted((f, t) for f, values in found.items() for t in values)
    if len(pairs) > MAX_PROBED_THRESHOLDS:
        pairs = [pairs[i] for i in np.linspace(0, len(pairs) - 1, MAX_PROBED_THRESHOLDS).astype(int)]
    for feature, threshold in pairs:
        if feature not in features:
            return None
        tensor, column = features[feature]
        dtype = base[tensor].dtype
        for value in neighbours(threshold, dtype):
            row = {name: array.copy() for name, array in base.items()}
            row[tensor].reshape(-1)[column] = dtype.type(value)
            rows.append(row)
    if not rows:
        return None
    return {name: np.concatenate([r[name] for r in rows]) for name in base}, len(pairs)


def _raw_features(before, layout, example):
    """``{feature index: (tensor name, flat position in a row)}`` when the model reads the columns as they are."""
    from sklearn.compose import ColumnTransformer

    cast_transformer = _deps.require("skl2onnx.sklapi").CastTransformer
    steps = [s for _, s in before if not isinstance(s, cast_transformer)]
    mapping = layout.contract.inputs
    numeric = {d.name for d in layout.inputs if np.dtype(TRITON_TO_NUMPY[d.data_type]).kind in "fiu"}
    if mapping.structure == "tensor":
        [field] = mapping.fields
        if steps or field.tensor not in numeric or example[field.tensor].ndim != 2:
            return None
        return {j: (field.tensor, j) for j in range(example[field.tensor].shape[1])}
    columns = [f.tensor for f in mapping.fields]
    if not steps:
        order = columns
    elif len(steps) == 1 and isinstance(steps[0], ColumnTransformer):
        by_name = {(f.name if f.name is not None else f.tensor): f.tensor for f in mapping.fields}
        order = _passthrough_order(steps[0], by_name)
    else:
        return None
    if order is None or any(c not in numeric for c in order):
        return None
    return {j: (tensor, 0) for j, tensor in enumerate(order)}


def _passthrough_order(transformer, tensors_by_column):
    """The input tensors a ColumnTransformer outputs, in order, if every kept block is ``passthrough``."""
    indices = getattr(transformer, "_transformer_to_input_indices", None)
    names = getattr(transformer, "feature_names_in_", None)
    if indices is None or names is None or getattr(transformer, "sparse_output_", False):
        return None
    if any(str(n) not in tensors_by_column for n in names):
        return None
    columns = [tensors_by_column[str(n)] for n in names]
    order = []
    for name, step, _ in transformer.transformers_:
        if isinstance(step, str) and step == "drop":
            continue
        if not _passes_through(step):
            return None
        order += [columns[i] for i in indices[name]]
    return order


def _passes_through(step):
    """``"passthrough"``, which a fitted ColumnTransformer holds as an identity FunctionTransformer."""
    from sklearn.preprocessing import FunctionTransformer

    if isinstance(step, str):
        return step == "passthrough"
    return type(step) is FunctionTransformer and step.func is None and step.inverse_func is None
