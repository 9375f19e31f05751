"""A generated fidelity case as plain data, and what it becomes.

A ``Case`` is a complete description -- model, signature, inputs -- made of Python scalars,
strings and tuples, so that its ``repr`` (which Hypothesis prints for a falsifying example) can be
pasted into ``@example(case=...)``. From it this module builds:

* the model (a ``RecipeEstimator``, a ``RecipeModule`` or a real scikit-learn Pipeline) and the
  options ``log_model`` gets (``code_paths``, serialization);
* the explicit ``ModelSignature`` when the case asks for one;
* each input as the MLflow model value a user passes (DataFrame, ndarray, dict of ndarrays) and as
  the raw arrays a Triton client sends (one per field, BYTES as ``bytes``).

Families:

``sklearn-recipe``
    ``RecipeEstimator`` over a DataFrame (``columns``), an ndarray (``tensor``) or a dict of
    ndarrays (``tensors``); outputs as ``array``, ``frame``, ``series`` or ``dict``.
``pytorch-recipe``
    ``RecipeModule`` over one tensor (``tensor``), or over a numeric DataFrame (``columns``), which
    MLflow's PyTorch flavor turns into a float32 matrix and answers with a DataFrame labelled 0..k-1.
``sklearn-recipe`` with nested columns
    ``RecipeEstimator`` over a DataFrame with Array / Object / Array(Object) columns (a field of kind
    ``json:<MLflow type dict>``, its row values plain Python lists, dicts, numbers, text, booleans);
    ``Case.malformed`` lists requests with one malformed row (:class:`Malformed`).
``sklearn-pipeline``
    a real fitted Pipeline (scaling, one-hot encoding, LogisticRegression / Ridge / DecisionTree)
    over numeric and text columns; ``options`` name the estimator and ``pyfunc_predict_fn``.
"""

import dataclasses
import json
import math
import pathlib

import numpy as np
import pandas as pd
from mlflow.models import ModelSignature
from mlflow.types import ColSpec, Schema, TensorSpec

FIDELITY_MODELS_DIR = pathlib.Path(__file__).resolve().parents[1] / "fidelity_models"

FAMILIES = ("sklearn-recipe", "pytorch-recipe", "sklearn-pipeline")
STRUCTURES = ("columns", "tensor", "tensors")
FORMS = ("array", "frame", "series", "dict")

# Field kinds: numpy dtype names, "text" (str) and "binary" (bytes).
INTEGER_KINDS = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
FLOAT_KINDS = ("float16", "float32", "float64")
NUMBER_KINDS = ("bool",) + INTEGER_KINDS + FLOAT_KINDS
COLUMN_TYPES = {
    "bool": "boolean",
    "int32": "integer",
    "int64": "long",
    "float32": "float",
    "float64": "double",
    "text": "string",
    "binary": "binary",
}
COLUMN_KINDS = tuple(COLUMN_TYPES)
# The README's mapping table, written out independently of the package.
TRITON_DATATYPES = {
    "bool": "TYPE_BOOL",
    "int8": "TYPE_INT8",
    "int16": "TYPE_INT16",
    "int32": "TYPE_INT32",
    "int64": "TYPE_INT64",
    "uint8": "TYPE_UINT8",
    "uint16": "TYPE_UINT16",
    "uint32": "TYPE_UINT32",
    "uint64": "TYPE_UINT64",
    "float16": "TYPE_FP16",
    "float32": "TYPE_FP32",
    "float64": "TYPE_FP64",
    "text": "TYPE_STRING",
    "binary": "TYPE_STRING",
    "fixed-text": "TYPE_STRING",
    "fixed-binary": "TYPE_STRING",
}


@dataclasses.dataclass(frozen=True)
class Field:
    """One input field: a column (``dims == (-1,)``), the single tensor or one named tensor."""

    name: object  # str, int (a column label) or None (an unnamed tensor)
    kind: str
    dims: tuple = (-1,)


@dataclasses.dataclass(frozen=True)
class Output:
    """One output: ``operation`` on input field ``source``; ``declared`` overrides the signature's dtype."""

    key: object
    source: int
    operation: str
    declared: object = None


@dataclasses.dataclass(frozen=True)
class Input:
    """One model input: per field, its concrete shape and its values, flattened in C order."""

    shapes: tuple
    values: tuple

    @property
    def rows(self):
        return self.shapes[0][0] if self.shapes and self.shapes[0] else 0


