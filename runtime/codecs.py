"""Tensors <-> MLflow model values, in symmetric pairs.

A ``StructureCodec`` serves one side of the contract (inputs or outputs):

* ``from_tensors(arrays)`` rebuilds the MLflow value (DataFrame, ndarray or dict
  of ndarrays) from Triton tensors. Inside Triton it decodes requests; on the
  logging side and in tests it reads outputs back. Tensors must have exactly the
  configured dtype and shape; column tensors must have equal lengths.
* ``to_tensors(value)`` splits an MLflow value into Triton tensors with the
  configured dtypes and shapes. Inside Triton it encodes predictions; on the
  logging side it turns the input example into the shipped request.

Round trips are exact for values that already have the configured dtypes and
shapes. ``to_tensors`` converts a value only where it keeps its value (see
``conversions.py`` for exactly which conversions are allowed) and turns text
into UTF-8 bytes, so ``from_tensors(to_tensors(x))`` returns the configured
dtype, ``str`` for text and ``bytes`` for binary fields. Anything else raises
``TensorMappingError`` naming the tensor.

A ``tensor`` structure takes an ndarray (or a dict holding just its named key);
a ``columns`` structure takes a DataFrame, a Series, a dict of equal-length
columns, a list of records or a 2-D array with one column per field. Lists and
tuples of values are read element by element (as object arrays): numpy's own
inference would round some mixes of integers and floats. So are records (pandas
would turn ``None`` or a missing key into NaN) and nullable pandas columns that
hold ``pd.NA``.

Column adapters (mapping version 4, ``columns`` only): a field with ``content``
``datetime`` is an INT64 tensor of nanoseconds since the epoch, rebuilt as a
``datetime64[ns]`` column (the dtype MLflow's schema enforcement turns every
datetime column into). A field with ``missing`` has a companion BOOL tensor of
the same shape: ``to_tensors`` marks the rows whose value is missing and sends a
placeholder there; ``from_tensors`` puts the column's missing value back (see
``conversions.py``). The mask is a required input, except beside the values of an
``optional`` column (mapping version 5), where leaving it out means no row is missing.

Mapping version 5: a field with ``content`` ``json`` (``columns`` only) is a
BYTES tensor of one JSON text per row, read into lists and dicts and written
from them by ``nested.py``; a ``scalar`` field (``tensor`` only) is a
one-element tensor that is a 0-d array on the MLflow side (``to_tensors`` takes
only a 0-d value for it, ``from_tensors`` gives one back). An ``optional`` input
column may be absent: ``from_tensors`` then builds the frame without it (a
request that sends its mask but not its values fails), and ``to_tensors`` sends
no tensor for a column the value does not hold.

Records (a list of dicts, as MLflow's LLM tasks predict) may leave out a JSON
field's key; the row is then ``null``, as for a missing row. A dict whose scalar
columns hold single values, or whose nested column holds one value of its type
(``{"y": [1.0, 2.0]}`` for an ``Array(double)`` column), is one record (one row),
not a dict of columns, as MLflow reads such a dict.

The outputs' codec is built with ``prediction=True``: a prediction holding a
column or key that no field maps is refused, naming it. MLflow's server returns
every column ``predict`` returns; an answer without one would be another answer.
"""

import numpy as np
import pandas as pd

# <mlflow-triton package imports: removed when composing model.py>
from ..shared_contract.contract import BYTES_TYPE, DATETIME_CONTENT, JSON_CONTENT, TRITON_TO_NUMPY
from .conversions import (
    TensorMappingError,
    as_bytes,
    decode_text,
    fill_missing,
    from_nanoseconds,
    missing_of,
    object_array,
    to_bytes_items,
    to_nanoseconds,
    to_numbers,
    with_missing,
)
from .nested import from_json_texts, to_json_texts

# </mlflow-triton package imports>


