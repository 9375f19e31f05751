"""MLflow signature -> (contract, Triton tensor declarations).

Column schemas become one rank-one tensor per column (dims ``[-1]``); tensor
schemas keep their declared shapes, ``-1`` only where the signature has it. A
single tensor, named or not, is an ndarray (structure ``tensor``); several named
tensors are a dict (``tensors``). Column labels are strings or integers (a
DataFrame's default labels ``0..n-1``): the contract keeps the original label.
Everything the runtime cannot rebuild faithfully is rejected here, before any
file is written, with a message naming the field.

Columns also map two column adapters (mapping version 4): a datetime input
column is an INT64 tensor of nanoseconds since the epoch (content ``datetime``),
and an optional column (MLflow infers one from an example, or a prediction, with
NaN or ``None``) gets a companion BOOL tensor ``<tensor>__missing`` marking its
missing rows, on inputs and outputs alike. An optional integer or long input
column gets no mask: MLflow's schema enforcement refuses missing values in
integer columns, so ``pyfunc.predict`` only ever takes complete ones; such an
output column is refused. Datetime output columns are refused (see ``docs/limits.md``).

Nested columns (mapping version 5): a column of MLflow type Array, Object or Map,
input or output, is a BYTES tensor of one JSON text per row (content ``json``, the
MLflow type recorded beside it; ``runtime/nested.py``); an optional one marks a
missing row as ``null``, without a mask. A 0-d prediction (MLflow infers ``Any``
for it) or an output tensor of shape ``()`` is a one-element tensor restored to
0-d (``scalar``). In a version 5 contract every optional input column (MLflow's
``required: false``) may be left out of a request (``optional``: its tensors are
declared ``optional: true``), as MLflow's LLM tasks expect of their generation
fields; so may an optional column the input example leaves out, which makes the
contract version 5 (a request could not send values the example never showed).
Contracts of older versions keep every input required.
"""

import dataclasses

import numpy as np
import pandas as pd
from mlflow.models import ModelSignature, infer_signature
from mlflow.types import ColSpec, DataType, Schema, TensorSpec
from mlflow.types.schema import AnyType, Array, Map, Object

from mlflow_triton.command_line import quiet_logger
from mlflow_triton.repository.layout import TensorDeclaration, TensorLayout
from mlflow_triton.repository.names import TensorNamer
from mlflow_triton.shared_contract import (
    BYTES_TYPE,
    DATETIME_CONTENT,
    JSON_CONTENT,
    NESTED_MAPPING_VERSION,
    NUMPY_TO_TRITON,
    Contract,
    FieldMapping,
    StructureMapping,
    writer_version,
)

from . import flavors
from .errors import UnsupportedSchemaError

# MLflow column type -> (Triton datatype, BYTES content; ``None`` for a numeric or boolean tensor). Every member
# of MLflow's DataType has an entry (tests/unit/logging_side/test_schema_mapping.py enumerates them).
COLUMN_TYPES = {
    DataType.boolean: ("TYPE_BOOL", None),
    DataType.integer: ("TYPE_INT32", None),
    DataType.long: ("TYPE_INT64", None),
    DataType.float: ("TYPE_FP32", None),
    DataType.double: ("TYPE_FP64", None),
    DataType.string: (BYTES_TYPE, "text"),
    DataType.binary: (BYTES_TYPE, "binary"),
    DataType.datetime: ("TYPE_INT64", DATETIME_CONTENT),  # input columns only
}
SUPPORTED_COLUMN_TYPE_NAMES = ", ".join(t.name for t in COLUMN_TYPES)
# Output columns: no datetime content (the runtime's outputs carry none); optional ones get a mask as inputs do.
OUTPUT_COLUMN_TYPE_NAMES = ", ".join(t.name for t in COLUMN_TYPES if t != DataType.datetime)
# Optional columns of these types carry no mask: MLflow's enforcement refuses missing integers.
UNMASKED_OPTIONAL_TYPES = (DataType.integer, DataType.long)
MISSING_MASK_SUFFIX = "__missing"
NESTED_COLUMN_TYPES = (Array, Object, Map)


