"""Hypothesis strategies: hostile names, MLflow signatures and contracts."""

import numpy as np
import pandas as pd
from hypothesis import strategies as st
from hypothesis.extra import numpy as npst
from mlflow.models import ModelSignature
from mlflow.types import ColSpec, DataType, Schema, TensorSpec

from mlflow_triton.shared_contract import Contract, FieldMapping, StructureMapping

# Names chosen to break quoting, escaping and sanitizing: quotes, spaces, unicode,
# newlines, braces, backslashes, leading digits, empty strings, names that sanitize
# to the same thing, and names equal to the generated defaults or their suffixes.
HOSTILE_NAMES = (
    "",
    " ",
    "\t",
    "\n",
    "line\nbreak",
    "\r\n",
    "\x00",
    '"',
    "'",
    '"quoted"',
    "it's",
    '\\"',
    "\\",
    "\\n",
    "back\\slash",
    "{",
    "}",
    "{}",
    "{x}",
    "}{",
    "[0]",
    "a b",
    "a_b",
    "a-b",
    "a.b",
    "a  b",
    "_a_b_",
    "a_b_2",
    "a_b_3",
    "1",
    "1st",
    "0_0",
    "_1st",
    "123",
    "input_0",
    "input_1",
    "output_0",
    "output_0_2",
    "ü",
    "u",
    "Ü",
    "über",
    "uber",
    "名前",
    "émoji 🎉",
    "ﬁ",
    "fi",
    "①",
    "a\u00a0b",
    "Ω",
    "\U00010000",
    "\U0001f600",
    "__",
    "-",
    ".",
    "..",
    "/",
    "a/b",
)

# Every Unicode scalar value: all code points but surrogates, which are not text (JSON
# reads an escaped high+low pair back as one astral character); the contract rejects them.
ANY_CHARACTER = st.characters(codec="utf-8")
SURROGATES = st.characters(categories=["Cs"])

names = st.one_of(
    st.sampled_from(HOSTILE_NAMES),
    st.text(ANY_CHARACTER, max_size=10),
    st.text(st.sampled_from(" _-ab1ü{}\"'\\\n"), max_size=6),
)
# Names that are not valid Unicode text: at least one surrogate code point inside a name.
names_with_surrogates = st.tuples(names, st.text(SURROGATES, min_size=1, max_size=2), names).map("".join)
# MLflow reads a field named "" as unnamed field 0 and the mapping rejects it, so signature
# field names are non-empty. Column labels may also be integers; 0 is left out because MLflow
# reads it as "unnamed" too (the mapping accepts it as the first input column only).
field_names = names.filter(lambda name: name != "")
integer_labels = st.integers(1, 12)

SUPPORTED_COLUMN_TYPES = (
    DataType.boolean,
    DataType.integer,
    DataType.long,
    DataType.float,
    DataType.double,
    DataType.string,
    DataType.binary,
)
SUPPORTED_TENSOR_DTYPES = tuple(
    np.dtype(t)
    for t in (
        "bool",
        "uint8",
        "uint16",
        "uint32",
        "uint64",
        "int8",
        "int16",
        "int32",
        "int64",
        "float16",
        "float32",
        "float64",
        object,
        str,
        bytes,
    )
)

# Fixed-width str/bytes tensors are supported as outputs only (see _schema._map_tensor).
INPUT_TENSOR_DTYPES = tuple(d for d in SUPPORTED_TENSOR_DTYPES if d.kind not in "US")

column_types = st.sampled_from(SUPPORTED_COLUMN_TYPES)
tensor_dtypes = st.sampled_from(SUPPORTED_TENSOR_DTYPES)
input_tensor_dtypes = st.sampled_from(INPUT_TENSOR_DTYPES)
shapes = st.lists(st.one_of(st.just(-1), st.integers(1, 64)), min_size=1, max_size=4).map(tuple)

MAX_FIELDS = 6


def _unique_names(min_size=1, labels=field_names):
    # unique_by=str: MLflow cannot tell the labels 0 and "0" apart in one frame.
    return st.lists(labels, min_size=min_size, max_size=MAX_FIELDS, unique_by=str)


named_column_schemas = _unique_names(labels=st.one_of(field_names, integer_labels)).flatmap(
    lambda ns: st.lists(column_types, min_size=len(ns), max_size=len(ns)).map(
        lambda types: Schema([ColSpec(t, n) for t, n in zip(types, ns)])
    )
)
unnamed_column_schemas = st.lists(column_types, min_size=1, max_size=MAX_FIELDS).map(
    lambda types: Schema([ColSpec(t) for t in types])
)


def _tensor_schemas(dtypes):
    single = st.builds(lambda dtype, shape: Schema([TensorSpec(dtype, shape)]), dtypes, shapes)
    named = _unique_names().flatmap(
        lambda ns: st.lists(st.tuples(dtypes, shapes), min_size=len(ns), max_size=len(ns)).map(
            lambda specs: Schema([TensorSpec(dtype, shape, n) for (dtype, shape), n in zip(specs, ns)])
        )
    )
    return single, named