def tensor_types_from_model_config(model_config, side):
    """``{tensor name: (data_type, dims)}`` from Triton's JSON model config.

    ``side`` is ``"input"`` or ``"output"``. Datatypes and shapes are read from
    these config fields only, never from the contract. With ``max_batch_size > 0``
    the dims are the logged shape, batch axis first: ``-1`` followed by the dims,
    or by the ``reshape``: ``[]`` for a rank-one tensor sent as ``[batch, 1]``,
    ``[1, *dims]`` for an input the model sees with a row axis (:func:`row_axis_inputs`).
    """
    batched = int(model_config.get("max_batch_size", 0) or 0) > 0
    row_axis = row_axis_inputs(model_config) if side == "input" else {}
    types = {}
    for entry in model_config.get(side, []):
        dims = entry.get("dims", ())
        if entry["name"] in row_axis:
            dims = [-1, *row_axis[entry["name"]][1:]]
        elif batched:
            dims = [-1, *entry["reshape"].get("shape", ())] if "reshape" in entry else [-1, *dims]
        types[entry["name"]] = (entry["data_type"], tuple(int(d) for d in dims))
    return types


def row_axis_inputs(model_config):
    """``{input name: reshape}`` of a batched config's inputs reshaped to ``[1, *dims]``.

    Triton hands the model such an input as ``[rows, 1, *dims]`` (the ``1`` is the row axis of the
    reshape); a request that claims 0 rows but carries a row's elements arrives one axis short
    (``[1, *dims]``). Repositories written before runtime 2.11 have no such input (``reshape: []``
    for rank-one inputs, none for the others) and are read as before.
    """
    if int(model_config.get("max_batch_size", 0) or 0) <= 0:
        return {}
    return {
        entry["name"]: tuple(int(d) for d in entry["reshape"]["shape"])
        for entry in model_config.get("input", [])
        if entry.get("reshape", {}).get("shape")
    }


def without_row_axis(name, array, reshape):
    """``[rows, 1, *dims]`` as ``[rows, *dims]``; anything else (one axis short: a request that claimed 0 rows
    but carried elements) is the client's error, naming the tensor (``TensorMappingError``)."""
    if array.ndim != len(reshape) + 1 or array.shape[1] != 1:
        row = ", ".join(str(d) for d in reshape[1:])
        raise TensorMappingError(
            f"Tensor `{name}` must be sent as [rows{', ' + row if row else ', 1'}] with at least one row and the "
            "elements of that many rows (a request declaring 0 rows is refused)"
        )
    return array.reshape(array.shape[:1] + array.shape[2:])


class StructureCodec:
    """Converts between one ``StructureMapping`` and a dict of named tensors."""

    def __init__(self, mapping, tensor_types, prediction=False):
        self.mapping = mapping
        self.prediction = prediction  # the outputs' side: every column of the value must be mapped
        self.specs = []
        for position, field in enumerate(mapping.fields):
            if field.tensor not in tensor_types:
                raise TensorMappingError(f"Tensor `{field.tensor}` is mapped but not configured")
            data_type, dims = tensor_types[field.tensor]
            self.specs.append(_TensorSpec(field, position, data_type, dims, tensor_types))
        if mapping.structure == "columns":
            wrong = [s.tensor for s in self.specs if len(s.dims) != 1]
            if wrong:
                raise TensorMappingError(f"Column tensor(s) {', '.join(wrong)} must have rank one")

    # -- Triton tensors -> MLflow value -------------------------------------------------

    def from_tensors(self, arrays):
        return self.value_of(self.decode_fields(arrays))

    def decode_fields(self, arrays):
        """``{spec: decoded values}`` of the fields ``arrays`` holds (column tensors of equal lengths), in order:
        the rows of several requests can be joined field by field before :meth:`value_of` builds one value."""
        specs = [spec for spec in self.specs if not _left_out(arrays, spec)]
        fields = {spec: spec.decode(_lookup(arrays, spec), _mask(arrays, spec)) for spec in specs}
        if self.mapping.structure == "columns":
            _check_equal_lengths(specs, fields.values(), "Column tensors")
        return fields

    def value_of(self, fields):
        """The MLflow value of decoded fields: the array, the dict of arrays or the DataFrame."""
        structure = self.mapping.structure
        if structure == "tensor":
            return list(fields.values())[0]
        if structure == "tensors":
            return {spec.field.name: value for spec, value in fields.items()}
        return pd.DataFrame({spec.column_key: value for spec, value in fields.items()})

    # -- MLflow value -> Triton tensors -------------------------------------------------

    def to_tensors(self, value):
        structure = self.mapping.structure
        if structure == "tensor":
            raw = [_single_tensor(value, self.specs[0])]
        elif structure == "tensors":
            raw = [_dict_entry(value, spec) for spec in self.specs]
        else:
            raw = _columns_of(value, self.specs)
        if self.prediction and structure != "tensor":
            _refuse_unmapped(value, self.specs)
        tensors = {}
        for spec, item in zip(self.specs, raw):
            if item is not _ABSENT:
                tensors.update(spec.encode_with_mask(item))
        if structure == "columns":
            sent = [spec for spec in self.specs if spec.tensor in tensors]
            _check_equal_lengths(sent, [tensors[spec.tensor] for spec in sent], "Column values")
        return tensors