def layout_from_signature(signature, flavor, examples=None, example_columns=None):
    """Map an MLflow ``ModelSignature`` onto Triton tensors.

    Raises UnsupportedSchemaError for a missing input or output schema, optional
    integer or datetime output columns, Any columns, nested values holding binary or
    datetime leaves, scalar input tensors or a scalar beside other tensors, dimensions
    Triton refuses (anything but -1 or >= 1), dtypes Triton has no datatype for,
    empty names and column labels other than strings and integers.

    ``examples`` (``{"input": example, "output": prediction}``, for a signature
    MLflow inferred from them) maps a scalar prediction; otherwise it only sharpens the message when MLflow's inference
    gave up on a whole side (an ``Any`` schema): the example names the column or
    scalar at fault. ``example_columns`` (the input example's column names, None
    if not a frame) marks the optional columns the example leaves out.
    """
    if signature is None:
        raise UnsupportedSchemaError("The model has no signature; pass signature= or an input_example")
    namer = TensorNamer()
    examples = examples or {}
    inputs_mapping, inputs = _map_schema(signature.inputs, "input", namer, examples.get("input"))
    outputs_mapping, outputs = _map_schema(signature.outputs, "output", namer, examples.get("output"))
    inputs_mapping, inputs = _mark_optional(signature.inputs, inputs_mapping, inputs, outputs_mapping, example_columns)
    version = writer_version(inputs_mapping, outputs_mapping)
    contract = Contract(flavor=flavor, inputs=inputs_mapping, outputs=outputs_mapping, version=version)
    return TensorLayout(contract=contract, inputs=inputs, outputs=outputs)


def _mark_optional(schema, mapping, declarations, outputs_mapping, example_columns):
    """The input side with its optional columns marked omittable, where the contract is version 5 (see the
    module docstring); unchanged otherwise."""
    if mapping.structure != "columns":
        return mapping, declarations
    specs = schema.inputs
    left_out = example_columns is not None and any(
        not spec.required and spec.name not in example_columns for spec in specs
    )
    if not left_out and writer_version(mapping, outputs_mapping) < NESTED_MAPPING_VERSION:
        return mapping, declarations
    fields = tuple(dataclasses.replace(f, optional=not spec.required) for spec, f in zip(specs, mapping.fields))
    omitted = {t for f in fields if f.optional for t in (f.tensor, f.missing) if t is not None}
    declarations = tuple(dataclasses.replace(d, optional=d.name in omitted) for d in declarations)
    return StructureMapping(structure=mapping.structure, fields=fields), declarations


def signature_for_pyfunc(signature, flavor):
    """The signature the MLflow package records: ``signature``, or a copy whose only input tensor is unnamed.

    When the input schema's only tensor is named, MLflow's schema enforcement hands
    ``predict`` a one-key dict instead of the ndarray, and the scikit-learn and
    PyTorch flavors refuse dicts ("does not support List or Dict input types").
    For the flavors whose registry entry says so (``Framework.dict_input``) the
    recorded input tensor is unnamed, so the ndarray passes through; the Triton
    tensor keeps the name (``layout_from_signature`` maps the original signature).
    """
    inputs = signature.inputs if signature is not None else None
    if not _is_single_named_tensor(inputs) or flavors.takes_dict_input(flavor):
        return signature
    [spec] = inputs.inputs
    unnamed = Schema([TensorSpec(spec.type, spec.shape)])
    return ModelSignature(inputs=unnamed, outputs=signature.outputs, params=signature.params)


def _is_single_named_tensor(schema):
    return (
        isinstance(schema, Schema)
        and schema.is_tensor_spec()
        and len(schema.inputs) == 1
        and schema.inputs[0].name is not None
    )


