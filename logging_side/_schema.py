"""MLflow signature -> (contract, Triton tensor declarations).

Column schemas become one rank-one tensor per column (dims ``[-1]``); tensor
schemas keep their declared shapes, ``-1`` only where the signature has it.
Everything the runtime cannot rebuild faithfully is rejected here, before any
file is written, with a message naming the field.
"""

import dataclasses

import numpy as np
from mlflow.types import ColSpec, DataType, Schema

from mlflow_triton.shared_contract import (
    BYTES_TYPE,
    NUMPY_TO_TRITON,
    Contract,
    FieldMapping,
    StructureMapping,
)

from ._names import TensorNamer
from .errors import UnsupportedSchemaError

# MLflow column type -> (Triton datatype, BYTES content). ``None`` marks a type
# that needs a serving adapter, with the reason in UNSUPPORTED_COLUMN_TYPES.
COLUMN_TYPES = {
    DataType.boolean: ("TYPE_BOOL", None),
    DataType.integer: ("TYPE_INT32", None),
    DataType.long: ("TYPE_INT64", None),
    DataType.float: ("TYPE_FP32", None),
    DataType.double: ("TYPE_FP64", None),
    DataType.string: (BYTES_TYPE, "text"),
    DataType.binary: (BYTES_TYPE, "binary"),
}
UNSUPPORTED_COLUMN_TYPES = {
    DataType.datetime: "datetime columns need a serving adapter",
}
SUPPORTED_COLUMN_TYPE_NAMES = ", ".join(t.name for t in COLUMN_TYPES)


@dataclasses.dataclass(frozen=True)
class TensorDeclaration:
    """One ``input``/``output`` entry of config.pbtxt."""

    name: str
    data_type: str
    dims: "tuple[int, ...]"


@dataclasses.dataclass(frozen=True)
class TensorLayout:
    """What a signature becomes: the contract plus the config's tensor entries."""

    contract: Contract
    inputs: "tuple[TensorDeclaration, ...]"
    outputs: "tuple[TensorDeclaration, ...]"


def layout_from_signature(signature, flavor):
    """Map an MLflow ``ModelSignature`` onto Triton tensors.

    Raises UnsupportedSchemaError for a missing input or output schema, optional
    or datetime columns, Array/Object/Map/Any types, scalar tensors, dimensions
    Triton refuses (anything but -1 or >= 1) and dtypes Triton has no datatype for.
    """
    if signature is None:
        raise UnsupportedSchemaError("The model has no signature; pass signature= or an input_example")
    namer = TensorNamer()
    inputs_mapping, inputs = _map_schema(signature.inputs, "input", namer)
    outputs_mapping, outputs = _map_schema(signature.outputs, "output", namer)
    contract = Contract(flavor=flavor, inputs=inputs_mapping, outputs=outputs_mapping)
    return TensorLayout(contract=contract, inputs=inputs, outputs=outputs)


def _map_schema(schema, side, namer):
    if not isinstance(schema, Schema) or not schema.inputs:
        raise UnsupportedSchemaError(
            f"The signature has no {side} schema; mlflow-triton needs both inputs and outputs"
        )
    if schema.is_tensor_spec():
        specs = schema.inputs
        named = schema.has_input_names()
        if not named and len(specs) > 1:
            raise UnsupportedSchemaError(f"The {side} schema has several unnamed tensors; name them")
        structure = "tensors" if named else "tensor"
        mapped = [_map_tensor(spec, side, i, namer) for i, spec in enumerate(specs)]
    else:
        structure = "columns"
        mapped = [_map_column(spec, side, i, namer) for i, spec in enumerate(schema.inputs)]
    fields = tuple(field for field, _ in mapped)
    declarations = tuple(declaration for _, declaration in mapped)
    return StructureMapping(structure=structure, fields=fields), declarations


def _map_column(spec, side, position, namer):
    label = _label(spec.name, side, position, "Column")
    if not isinstance(spec, ColSpec) or not isinstance(spec.type, DataType):
        kind = type(spec.type).__name__
        raise UnsupportedSchemaError(
            f"{label}: {kind} columns (nested/object schemas) need a serving adapter; "
            f"supported: {SUPPORTED_COLUMN_TYPE_NAMES}"
        )
    if not spec.required:
        raise UnsupportedSchemaError(
            f"{label}: optional columns need a serving adapter; mark the column required "
            f"(supported: required {SUPPORTED_COLUMN_TYPE_NAMES} columns)"
        )
    if spec.type not in COLUMN_TYPES:
        reason = UNSUPPORTED_COLUMN_TYPES.get(spec.type, f"{spec.type.name} columns are not supported")
        raise UnsupportedSchemaError(f"{label}: {reason}; supported: {SUPPORTED_COLUMN_TYPE_NAMES}")
    data_type, content = COLUMN_TYPES[spec.type]
    tensor = namer.claim(spec.name, f"{side}_{position}")
    return (
        FieldMapping(name=spec.name, tensor=tensor, content=content),
        TensorDeclaration(name=tensor, data_type=data_type, dims=(-1,)),
    )


def _map_tensor(spec, side, position, namer):
    label = _label(spec.name, side, position, "Tensor")
    bad = [d for d in spec.shape if not _is_triton_dim(d)]
    if bad:
        raise UnsupportedSchemaError(
            f"{label}: shape {tuple(spec.shape)} has dimension(s) {', '.join(map(repr, bad))}; "
            "Triton allows integers >= 1, or -1 for a variable-size dimension"
        )
    shape = tuple(int(d) for d in spec.shape)
    if not shape:
        raise UnsupportedSchemaError(
            f"{label}: scalar tensors (shape ()) need a serving adapter; declare at least one dimension"
        )
    if side == "input" and np.dtype(spec.type).kind in ("U", "S"):
        raise UnsupportedSchemaError(
            f"{label}: fixed-width {np.dtype(spec.type)} input tensors need a serving adapter (Triton delivers "
            "BYTES as object arrays, which MLflow's schema enforcement refuses for this dtype); supported: an "
            "object-dtype array of str/bytes, or a DataFrame string/binary column"
        )
    data_type, content = triton_type_for_dtype(spec.type, label)
    tensor = namer.claim(spec.name, f"{side}_{position}")
    return (
        FieldMapping(name=spec.name, tensor=tensor, content=content),
        TensorDeclaration(name=tensor, data_type=data_type, dims=shape),
    )


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
    return f"{kind} `{name}` of the {side} schema"