class _TensorSpec:
    """One configured tensor and the field it carries."""

    def __init__(self, field, position, data_type, dims, tensor_types):
        if data_type not in TRITON_TO_NUMPY:
            supported = ", ".join(TRITON_TO_NUMPY)
            raise TensorMappingError(
                f"Tensor `{field.tensor}`: datatype {data_type} is not supported; supported: {supported}"
            )
        is_bytes = data_type == BYTES_TYPE
        self.is_datetime = field.content == DATETIME_CONTENT
        if is_bytes and field.content not in ("text", "binary", JSON_CONTENT):
            raise TensorMappingError(f"BYTES tensor `{field.tensor}` needs content text, binary or json")
        if self.is_datetime and data_type != "TYPE_INT64":
            raise TensorMappingError(f"Tensor `{field.tensor}` has content 'datetime' but datatype {data_type}")
        if not is_bytes and not self.is_datetime and field.content is not None:
            raise TensorMappingError(f"Tensor `{field.tensor}` has content {field.content!r} but datatype {data_type}")
        if field.scalar and tuple(dims) != (1,):
            raise TensorMappingError(f"Tensor `{field.tensor}` is a scalar: its dims must be [1], got {list(dims)}")
        self.is_json = field.content == JSON_CONTENT
        self.mask = field.missing
        if self.mask is not None:
            _check_mask(field, data_type, dims, tensor_types)
        self.field = field
        self.tensor = field.tensor
        self.data_type = data_type
        self.dims = dims
        self.dtype = np.dtype(TRITON_TO_NUMPY[data_type])
        self.is_bytes = is_bytes
        self.column_key = position if field.name is None else field.name
        self.label = (
            f"`{field.tensor}`" if field.name in (None, field.tensor) else (f"`{field.tensor}` (field `{field.name}`)")
        )

    def typed_alike(self, arrays):
        """Whether pandas gives a column of this field's decoded ``arrays`` joined the dtype it gives each of them
        (``pd.concat`` of their frames keeps it only then). It takes a dtype from an array's own, except from an
        object array, which it types by the types of the values (pandas 3 makes text ``str``, unless every value
        is missing): text and binary decode to str or bytes only, and to None in a missing row, so their arrays
        type alike unless a missing value makes one differ; a JSON column holds values of any type."""
        if arrays[0].dtype != object:
            return True
        if self.is_json or not self.is_bytes:
            return False
        return self.mask is None or not any(None in array.tolist() for array in arrays)

    def check_shape(self, shape):
        if len(shape) != len(self.dims) or any(d != -1 and d != s for d, s in zip(self.dims, shape)):
            raise TensorMappingError(
                f"Tensor {self.label}: shape {list(shape)} does not match configured dims {list(self.dims)}"
            )

    def decode(self, array, mask=None):
        """The field's values from its tensor and, for a field with a mask, the mask's array."""
        values = self._decode_values(array)
        if self.field.scalar:
            return values.reshape(())
        if mask is None:
            return values
        mask = np.asarray(mask)
        if mask.dtype != np.bool_ or mask.shape != values.shape:
            raise TensorMappingError(
                f"Tensor `{self.mask}` (missing-value mask of {self.label}): dtype {mask.dtype} and shape "
                f"{list(mask.shape)} must be bool and {list(values.shape)}"
            )
        return with_missing(values, mask)

    def _decode_values(self, array):
        array = np.asarray(array)
        self.check_shape(array.shape)
        if not self.is_bytes:
            if array.dtype != self.dtype:
                raise TensorMappingError(
                    f"Tensor {self.label}: dtype {array.dtype} does not match configured "
                    f"{self.data_type} ({self.dtype})"
                )
            return from_nanoseconds(array) if self.is_datetime else array
        if array.dtype != object and array.dtype.kind not in ("S", "U"):
            raise TensorMappingError(f"Tensor {self.label}: dtype {array.dtype} is not BYTES")
        if self.field.content == "binary":
            items = [as_bytes(item) for item in array.ravel()]
        elif self.is_json:
            items = from_json_texts(array.ravel(), self.field.type, self.label)
        else:
            items = decode_text(array.ravel(), self.label)
        return object_array(items, array.shape)

    def encode_with_mask(self, value):
        """``{tensor: array}``, plus ``{mask: bool array}`` for a field with a mask."""
        if self.mask is None:  # every output and most inputs: encode as it is
            return {self.tensor: self.encode(value)}
        array = _to_array(value)
        missing = missing_of(array)
        encoded = self.encode(fill_missing(array, missing, self.placeholder()))
        return {self.tensor: encoded, self.mask: missing.reshape(encoded.shape)}

    def placeholder(self):
        """The value sent in a missing row (the mask says it is missing)."""
        if self.is_bytes:
            return b""
        if self.is_datetime:
            return np.datetime64(0, "ns")
        return False if self.dtype == np.bool_ else 0

    def encode(self, value):
        if self.is_json:
            rows = _rows_of(value, self.label)
            array = object_array(to_json_texts(rows, self.label), (len(rows),))
            self.check_shape(array.shape)
            return array
        array = _to_array(value)
        if self.field.scalar:
            if array.ndim != 0:
                raise TensorMappingError(f"Tensor {self.label}: a scalar (shape []), got shape {list(array.shape)}")
            array = array.reshape(1)
        if self.is_bytes:
            array = object_array(to_bytes_items(array.ravel(), self.field.content, self.label), array.shape)
        elif self.is_datetime:
            array = to_nanoseconds(array, self.label)
        else:
            array = to_numbers(array, self.dtype, self.data_type, self.label)
        self.check_shape(array.shape)
        return array