single_tensor_schemas, named_tensor_schemas = _tensor_schemas(tensor_dtypes)
schemas = st.one_of(named_column_schemas, unnamed_column_schemas, single_tensor_schemas, named_tensor_schemas)
input_schemas = st.one_of(named_column_schemas, unnamed_column_schemas, *_tensor_schemas(input_tensor_dtypes))

signatures = st.builds(ModelSignature, inputs=input_schemas, outputs=schemas)

# --- contracts, independent of signatures ------------------------------------------------------

any_text = st.text(ANY_CHARACTER, max_size=12)
contents = st.sampled_from((None, "text", "binary"))


@st.composite
def _structure(draw, tensor_names):
    structure = draw(st.sampled_from(("columns", "tensor", "tensors")))
    if structure == "tensor":
        tensor_names = tensor_names[:1]
    if structure == "tensors":
        field_names = draw(st.lists(any_text, min_size=len(tensor_names), max_size=len(tensor_names), unique=True))
    else:
        field_names = draw(
            st.lists(
                st.one_of(st.none(), any_text, st.integers()), min_size=len(tensor_names), max_size=len(tensor_names)
            ).filter(lambda ns: len([n for n in ns if n is not None]) == len({n for n in ns if n is not None}))
        )
    fields = [FieldMapping(name, tensor, draw(contents)) for name, tensor in zip(field_names, tensor_names)]
    return StructureMapping(structure, tuple(fields))


@st.composite
def contracts(draw):
    tensor_names = draw(st.lists(st.text(ANY_CHARACTER, min_size=1, max_size=12), min_size=2, max_size=10, unique=True))
    split = draw(st.integers(1, len(tensor_names) - 1))
    return Contract(
        flavor=draw(st.text(ANY_CHARACTER, min_size=1, max_size=12)),
        inputs=draw(_structure(tensor_names[:split])),
        outputs=draw(_structure(tensor_names[split:])),
    )


# --- schemas paired with data, for codec round trips ---------------------------------------------
# Each strategy draws ``(schema, value)``: an MLflow schema the codecs are built from (through
# layout_from_signature, like the logging side) and a value that satisfies it, the way MLflow's
# own schema enforcement hands it to ``predict``.

HOSTILE_TEXTS = ("", " ", "\x00", "a\x00", "\x00\x00", "ab\x00\x00", "ü", "名前", "🎉", "e\u0301", "\r\n", "\\")
HOSTILE_BINARIES = (b"", b"\x00", b"ab\x00\x00", b"\x00ab", b"\xff\xfe", b"\xc3", "🎉".encode())

# Text that UTF-8 can carry: every code point except lone surrogates.
utf8_texts = st.one_of(st.sampled_from(HOSTILE_TEXTS), st.text(st.characters(codec="utf-8"), max_size=8))
binaries = st.one_of(st.sampled_from(HOSTILE_BINARIES), st.binary(max_size=8))


def _utf8_encodable(name):
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


# pandas 3 (pyarrow strings) cannot build a column index holding a lone surrogate, so column
# names are also UTF-8; dict keys keep the rest of the hostile set. DataFrame labels may also be
# integers (pd.DataFrame(X) labels its columns 0..n-1).
column_names = st.one_of(field_names.filter(_utf8_encodable), integer_labels)

# MLflow column type -> (element strategy, pandas dtype; None lets pandas infer, as for text).
COLUMN_VALUES = {
    DataType.boolean: (st.booleans(), "bool"),
    DataType.integer: (st.integers(-(2**31), 2**31 - 1), "int32"),
    DataType.long: (st.integers(-(2**63), 2**63 - 1), "int64"),
    DataType.float: (st.floats(width=32), "float32"),
    DataType.double: (st.floats(), "float64"),
    DataType.string: (utf8_texts, None),
    DataType.binary: (binaries, "object"),
}
MAX_ROWS = 5


@st.composite
def column_frames(draw, named=None, max_columns=MAX_FIELDS):
    """``(Schema of required columns, DataFrame)``; unnamed columns are keyed 0, 1, …"""
    if named is None:
        named = draw(st.booleans())
    types = draw(st.lists(column_types, min_size=1, max_size=max_columns))
    if named:
        keys = draw(st.lists(column_names, min_size=len(types), max_size=len(types), unique_by=str))
    else:
        keys = list(range(len(types)))
    rows = draw(st.integers(0, MAX_ROWS))
    columns = {}
    for key, column_type in zip(keys, types):
        elements, dtype = COLUMN_VALUES[column_type]
        values = draw(st.lists(elements, min_size=rows, max_size=rows))
        columns[key] = pd.Series(values, dtype=dtype)
    schema = Schema([ColSpec(t, k if named else None) for t, k in zip(types, keys)])
    return schema, pd.DataFrame(columns)


# Tensor dtypes the runtime rebuilds as MLflow expects them. Text travels as ``object``
# (infer_signature's dtype for object arrays of str); fixed-width str/bytes inputs are rejected.
NUMERIC_TENSOR_DTYPES = tuple(d for d in SUPPORTED_TENSOR_DTYPES if d.kind in "biuf")
ROUND_TRIP_TENSOR_DTYPES = NUMERIC_TENSOR_DTYPES + (np.dtype(object),)
small_dims = st.lists(st.one_of(st.just(-1), st.integers(1, 3)), min_size=1, max_size=3).map(tuple)