def _map_schema(schema, side, namer, example):
    if not isinstance(schema, Schema) or not schema.inputs:
        raise UnsupportedSchemaError(
            f"The signature has no {side} schema; mlflow-triton needs both inputs and outputs to declare the Triton "
            "tensors: pass infer_signature(example, model's prediction of it), or signature=None with an "
            "input_example (the signature is then inferred from the example and its prediction)"
        )
    if side == "output" and _is_scalar(example) and _is_one_unnamed_column(schema):
        # A scalar prediction: MLflow infers Any (0-d array) or one column (a number); it is one 0-d value.
        dtype = np.asarray(example).dtype
        # Text is an object tensor: MLflow's TensorSpec refuses sized string dtypes ('<U5').
        schema = Schema([TensorSpec(np.dtype(object) if dtype.kind in "US" else dtype, ())])
    if example is not None and is_any_schema(schema):
        reason = _explain_uninferable(example, side)
        if reason is not None:
            raise UnsupportedSchemaError(reason)
    if schema.is_tensor_spec():
        specs = schema.inputs
        if len(specs) > 1 and not schema.has_input_names():
            raise UnsupportedSchemaError(f"The {side} schema has several unnamed tensors; name them")
        structure = "tensor" if len(specs) == 1 else "tensors"
        scalar = next((i for i, spec in enumerate(specs) if not spec.shape), None)
        if structure == "tensors" and scalar is not None:
            raise UnsupportedSchemaError(
                f"{_label(specs[scalar].name, side, scalar, 'Tensor')}: a scalar (shape ()) is mapped as the only "
                "tensor of its side, not beside others; give it a dimension"
            )
        mapped = [_map_tensor(spec, side, i, namer) for i, spec in enumerate(specs)]
    else:
        structure = "columns"
        mapped = [_map_column(spec, side, i, namer) for i, spec in enumerate(schema.inputs)]
        # Masks are named after every column is: a column's own name never gets a suffix because of a mask.
        masks = [_missing_mask(spec, field, namer) for spec, (field, _) in zip(schema.inputs, mapped)]
        mapped = [(dataclasses.replace(field, missing=mask), d) for (field, d), mask in zip(mapped, masks)]
        mapped += [(None, TensorDeclaration(name=mask, data_type="TYPE_BOOL", dims=(-1,))) for mask in masks if mask]
    fields = tuple(field for field, _ in mapped if field is not None)
    declarations = tuple(declaration for _, declaration in mapped)
    return StructureMapping(structure=structure, fields=fields), declarations


def _map_column(spec, side, position, namer):
    label = _label(spec.name, side, position, "Column")
    name = _field_name(spec.name, label)
    if side == "input" and type(name) is int and name == 0 and position != 0:
        raise UnsupportedSchemaError(
            f"{label}: the label 0 at position {position} cannot be served: MLflow's schema enforcement "
            f"reads it as an unnamed column and looks for position {position} instead; put the column "
            "first or rename the columns"
        )
    if isinstance(spec, ColSpec) and isinstance(spec.type, NESTED_COLUMN_TYPES):
        return _map_nested_column(spec, name, label, side, position, namer)
    if not isinstance(spec, ColSpec) or not isinstance(spec.type, DataType):
        kind = type(spec.type).__name__
        raise UnsupportedSchemaError(
            f"{label}: {kind} columns are not mapped; supported: {SUPPORTED_COLUMN_TYPE_NAMES} and the nested "
            "types Array, Object and Map"
        )
    if side == "output" and not spec.required and spec.type in UNMASKED_OPTIONAL_TYPES:
        raise UnsupportedSchemaError(
            f"{label}: an optional {spec.type.name} output column is not mapped (a missing-value mask serves "
            "bool, float, double, string and binary columns); return the column as float (NaN for a missing "
            "value) or complete"
        )
    if side == "output" and spec.type == DataType.datetime:
        raise UnsupportedSchemaError(
            f"{label}: datetime output columns are not mapped (only input columns carry datetimes); return the "
            f"times as int64 nanoseconds or text; supported: {OUTPUT_COLUMN_TYPE_NAMES}"
        )
    if spec.type not in COLUMN_TYPES:
        raise UnsupportedSchemaError(
            f"{label}: {spec.type.name} columns are not supported; supported: {SUPPORTED_COLUMN_TYPE_NAMES}"
        )
    data_type, content = COLUMN_TYPES[spec.type]
    tensor = namer.claim(name, f"{side}_{position}")
    return (
        FieldMapping(name=name, tensor=tensor, content=content),
        TensorDeclaration(name=tensor, data_type=data_type, dims=(-1,)),
    )