# Column types a missing-value mask may serve: MLflow's enforcement refuses missing integers.
MASKABLE_DATA_TYPES = ("TYPE_BOOL", "TYPE_FP32", "TYPE_FP64", "TYPE_FP16", BYTES_TYPE)


def _check_mask(field, data_type, dims, tensor_types):
    if field.missing not in tensor_types:
        raise TensorMappingError(f"Tensor `{field.missing}` (missing-value mask of `{field.tensor}`) is not configured")
    if data_type not in MASKABLE_DATA_TYPES and field.content != DATETIME_CONTENT:
        raise TensorMappingError(
            f"Tensor `{field.tensor}`: a missing-value mask needs a bool, float, datetime or BYTES column, got "
            f"{data_type} (MLflow's schema enforcement refuses missing values in integer columns)"
        )
    if tensor_types[field.missing] != ("TYPE_BOOL", tuple(dims)):
        mask_type, mask_dims = tensor_types[field.missing]
        raise TensorMappingError(
            f"Tensor `{field.missing}` (missing-value mask of `{field.tensor}`) must be TYPE_BOOL with dims "
            f"{list(dims)}, got {mask_type} {list(mask_dims)}"
        )


def _mask(arrays, spec):
    if spec.mask is None:
        return None
    mask = arrays.get(spec.mask)
    if mask is None and spec.field.optional and spec.tensor in arrays:
        return None  # an optional column's mask is optional too: without it no row is missing
    if mask is None:
        raise TensorMappingError(f"Tensor `{spec.mask}` (missing-value mask of {spec.label}) is missing")
    return mask


# An optional column the value to encode does not hold: no tensor is sent for it.
_ABSENT = object()