@dataclasses.dataclass(frozen=True)
class Malformed:
    """A request made of input ``base``'s tensors with row ``row`` of field ``field`` sent as ``text``.

    ``problem``: ``bad-json`` (not JSON: 400 naming the tensor and the row), ``narrow`` (a number a
    ``float`` / ``integer`` leaf cannot hold unchanged: 400 naming the tensor and the row), or
    ``wrong-type`` / ``missing-property`` (MLflow's schema enforcement is the judge: if ``pyfunc.predict``
    refuses the value, a 400 naming the column and the row, else the prediction).
    """

    base: int
    field: int
    row: int
    text: str
    problem: str


@dataclasses.dataclass(frozen=True)
class Case:
    family: str
    structure: str
    fields: tuple
    outputs: tuple
    form: str
    explicit_signature: bool
    inputs: tuple  # inputs[0] is the input_example; the others are sent afterwards
    options: tuple = ()
    malformed: tuple = ()  # Malformed requests, sent after the inputs (nested columns)

    def option(self, name, default=None):
        return dict(self.options).get(name, default)

    @property
    def example(self):
        return self.inputs[0]

    def describe(self):
        """One line: family, structure, field kinds and shapes, outputs (and malformed requests)."""
        fields = ", ".join(f"{field.name!r}:{field.kind}{list(field.dims)}" for field in self.fields)
        outputs = ", ".join(
            f"{output.key!r}={output.operation}({output.source})" + (f"->{output.declared}" if output.declared else "")
            for output in self.outputs
        )
        signature = "explicit" if self.explicit_signature else "inferred"
        malformed = f" + {len(self.malformed)} malformed" if self.malformed else ""
        return f"{self.family} {self.structure}[{fields}] -> {self.form}[{outputs}] ({signature} signature){malformed}"


# -- nested columns ----------------------------------------------------------------------------------

NESTED_PREFIX = "json:"
# MLflow leaf types inside a nested value, and the numpy scalar a user's value holds there.
NESTED_LEAVES = ("float", "double", "long", "integer", "string", "boolean")
NARROW_LEAF_TYPES = {"float": np.float32, "integer": np.int32}


def nested_kind(mlflow_type):
    """The field kind of a nested column of ``mlflow_type`` (an MLflow type dict, as ``to_dict`` writes it)."""
    return NESTED_PREFIX + json.dumps(mlflow_type, sort_keys=True, separators=(",", ":"))


def is_nested(kind):
    return isinstance(kind, str) and kind.startswith(NESTED_PREFIX)


def nested_type(kind):
    """The MLflow type dict of a nested kind."""
    return json.loads(kind[len(NESTED_PREFIX) :])


def example_nested_type(kind, rows):
    """The MLflow type MLflow infers for a nested column of ``kind`` from the example's ``rows``: as declared by the
    kind, except that an object property whose value is None or NaN in some row of the example is not required
    (MLflow's inference counts such a value as missing)."""
    inferred = nested_type(kind)
    _relax_missing(inferred, list(rows))
    return inferred


def _relax_missing(mlflow_type, values):
    kind = mlflow_type.get("type")
    if kind == "array":
        _relax_missing(mlflow_type["items"], [item for value in values if isinstance(value, list) for item in value])
    elif kind == "object":
        for name, spec in mlflow_type["properties"].items():
            present = [value[name] for value in values if isinstance(value, dict) and name in value]
            if any(value is None or (isinstance(value, float) and math.isnan(value)) for value in present):
                spec["required"] = False
            _relax_missing(spec, present)


def user_value(value, mlflow_type):
    """A plain row value as a user's DataFrame holds it: ``float`` / ``integer`` leaves as numpy float32 / int32
    (what MLflow infers those types from, and what its schema enforcement wants there)."""
    kind = mlflow_type.get("type")
    if kind == "array" and isinstance(value, list):
        return [user_value(item, mlflow_type["items"]) for item in value]
    if kind == "object" and isinstance(value, dict):
        properties = mlflow_type["properties"]
        return {key: user_value(item, properties[key]) if key in properties else item for key, item in value.items()}
    if kind == "float" and type(value) in (int, float):
        return np.float32(value)
    if kind == "integer" and type(value) is int:  # a float stays a float there: MLflow's enforcement refuses it
        return np.int32(value)
    return value