def _map_nested_column(spec, name, label, side, position, namer):
    """An Array, Object or Map column: a BYTES tensor of JSON texts, the MLflow type in the contract."""
    mlflow_type = spec.type.to_dict()
    leaf = _leaf_not_mapped(mlflow_type)
    if leaf is not None:
        raise UnsupportedSchemaError(
            f"{label}: a nested value holding {leaf} values is not mapped (each row travels as JSON text, which "
            f"carries no {leaf}); nested values may hold {', '.join(sorted(_JSON_LEAVES))}"
        )
    tensor = namer.claim(name, f"{side}_{position}")
    return (
        FieldMapping(name=name, tensor=tensor, content=JSON_CONTENT, type=mlflow_type),
        TensorDeclaration(name=tensor, data_type=BYTES_TYPE, dims=(-1,)),
    )


# The leaf types JSON text carries inside a nested value (binary and datetime it cannot).
_JSON_LEAVES = {"boolean", "integer", "long", "float", "double", "string", "any"}


def _leaf_not_mapped(mlflow_type):
    """The first leaf type of a nested MLflow type (as ``to_dict`` writes it) that JSON cannot carry, or None."""
    kind = mlflow_type.get("type")
    if kind == "array":
        return _leaf_not_mapped(mlflow_type["items"])
    if kind == "map":
        return _leaf_not_mapped(mlflow_type["values"])
    if kind == "object":
        found = (_leaf_not_mapped(prop) for prop in mlflow_type["properties"].values())
        return next((leaf for leaf in found if leaf is not None), None)
    return None if kind in _JSON_LEAVES else kind


def _is_scalar(value):
    """A 0-d array, a numpy scalar or a Python number, bool or str (what ``predict`` may return for one value)."""
    if isinstance(value, np.ndarray):
        return value.ndim == 0
    return isinstance(value, (np.generic, int, float, str))


def may_be_a_scalar_prediction(schema):
    """Whether a prediction for this output schema may be a scalar: one unnamed column (what MLflow infers, and
    records, for a model that returns one value, such as a models-from-code sample returning a string)."""
    return _is_one_unnamed_column(schema)


def _is_one_unnamed_column(schema):
    return (
        isinstance(schema, Schema)
        and not schema.is_tensor_spec()
        and len(schema.inputs) == 1
        and schema.inputs[0].name is None
    )


def _missing_mask(spec, field, namer):
    """The name of the BOOL tensor marking the missing rows of an optional column, or None."""
    if spec.required or spec.type in UNMASKED_OPTIONAL_TYPES or isinstance(spec.type, NESTED_COLUMN_TYPES):
        return None
    return namer.claim(f"{field.tensor}{MISSING_MASK_SUFFIX}", f"{field.tensor}{MISSING_MASK_SUFFIX}")


def _map_tensor(spec, side, position, namer):
    label = _label(spec.name, side, position, "Tensor")
    name = _field_name(spec.name, label)
    bad = [d for d in spec.shape if not _is_triton_dim(d)]
    if bad:
        raise UnsupportedSchemaError(
            f"{label}: shape {tuple(spec.shape)} has dimension(s) {', '.join(map(repr, bad))}; "
            "Triton allows integers >= 1, or -1 for a variable-size dimension"
        )
    shape = tuple(int(d) for d in spec.shape)
    if not shape and side == "input":
        raise UnsupportedSchemaError(
            f"{label}: scalar input tensors (shape ()) are not mapped (a request's tensors have at least one "
            "dimension); declare at least one dimension"
        )
    if side == "input" and np.dtype(spec.type).kind in ("U", "S"):
        raise UnsupportedSchemaError(
            f"{label}: fixed-width {'str' if np.dtype(spec.type).kind == 'U' else 'bytes'} input tensors need a "
            "serving adapter (Triton delivers BYTES as object arrays, which MLflow's schema enforcement refuses for "
            "this dtype); supported: an object-dtype array of str/bytes, or a DataFrame string/binary column"
        )
    data_type, content = triton_type_for_dtype(spec.type, label)
    tensor = namer.claim(name, f"{side}_{position}")
    return (
        FieldMapping(name=name, tensor=tensor, content=content, scalar=not shape),
        TensorDeclaration(name=tensor, data_type=data_type, dims=shape or (1,)),
    )