def _left_out(arrays, spec):
    """Whether a request left out an optional column: neither its tensor nor its mask was sent."""
    return spec.field.optional and spec.tensor not in arrays and (spec.mask is None or spec.mask not in arrays)


def _lookup(arrays, spec):
    array = arrays.get(spec.tensor)
    if array is None:
        raise TensorMappingError(f"Tensor {spec.label} is missing")
    return array


def _check_equal_lengths(specs, arrays, what):
    lengths = {spec.tensor: len(array) for spec, array in zip(specs, arrays)}
    if len(set(lengths.values())) > 1:
        detail = ", ".join(f"{name}: {length}" for name, length in lengths.items())
        raise TensorMappingError(f"{what} must have equal lengths; got {detail}")


def _single_tensor(value, spec):
    """The one array of a ``tensor`` structure: the value itself, or its entry in a dict."""
    if not isinstance(value, dict):
        return value
    if spec.field.name is None or list(value) != [spec.field.name]:
        keys = ", ".join(map(str, value))
        raise TensorMappingError(f"Tensor {spec.label}: expected an array, got a dict with key(s) {keys}")
    return value[spec.field.name]


def _dict_entry(value, spec):
    if not isinstance(value, dict):
        raise TensorMappingError(f"Expected a dict of named tensors, got {type(value).__name__}")
    if spec.field.name not in value:
        raise TensorMappingError(f"Tensor {spec.label}: key `{spec.field.name}` is missing")
    return value[spec.field.name]


def _columns_of(value, specs):
    """The per-column values of a DataFrame-like MLflow value, in field order."""
    if isinstance(value, pd.Series):
        value = value.to_frame()
    elif isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        return [_record_column(value, spec) for spec in specs]
    elif isinstance(value, dict) and _is_one_record(value, specs):
        return [_record_column([value], spec) for spec in specs]
    elif isinstance(value, dict) and all(spec.field.name in value or spec.field.optional for spec in specs):
        return [value.get(spec.field.name, _ABSENT) for spec in specs]
    if isinstance(value, pd.DataFrame):
        return [_frame_column(value, spec) for spec in specs]
    if len(specs) == 1 and specs[0].is_json and isinstance(value, (list, tuple, np.ndarray)):
        return [value]  # one nested column: each item is a row (``np.array`` would split equal-length lists)
    array = _to_array(value)
    if len(specs) == 1 and array.ndim == 1:
        return [array]
    if array.ndim == 2 and array.shape[1] == len(specs):
        return [array[:, i] for i in range(len(specs))]
    raise TensorMappingError(
        f"Cannot split a {type(value).__name__} of shape {list(array.shape)} into columns "
        f"{', '.join(spec.label for spec in specs)}"
    )


def _refuse_unmapped(value, specs):
    """Refuse a prediction's columns (or keys) that no field maps: they would be left out of the answer."""
    names = [spec.field.name for spec in specs]
    if isinstance(value, pd.DataFrame):
        keys = list(value.columns)
    elif isinstance(value, dict):
        keys = list(value)
    elif isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        keys = list(dict.fromkeys(key for record in value for key in record))
    else:
        return  # an array or a Series: its width is checked where it is split
    extra = keys[len(names) :] if None in names else [key for key in keys if key not in names]
    if extra:
        shown = ", ".join(f"`{key}`" for key in extra)
        mapped = ", ".join(spec.label for spec in specs)
        raise TensorMappingError(
            f"The prediction holds {shown}, which no output tensor carries (outputs: {mapped}); MLflow's server "
            "would return it, so this answer is refused rather than sent without it (a model whose output columns "
            "depend on the request: log it with protocol='mlflow')"
        )


def _is_one_record(value, specs):
    """A dict that is one row, not columns: a scalar column holds a single value (MLflow's embeddings task
    answers a whole request with one such dict), or a nested column holds one value of its type."""
    return any(
        spec.field.name in value
        and (
            _one_cell(value[spec.field.name], spec.field.type) if spec.is_json else np.ndim(value[spec.field.name]) == 0
        )
        for spec in specs
    )