def json_text(value, style="compact"):
    """The tests' own JSON text of a plain row value (``json.dumps``, never the runtime's codec), UTF-8.

    ``style``: ``compact`` (no spaces, UTF-8 as is), ``spaced`` (``json.dumps``'s default separators) or
    ``ascii`` (non-ASCII text as ``\\u`` escapes): the server must read them all alike.
    """
    separators = (",", ":") if style == "compact" else (", ", ": ")
    return json.dumps(value, ensure_ascii=style == "ascii", separators=separators, allow_nan=True).encode("utf-8")


# -- arrays ------------------------------------------------------------------------------------------


def field_array(kind, shape, values):
    """The ndarray a field holds: numbers in their dtype, text, binary and nested rows as object arrays."""
    if is_nested(kind):
        mlflow_type = nested_type(kind)
        array = np.empty(len(values), dtype=object)
        array[:] = [user_value(value, mlflow_type) for value in values]
        return array.reshape(shape)
    if kind in ("text", "binary"):
        array = np.empty(len(values), dtype=object)
        array[:] = list(values)
        return array.reshape(shape)
    if kind in ("fixed-text", "fixed-binary"):
        return np.array(values, dtype=str if kind == "fixed-text" else bytes).reshape(shape)
    if kind == "datetime-utc":  # timezone-aware: MLflow's schema enforcement refuses it, so logging must too
        return np.array(values, dtype="int64").astype("datetime64[s]").reshape(shape)
    return np.array(values, dtype=kind).reshape(shape)


def raw_arrays(case, model_input):
    """The arrays a Triton client sends for ``model_input``, one per field in order (BYTES as bytes)."""
    arrays = []
    for field, shape, values in zip(case.fields, model_input.shapes, model_input.values):
        if is_nested(field.kind):  # one JSON text per row, written here (docs/repository.md), not by the runtime
            style = case.option("json_style", "compact")
            arrays.append(field_array("binary", shape, tuple(json_text(value, style) for value in values)))
            continue
        if field.kind == "text":
            values = tuple(text.encode("utf-8") for text in values)
        arrays.append(field_array("binary" if field.kind == "text" else field.kind, shape, values))
    return arrays


def malformed_input(case, malformed):
    """Input ``malformed.base`` with the malformed row as ``json.loads`` reads its text (a ``wrong-type`` or
    ``missing-property`` row: valid JSON), for ``pyfunc.predict`` to judge."""
    base = case.inputs[malformed.base]
    column = list(base.values[malformed.field])
    column[malformed.row] = json.loads(malformed.text)
    values = base.values[: malformed.field] + (tuple(column),) + base.values[malformed.field + 1 :]
    return Input(base.shapes, values)


def model_value(case, model_input):
    """The value a user passes to ``predict`` and ``log_model``: DataFrame, ndarray or dict."""
    arrays = [
        field_array(field.kind, shape, values)
        for field, shape, values in zip(case.fields, model_input.shapes, model_input.values)
    ]
    if case.structure == "tensor":
        return arrays[0]
    if case.structure == "tensors":
        return {field.name: array for field, array in zip(case.fields, arrays)}
    return pd.DataFrame({field.name: _column(field.kind, array) for field, array in zip(case.fields, arrays)})


def _column(kind, array):
    if is_nested(kind):
        return pd.Series(array, dtype=object)
    if kind == "text":
        return pd.Series(array, dtype="str")  # what pd.DataFrame({"c": ["x", ...]}) gives under pandas 3
    if kind == "binary":
        return pd.Series(array, dtype=object)
    if kind == "datetime-utc":
        return pd.Series(array).dt.tz_localize("UTC")
    return pd.Series(array, dtype=array.dtype)


# -- signatures ----------------------------------------------------------------------------------------


def produced_kind(case, output):
    """The kind of values the model produces for ``output`` (before any declared override)."""
    import_fidelity_models()
    from fidelity_models import ops

    source = case.fields[output.source]
    if case.family == "pytorch-recipe":
        kind = "float32" if case.structure == "columns" else source.kind
        return {
            "echo": kind,
            "flip": kind,
            "wide": "float64",
            "sum": "float64",
            "half": "float16",
            "nonzero": "bool",
            "linear": "float32",
            "scalar": "float64",
        }[output.operation]
    if is_nested(source.kind):
        if output.operation == "wrap":  # {"size": len(row), "value": row}
            inner = {**nested_type(source.kind), "required": True}
            return nested_kind(
                {"type": "object", "properties": {"size": {"type": "long", "required": True}, "value": inner}}
            )
        return ops.result_kind(output.operation, source.kind)
    kind = ops.result_kind(output.operation, source.kind)
    if case.option("fixed_width") and case.form in ("array", "dict") and kind in ("text", "binary"):
        return f"fixed-{kind}"
    return kind