@st.composite
def tensor_arrays(draw, dtype, dims):
    """An array for a ``TensorSpec(dtype, dims)``; -1 dimensions get 0 to 3 entries."""
    shape = tuple(draw(st.integers(0, 3)) if d == -1 else d for d in dims)
    if dtype.kind == "O":
        return draw(npst.arrays(object, shape, elements=utf8_texts))
    if dtype.kind == "S":
        return draw(npst.arrays(object, shape, elements=binaries))
    return draw(npst.arrays(dtype, shape))


@st.composite
def single_tensors(draw, dtypes=ROUND_TRIP_TENSOR_DTYPES):
    """``(Schema with one TensorSpec, named or not, ndarray)``: a single tensor is an ndarray either way."""
    dtype = draw(st.sampled_from(dtypes))
    dims = draw(small_dims)
    name = draw(st.one_of(st.none(), field_names))
    return Schema([TensorSpec(dtype, dims, name)]), draw(tensor_arrays(dtype, dims))


@st.composite
def named_tensor_dicts(draw, dtypes=ROUND_TRIP_TENSOR_DTYPES):
    """``(Schema of two or more named TensorSpecs, dict of ndarrays)``."""
    keys = draw(st.lists(field_names, min_size=2, max_size=4, unique=True))
    specs, value = [], {}
    for key in keys:
        dtype = draw(st.sampled_from(dtypes))
        dims = draw(small_dims)
        specs.append(TensorSpec(dtype, dims, key))
        value[key] = draw(tensor_arrays(dtype, dims))
    return Schema(specs), value


schema_values = st.one_of(column_frames(), single_tensors(), named_tensor_dicts())


# --- optional and datetime input columns (mapping version 4) -------------------------------------
# MLflow column type -> (element strategy, pandas dtype when no value is missing). A missing value is
# drawn as None; pandas turns it into NaN (floats, text), NaT (datetimes) or keeps None (object).
# Datetimes are drawn as nanoseconds in a unit pandas keeps exactly; MLflow's enforcement makes them ns.
DATETIME_UNITS = {"ns": 1, "us": 10**3, "s": 10**9}
ADAPTED_COLUMN_VALUES = {
    DataType.boolean: (st.booleans(), "bool"),
    DataType.float: (st.floats(width=32, allow_nan=False), "float32"),
    DataType.double: (st.floats(allow_nan=False), "float64"),
    DataType.string: (utf8_texts, None),
    DataType.binary: (binaries, "object"),
    DataType.datetime: (st.integers(-(2**63) + 1, 2**63 - 1), None),
    DataType.long: (st.integers(-(2**63), 2**63 - 1), "int64"),
}


def _towards_zero(value, step):
    """``value / step`` rounded towards the epoch, so the time stays within datetime64[ns]'s range."""
    return value // step if value >= 0 else -(-value // step)


def _adapted_column(values, column_type, unit):
    """A pandas column of ``values`` (None for a missing one), as a caller's frame would hold it."""
    if column_type == DataType.datetime:
        step = DATETIME_UNITS[unit]
        times = [
            np.datetime64("NaT", unit) if v is None else np.datetime64(_towards_zero(v, step), unit) for v in values
        ]
        return pd.Series(np.array(times, dtype=f"datetime64[{unit}]"))
    _, dtype = ADAPTED_COLUMN_VALUES[column_type]
    if None in values and column_type in (DataType.boolean, DataType.binary):
        return pd.Series(values, dtype=object)
    if None in values and column_type in (DataType.float, DataType.double):
        return pd.Series([np.nan if v is None else v for v in values], dtype=dtype)
    return pd.Series(values, dtype=dtype)


@st.composite
def adapted_column_frames(draw, max_columns=4):
    """``(Schema, DataFrame)`` with optional columns (holding missing values) and datetime columns.

    Optional integer columns hold no missing value: MLflow's enforcement refuses them anyway.
    """
    types = draw(st.lists(st.sampled_from(list(ADAPTED_COLUMN_VALUES)), min_size=1, max_size=max_columns))
    keys = draw(st.lists(column_names, min_size=len(types), max_size=len(types), unique_by=str))
    rows = draw(st.integers(0, MAX_ROWS))
    specs, columns = [], {}
    for key, column_type in zip(keys, types):
        elements, _ = ADAPTED_COLUMN_VALUES[column_type]
        required = draw(st.booleans())
        if required or column_type == DataType.long:
            values = draw(st.lists(elements, min_size=rows, max_size=rows))
        else:
            values = draw(st.lists(st.one_of(st.none(), elements), min_size=rows, max_size=rows))
        columns[key] = _adapted_column(values, column_type, draw(st.sampled_from(list(DATETIME_UNITS))))
        specs.append(ColSpec(column_type, key, required=required))
    return Schema(specs), pd.DataFrame(columns)