def _field_name(name, label):
    """The name the contract records: a string, an integer label or None (unnamed)."""
    if name is None or isinstance(name, str) and name:
        return name
    if name == "":
        raise UnsupportedSchemaError(
            f"{label}: an empty name cannot be served: MLflow's schema enforcement takes it for an unnamed "
            "field at position 0 and refuses the input; give it a non-empty name"
        )
    if isinstance(name, (int, np.integer)) and not isinstance(name, (bool, np.bool_)):
        return int(name)
    raise UnsupportedSchemaError(
        f"{label}: a {type(name).__name__} label is not supported; supported: string or integer labels "
        "(rename the columns, e.g. frame.columns = frame.columns.astype(str))"
    )


def is_any_schema(schema):
    """Whether MLflow's inference gave up on this side: a single ``Any`` column."""
    return not schema.is_tensor_spec() and len(schema.inputs) == 1 and isinstance(schema.inputs[0].type, AnyType)


def _explain_uninferable(value, side):
    """Why MLflow could not infer a schema for ``value``, naming the column or scalar; None if unknown.

    MLflow collapses a whole frame into one ``Any`` column when a single column
    has no MLflow type (timedelta, complex, ...), and a 0-d array into ``Any``:
    here each column is inferred on its own to find the one at fault.
    """
    kind = "input example" if side == "input" else "prediction of the example"
    if isinstance(value, (np.generic, int, float, bool)) or (isinstance(value, np.ndarray) and value.ndim == 0):
        return (
            f"Tensor #0 of the {side} schema: the {kind} is a scalar ({np.asarray(value).dtype}, shape ()); "
            "scalar tensors need a serving adapter; give it at least one dimension (e.g. a batch axis)"
        )
    if isinstance(value, pd.Series):
        value = value.to_frame()
    if not isinstance(value, pd.DataFrame):
        return None
    for position, label in enumerate(value.columns):
        column = value.iloc[:, [position]]
        with quiet_logger("mlflow.models.signature"):  # its warning per column that fails: the error names it
            inferred = infer_signature(column).inputs
        if is_any_schema(inferred):
            return (
                f"{_label(label, side, position, 'Column')}: the {kind} holds {column.dtypes.iloc[0]} values, "
                f"which have no MLflow column type (MLflow's inference then gives up on the whole frame); "
                f"supported: {SUPPORTED_COLUMN_TYPE_NAMES}; convert the column before logging"
            )
    return None


def _is_triton_dim(dim):
    """Triton accepts integers >= 1 and -1 (variable size) as dims."""
    if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)):
        return False
    return dim >= 1 or dim == -1


def triton_type_for_dtype(dtype, label):
    """numpy dtype -> (Triton datatype, BYTES content) or UnsupportedSchemaError."""
    dtype = np.dtype(dtype)
    if dtype.kind in ("U", "O"):
        return BYTES_TYPE, "text"
    if dtype.kind == "S":
        return BYTES_TYPE, "binary"
    if dtype.name in NUMPY_TO_TRITON and dtype.name != "object":
        return NUMPY_TO_TRITON[dtype.name], None
    supported = ", ".join(sorted(n for n in NUMPY_TO_TRITON if n != "object")) + ", str, bytes"
    raise UnsupportedSchemaError(f"{label}: dtype {dtype} has no Triton datatype; supported: {supported}")


def _label(name, side, position, kind):
    if name is None:
        return f"{kind} #{position} of the {side} schema"
    if isinstance(name, str) and name:
        return f"{kind} `{name}` of the {side} schema"
    return f"{kind} {name!r} of the {side} schema"  # an integer label, or '' for the empty name