def declared_kind(case, output):
    """The kind the signature declares: ``declared``, else what the model produces -- except that an
    object array of bytes (a ``binary`` output as an array or dict entry) is an ``object`` tensor,
    which the README maps to text."""
    if output.declared:
        return output.declared
    kind = produced_kind(case, output)
    return "text" if kind == "binary" and case.form in ("array", "dict") else kind


def output_dims(case, output):
    """The declared dims of ``output``: the source's dims, reduced by ``sum``, resized by ``linear``."""
    source = case.fields[output.source]
    if output.operation == "scalar":
        return ()  # a 0-d prediction (Triton: one element, docs/repository.md)
    if case.structure == "columns":
        return (-1,)
    if output.operation == "sum":
        return source.dims[:1]
    if output.operation == "linear":
        return source.dims[:-1] + (2,)
    return source.dims


def triton_datatype(kind):
    """The README's mapping table: a nested column is one BYTES element of JSON text per row."""
    return "TYPE_STRING" if is_nested(kind) else TRITON_DATATYPES[kind]


def numpy_dtype(kind):
    return np.dtype({"text": object, "binary": object, "fixed-text": str, "fixed-binary": bytes}.get(kind, kind))


def signature(case):
    """The explicit ``ModelSignature`` of a case that asks for one, else None."""
    if not case.explicit_signature:
        return None
    if case.structure == "columns":
        inputs = Schema([ColSpec(COLUMN_TYPES[field.kind], field.name) for field in case.fields])
    else:
        inputs = Schema([TensorSpec(numpy_dtype(field.kind), field.dims, field.name) for field in case.fields])
    if case.form in ("frame", "series"):
        outputs = Schema([ColSpec(COLUMN_TYPES[declared_kind(case, output)], output.key) for output in case.outputs])
    else:
        outputs = Schema(
            [
                TensorSpec(numpy_dtype(declared_kind(case, output)), output_dims(case, output), output.key)
                for output in case.outputs
            ]
        )
    return ModelSignature(inputs=inputs, outputs=outputs)


# -- models --------------------------------------------------------------------------------------------


def build_model(case):
    """The fitted model a case logs, and the extra ``log_model`` options it needs."""
    import_fidelity_models()
    if case.family == "sklearn-recipe":
        from fidelity_models.estimators import RecipeEstimator

        sources = [case.fields[output.source].name if case.structure != "tensor" else None for output in case.outputs]
        model = RecipeEstimator(
            outputs=tuple((output.key, source, output.operation) for output, source in zip(case.outputs, sources)),
            form=case.form,
            fixed_width=bool(case.option("fixed_width")),
        )
        return model, _serialization(case, ["fidelity_models.estimators.RecipeEstimator"])
    if case.family == "pytorch-recipe":
        from fidelity_models.modules import RecipeModule

        [output] = case.outputs
        features = len(case.fields) if case.structure == "columns" else case.fields[0].dims[-1]
        module = RecipeModule(output.operation, features if output.operation == "linear" else None)
        return module.eval(), {"code_paths": [str(FIDELITY_MODELS_DIR)]}
    from .pipelines import build_pipeline

    return build_pipeline(case)


def _serialization(case, trusted):
    options = {"code_paths": [str(FIDELITY_MODELS_DIR)]}
    if case.option("serialization", "cloudpickle") == "skops":
        options["skops_trusted_types"] = trusted
        options["serialization_format"] = "skops"
    else:
        options["serialization_format"] = "cloudpickle"
    return options


def import_fidelity_models():
    """Import ``fidelity_models`` by its top-level name, as Triton does from the model's ``code/``."""
    import importlib.util
    import sys

    if "fidelity_models" in sys.modules:
        return sys.modules["fidelity_models"]
    spec = importlib.util.spec_from_file_location(
        "fidelity_models", FIDELITY_MODELS_DIR / "__init__.py", submodule_search_locations=[str(FIDELITY_MODELS_DIR)]
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules["fidelity_models"] = module
    spec.loader.exec_module(module)
    return module