def _one_cell(value, mlflow_type):
    """Whether a dict's entry for a nested column is one value of its MLflow type, not a column of them: a dict for
    an Object or a Map, a list nested exactly as deep as the Array (``[1.0, 2.0]`` for ``Array(double)``, not for
    ``Array(Array(double))``). MLflow reads such a dict as one row: its schema inference makes
    ``{"y": [1.0, 2.0]}`` one ``Array(double)`` cell, and its enforcement of one is ``pd.DataFrame([value])``."""
    if mlflow_type.get("type") != "array":
        return isinstance(value, dict)
    depth, item = 0, value
    while mlflow_type.get("type") == "array":
        depth, mlflow_type = depth + 1, mlflow_type.get("items") or {}
    nesting = 0
    while isinstance(item, (list, tuple, np.ndarray)) and nesting <= depth:
        nesting, item = nesting + 1, (item[0] if len(item) else None)
    return nesting == depth


def _frame_column(frame, spec):
    if spec.field.name is not None:
        if spec.field.name not in frame.columns and spec.field.optional:
            return _ABSENT
        if spec.field.name not in frame.columns:
            available = ", ".join(map(str, frame.columns))
            raise TensorMappingError(f"Column `{spec.field.name}` is missing; columns: {available}")
        return frame[spec.field.name]
    if spec.column_key >= frame.shape[1]:
        raise TensorMappingError(f"Column #{spec.column_key} is missing; the frame has {frame.shape[1]}")
    return frame.iloc[:, spec.column_key]


def _record_column(records, spec):
    """One column of a list of records, its values as they are (``pd.DataFrame(records)`` would
    choose a dtype and turn a missing key or ``None`` into NaN)."""
    key = spec.field.name
    if key is None:  # an unnamed column: its position among the first record's keys
        keys = list(records[0])
        if spec.column_key >= len(keys):
            raise TensorMappingError(f"Column #{spec.column_key} is missing; the records have {len(keys)} key(s)")
        key = keys[spec.column_key]
    if spec.field.optional and not any(key in record for record in records):
        return _ABSENT
    values = []
    for index, record in enumerate(records):
        if key not in record and not spec.is_json:
            raise TensorMappingError(f"Tensor {spec.label}: record {index} has no key `{key}`")
        values.append(record.get(key))  # a JSON field's left-out key: null, as for a missing row
    return object_array(values, (len(values),))


def _rows_of(value, label):
    """The rows of a nested column, each as it is: a list, a Series' values, an array's first-axis items."""
    if isinstance(value, (pd.Series, pd.Index)):
        return list(value.to_numpy(dtype=object))
    if isinstance(value, np.ndarray) and value.ndim == 0:
        raise TensorMappingError(f"Tensor {label}: a nested column takes one value per row, got a 0-d array")
    if isinstance(value, (list, tuple, np.ndarray)):
        return list(value)
    raise TensorMappingError(f"Tensor {label}: a nested column takes one value per row, got {type(value).__name__}")


def _pandas_values(value):
    """A pandas object's values. A nullable column (``Int64``, ``Float64``, ``boolean``) holding
    ``pd.NA`` gives objects, so the missing value is refused instead of being read as NaN."""
    dtypes = value.dtypes if isinstance(value, pd.DataFrame) else [value.dtype]
    nullable = any(pd.api.types.is_extension_array_dtype(dtype) and dtype.kind in "biuf" for dtype in dtypes)
    if nullable and np.asarray(value.isna()).any():
        return value.to_numpy(dtype=object)
    return value.to_numpy()


def _to_array(value):
    if isinstance(value, (pd.Series, pd.DataFrame, pd.Index)):
        return _pandas_values(value)
    if isinstance(value, np.ndarray):
        return value
    if hasattr(value, "detach") and hasattr(value, "cpu"):  # a torch tensor, without importing torch
        return value.detach().cpu().numpy()
    if isinstance(value, (list, tuple)):
        # Python scalars keep their exact values; numpy's own inference would round some
        # (``np.asarray([2**63, -1])`` is float64). ``to_numbers`` decides what fits.
        return np.array(value, dtype=object)
    return np.asarray(value)
