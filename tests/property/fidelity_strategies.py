"""Hypothesis strategies for the real-Triton fidelity campaign: complete ``Case``s.

A case is a signature, a deterministic model that realizes it and inputs (see
``tests/support/fidelity/cases.py``). ``served_cases()`` draws cases that MLflow-Triton must serve;
``rejected_cases()`` draws cases it must refuse at logging time. Together they cover every row of
the README's mapping table:

* column schemas of 1-8 columns of every supported MLflow type (boolean, integer, long, float,
  double, string, binary) with hostile labels (quotes, spaces, unicode, newlines, braces, leading
  digits, names that sanitize alike, integer labels);
* one tensor of every supported numpy dtype (bool, int8..int64, uint8..uint64, float16/32/64, text),
  rank 1-4, ``-1`` on any subset of axes, named or not;
* several named tensors (a dict input), and predictions with several outputs (DataFrames with
  several columns, dicts), single outputs as arrays, Series, fixed-width str/bytes arrays;
* declared output dtypes other than the produced ones (explicit signatures): the prediction is
  answered when every value fits, else the request fails naming the output tensor;
* values at the edges: NaN and infinities (binary requests), extreme integers, empty strings,
  NUL bytes and trailing zeros, non-ASCII text, invalid UTF-8 in binary fields, empty batches;
* nested columns (``nested_cases``, one served draw in seven): 1-3 Array(float / double / long / integer /
  string / boolean), Object and Array(Object) columns beside 0-2 plain ones, rows with empty lists,
  unicode keys and text, extreme integers, float32-exact ``float`` leaves, NaN and infinities, each sent
  as the tests' own JSON text (compact, spaced or ASCII-escaped); echoed, reversed, measured or wrapped
  into an Object by the model; plus requests with one malformed nested row (not JSON, a number a
  ``float`` / ``integer`` leaf cannot hold, a wrong element type, a missing Object property), answered
  400 naming the tensor or column and the row -- or, where ``pyfunc.predict`` accepts it, like it.
  ``rejected_cases`` adds nested columns holding bytes, refused at logging naming the column.

Models: ``RecipeEstimator`` (scikit-learn, custom, saved with cloudpickle or skops and packaged with
``code_paths``), ``RecipeModule`` (PyTorch) and real Pipelines (scaling, one-hot encoding,
LogisticRegression / Ridge / DecisionTree).
"""

import numpy as np
from hypothesis import strategies as st

from mlflow_triton._batching import MIN_DISTINCT_ROWS
from tests.property.strategies import HOSTILE_BINARIES, HOSTILE_NAMES, HOSTILE_TEXTS
from tests.support.fidelity.cases import (
    COLUMN_KINDS,
    FLOAT_KINDS,
    INTEGER_KINDS,
    NESTED_LEAVES,
    NUMBER_KINDS,
    Case,
    Field,
    Input,
    Malformed,
    Output,
    is_nested,
    json_text,
    nested_kind,
    nested_type,
    produced_kind,
)
from tests.support.fidelity.pipelines import ESTIMATORS, VOCABULARY

MAX_COLUMNS = 8
MAX_EXTRA_INPUTS = 3
TENSOR_KINDS = NUMBER_KINDS + ("text",)
# torch has no bitwise_not for uint16/32/64 on CPU: "flip" is left out for them.
TORCH_OPERATIONS = ("echo", "flip", "wide", "half", "nonzero", "sum", "linear")
RECIPE_ACCEPTS = {
    "echo": NUMBER_KINDS + ("text", "binary"),
    "flip": NUMBER_KINDS + ("text", "binary"),
    "text": NUMBER_KINDS + ("text", "binary"),
    "binary": NUMBER_KINDS + ("text", "binary"),
    "nonzero": NUMBER_KINDS + ("text", "binary"),
    "length": ("text", "binary"),
    "wide": NUMBER_KINDS,
    "sum": NUMBER_KINDS,
}


def _utf8(name):
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


# Names: the hostile set (quotes, newlines, braces, unicode, names that sanitize alike, generated
# defaults) and arbitrary short text; never empty (that is a rejection) and always UTF-8.
string_names = st.one_of(
    st.sampled_from([name for name in HOSTILE_NAMES if name and _utf8(name)]),
    st.text(st.characters(codec="utf-8"), min_size=1, max_size=8),
    st.text(st.sampled_from(" _-ab1ü{}\"'\\\n"), min_size=1, max_size=6),
)
integer_labels = st.integers(1, 12)

texts = st.one_of(st.sampled_from(HOSTILE_TEXTS), st.text(st.characters(codec="utf-8"), max_size=8))
binaries = st.one_of(st.sampled_from(HOSTILE_BINARIES + (b"ab\x00\x00", b"\x00\x00")), st.binary(max_size=8))


def _integer_values(kind):
    info = np.iinfo(kind)
    low, high = int(info.min), int(info.max)
    edges = sorted({low, high, 0, 1, min(high, 2**31), max(low, -(2**31) - 1) if low < 0 else 0})
    return st.one_of(st.sampled_from(edges), st.integers(low, high))


def values(kind, *, finite=False, small=False):
    """Element values of ``kind``: every value, or finite ones, or small ones (which fit narrower dtypes)."""
    if kind == "bool":
        return st.booleans()
    if kind in INTEGER_KINDS:
        if small:
            info = np.iinfo(kind)
            return st.integers(max(int(info.min), -100), min(int(info.max), 100))
        return _integer_values(kind)
    if kind in FLOAT_KINDS:
        if small:
            return st.floats(width=16, allow_nan=False, allow_infinity=False)
        width = {"float16": 16, "float32": 32, "float64": 64}[kind]
        return st.floats(width=width, allow_nan=not finite, allow_infinity=not finite)
    if kind == "text":
        return texts
    return binaries


@st.composite
def _input(draw, fields, *, example, finite=(), small=()):
    """One Input: a concrete size for every -1 axis (shared first axis for columns), then the values."""
    shapes = []
    first = None
    for field in fields:
        shape = []
        for axis, dim in enumerate(field.dims):
            if dim != -1:
                shape.append(dim)
                continue
            if axis == 0 and first is not None and all(len(f.dims) == 1 for f in fields):
                shape.append(first)  # columns: one row count
                continue
            size = draw(st.integers(1 if example else 0, 3 if len(field.dims) > 1 else 5))
            shape.append(size)
            if axis == 0 and first is None:
                first = size
        shapes.append(tuple(shape))
    contents = []
    for index, (field, shape) in enumerate(zip(fields, shapes)):
        count = int(np.prod(shape)) if shape else 1
        elements = values(field.kind, finite=index in finite, small=index in small)
        contents.append(tuple(draw(st.lists(elements, min_size=count, max_size=count))))
    return Input(tuple(shapes), tuple(contents))


@st.composite
def _inputs(draw, fields, *, finite_example=(), small_example=(), extra_finite=()):
    example = draw(_input(fields, example=True, finite=set(finite_example), small=set(small_example)))
    extra = draw(
        st.lists(_input(fields, example=False, finite=set(extra_finite)), min_size=2, max_size=MAX_EXTRA_INPUTS)
    )
    return (example, *extra)


@st.composite
def _dims(draw):
    """Rank 1-4; each axis -1 or a fixed size 1-3 (``-1`` on any subset of the axes)."""
    rank = draw(st.integers(1, 4))
    return tuple(draw(st.one_of(st.just(-1), st.integers(1, 3))) for _ in range(rank))


def _needs_explicit(fields):
    return any(field.dims[0] != -1 or -1 in field.dims[1:] for field in fields)


@st.composite
def _column_labels(draw, count, *, integers=True):
    labels = draw(
        st.lists(
            st.one_of(string_names, integer_labels) if integers else string_names,
            min_size=count,
            max_size=count,
            unique_by=str,
        )
    )
    if integers and draw(st.booleans()) and not any(str(label) == "0" for label in labels):
        labels[0] = 0  # the integer label 0 is served in the first position only
    return labels


def _declared_candidates(kind, columns):
    """Dtypes an explicit signature may declare for an output the model produces as ``kind``."""
    if columns:
        return {
            "int64": ("int32",),
            "int32": ("int64",),
            "float64": ("float32",),
            "float32": ("float64",),
            "bool": ("int32", "int64", "float32", "float64"),
        }.get(kind, ())
    if kind in INTEGER_KINDS:
        return tuple(k for k in INTEGER_KINDS + FLOAT_KINDS if k != kind)
    if kind in FLOAT_KINDS:
        return tuple(k for k in FLOAT_KINDS if k != kind)
    if kind == "bool":
        return INTEGER_KINDS + FLOAT_KINDS
    return ()


@st.composite
def _declared(draw, case_so_far, output, explicit):
    """Maybe a declared dtype other than the produced one (explicit signatures only)."""
    if not explicit:
        return None
    columns = case_so_far.form in ("frame", "series")
    candidates = _declared_candidates(produced_kind(case_so_far, output), columns)
    if not candidates or draw(st.integers(0, 3)) != 0:
        return None
    return draw(st.sampled_from(candidates))


@st.composite
def _recipe_outputs(draw, fields, structure, form):
    sources = list(range(len(fields)))
    if form in ("frame", "series"):
        sources = [i for i in sources if len(fields[i].dims) == 1]
    count = 1 if form in ("array", "series") else draw(st.integers(1, 4))
    if form == "frame":
        keys = draw(_column_labels(count))
    elif form == "dict":
        keys = draw(st.lists(string_names, min_size=count, max_size=count, unique=True))
    elif form == "series":
        keys = [draw(st.one_of(st.none(), string_names, integer_labels))]
    else:
        keys = [None]
    outputs = []
    for key in keys:
        source = draw(st.sampled_from(sources))
        kind = fields[source].kind
        operations = [op for op, kinds in RECIPE_ACCEPTS.items() if kind in kinds]
        if form in ("frame", "series"):
            operations = [op for op in operations if op != "sum" or len(fields[source].dims) == 1]
        outputs.append(Output(key, source, draw(st.sampled_from(operations))))
    return outputs


@st.composite
def sklearn_recipe_cases(draw):
    structure = draw(st.sampled_from(("columns", "columns", "tensor", "tensors")))
    if structure == "columns":
        count = draw(st.integers(1, MAX_COLUMNS))
        labels = draw(_column_labels(count))
        fields = tuple(Field(label, draw(st.sampled_from(COLUMN_KINDS))) for label in labels)
        form = draw(st.sampled_from(("frame", "frame", "array", "series", "dict")))
    elif structure == "tensor":
        dims = draw(_dims())
        fields = (Field(None, draw(st.sampled_from(TENSOR_KINDS)), dims),)
        form = draw(st.sampled_from(("array", "dict")))
    else:
        names = draw(st.lists(string_names, min_size=2, max_size=4, unique=True))
        fields = tuple(Field(name, draw(st.sampled_from(TENSOR_KINDS)), draw(_dims())) for name in names)
        form = draw(st.sampled_from(("array", "dict")))
    explicit = _needs_explicit(fields) if structure != "columns" else False
    explicit = explicit or draw(st.booleans())
    if structure == "tensor" and explicit and draw(st.booleans()):
        fields = (Field(draw(string_names), fields[0].kind, fields[0].dims),)  # a single named tensor
    outputs = draw(_recipe_outputs(fields, structure, form))
    options = (("serialization", draw(st.sampled_from(("cloudpickle", "skops")))), ("fixed_width", draw(st.booleans())))
    case = Case("sklearn-recipe", structure, fields, tuple(outputs), form, explicit, (), options)
    outputs = tuple(Output(o.key, o.source, o.operation, draw(_declared(case, o, explicit))) for o in outputs)
    small = {o.source for o in outputs if o.declared}
    finite = range(len(fields)) if structure == "columns" and not explicit else ()
    inputs = draw(_inputs(fields, finite_example=finite, small_example=small))
    return Case("sklearn-recipe", structure, fields, outputs, form, explicit, inputs, options)


@st.composite
def pytorch_recipe_cases(draw):
    if draw(st.integers(0, 9)) == 0:
        count = draw(st.integers(1, MAX_COLUMNS))
        labels = draw(_column_labels(count))
        kinds = [k for k in COLUMN_KINDS if k in NUMBER_KINDS]
        fields = tuple(Field(label, draw(st.sampled_from(kinds))) for label in labels)
        operation = draw(st.sampled_from(TORCH_OPERATIONS))
        inputs = draw(_inputs(fields, finite_example=range(len(fields))))
        return Case("pytorch-recipe", "columns", fields, (Output(None, 0, operation),), "frame", False, inputs)
    kind = draw(st.sampled_from(NUMBER_KINDS))
    dims = draw(_dims())
    operations = [op for op in TORCH_OPERATIONS if not (op == "flip" and kind in ("uint16", "uint32", "uint64"))]
    if kind != "float32" or dims[-1] == -1:
        operations.remove("linear")
    operation = draw(st.sampled_from(operations))
    explicit = _needs_explicit([Field(None, kind, dims)]) or draw(st.booleans())
    name = draw(st.one_of(st.none(), string_names)) if explicit else None
    fields = (Field(name, kind, dims),)
    case = Case("pytorch-recipe", "tensor", fields, (Output(None, 0, operation),), "array", explicit, ())
    output = Output(None, 0, operation, draw(_declared(case, case.outputs[0], explicit)))
    inputs = draw(_inputs(fields, small_example={0} if output.declared else ()))
    return Case("pytorch-recipe", "tensor", fields, (output,), "array", explicit, inputs)


# Pipeline inputs have at most 4 rows: every request of a batched case fits.
PIPELINE_MAX_BATCH_SIZE = 8


@st.composite
def sklearn_pipeline_cases(draw):
    count = draw(st.integers(1, 5))
    integers = draw(st.booleans())
    labels = draw(
        st.lists(integer_labels, min_size=count, max_size=count, unique=True)
        if integers
        else st.lists(string_names, min_size=count, max_size=count, unique=True)
    )
    numeric = [k for k in COLUMN_KINDS if k in NUMBER_KINDS]
    batched = draw(st.booleans())  # dynamic batching: the extra inputs are also sent at once and joined
    first = [k for k in numeric if k != "bool"] if batched else numeric
    kinds = [draw(st.sampled_from(first))] + [draw(st.sampled_from(numeric + ["text"])) for _ in labels[1:]]
    fields = tuple(Field(label, kind) for label, kind in zip(labels, kinds))
    # The batching proof needs MIN_DISTINCT_ROWS distinct example rows: the first column then holds distinct numbers.
    example = draw(_pipeline_input(fields, example=True, distinct_rows=MIN_DISTINCT_ROWS if batched else 0))
    extra = draw(st.lists(_pipeline_input(fields, example=False), min_size=2, max_size=MAX_EXTRA_INPUTS))
    options = (
        ("estimator", draw(st.sampled_from(ESTIMATORS))),
        ("serialization", draw(st.sampled_from(("skops", "cloudpickle")))),
        ("seed", draw(st.integers(0, 2**16))),
    )
    if batched:
        options += (("max_batch_size", PIPELINE_MAX_BATCH_SIZE),)
        # A request of 0 rows crashes Triton 2.51's Python backend when the model batches (docs/batching.md).
        extra = [model_input for model_input in extra if model_input.rows > 0]
    return Case(
        "sklearn-pipeline", "columns", fields, (Output(None, 0, "predict"),), "array", False, (example, *extra), options
    )


@st.composite
def _pipeline_input(draw, fields, *, example, distinct_rows=0):
    """Rows for ``fields``; with ``distinct_rows``, at least that many rows whose first column's numbers differ."""
    rows = draw(st.integers(max(1, distinct_rows), 4)) if example or draw(st.integers(0, 9)) else 0
    contents = []
    if distinct_rows:
        first = fields[0].kind
        contents.append(tuple(draw(st.lists(_distinct_numbers(first), min_size=rows, max_size=rows, unique=True))))
    for field in fields[len(contents) :]:
        if field.kind == "text":
            elements = st.one_of(st.sampled_from(VOCABULARY), texts)
        elif example or draw(st.integers(0, 9)):
            elements = {
                "bool": st.booleans(),
                "int32": st.integers(-1000, 1000),
                "int64": st.integers(-1000, 1000),
                "float32": st.floats(-1e3, 1e3, width=32),
                "float64": st.floats(-1e3, 1e3),
            }[field.kind]
        else:
            elements = values(field.kind)  # the edges: NaN, infinities, extreme integers
        contents.append(tuple(draw(st.lists(elements, min_size=rows, max_size=rows))))
    return Input(tuple((rows,) for _ in fields), tuple(contents))


def _distinct_numbers(kind):
    """Example numbers of an integer or float column ``kind`` that can be told apart (``-0.0`` and ``0.0`` are one)."""
    if kind.startswith("float"):
        return st.floats(-1e3, 1e3, width=32 if kind == "float32" else 64).map(lambda value: value + 0.0)
    return st.integers(-1000, 1000)


@st.composite
def optional_output_cases(draw):
    """An inferred frame whose example has NaN in the column the model echoes: an optional output column (masks)."""
    count = draw(st.integers(1, 4))
    labels = draw(_column_labels(count))
    kinds = [draw(st.sampled_from(("float32", "float64")))] + [draw(st.sampled_from(COLUMN_KINDS)) for _ in labels[1:]]
    fields = tuple(Field(label, kind) for label, kind in zip(labels, kinds))
    example, *extra = draw(_inputs(fields, finite_example=range(count)))
    column = list(example.values[0])
    for row in draw(st.sets(st.integers(0, len(column) - 1), min_size=1)):
        column[row] = float("nan")
    example = Input(example.shapes, (tuple(column),) + example.values[1:])
    options = (("serialization", "cloudpickle"),)
    return Case(
        "sklearn-recipe", "columns", fields, (Output("out", 0, "echo"),), "frame", False, (example, *extra), options
    )


@st.composite
def scalar_output_cases(draw):
    """A module whose ``forward`` returns ``x.sum()``: MLflow infers ``Any``; Triton answers one element."""
    kind = draw(st.sampled_from(("float32", "float64", "int64")))
    fields = (Field(None, kind, (-1, 2)),)
    return Case("pytorch-recipe", "tensor", fields, (Output(None, 0, "scalar"),), "array", False, draw(_inputs(fields)))


def served_cases():
    """Cases MLflow-Triton must log and serve (a few turn out rejected; the test filters those)."""
    return st.one_of(
        sklearn_recipe_cases(),
        pytorch_recipe_cases(),
        sklearn_recipe_cases(),
        sklearn_pipeline_cases(),
        optional_output_cases(),
        scalar_output_cases(),
        nested_cases(),  # one draw in seven (Array / Object / Array(Object) columns, malformed rows)
    )


# -- rejections ------------------------------------------------------------------------------------------


@st.composite
def rejected_cases(draw):
    """A served case changed so that logging must refuse it, naming the field."""
    mutation = draw(
        st.sampled_from(
            (
                "label-0-later",
                "empty-name",
                "float-label",
                "fixed-width-input",
                "example-misfit",
                "timezone-aware-column",
                "empty-output-key",
                "nested-binary-leaf",
            )
        )
    )
    if mutation == "nested-binary-leaf":  # JSON text carries no bytes: refused at logging, naming the column
        return _nested_binary_case(draw)
    if mutation == "fixed-width-input":
        kind = draw(st.sampled_from(("fixed-text", "fixed-binary")))
        name = draw(st.one_of(st.none(), string_names))
        fields = (Field(name, kind, (-1,)),)
        elements = st.text(st.characters(codec="ascii", exclude_characters="\x00"), min_size=1, max_size=4)
        rows = draw(st.integers(1, 3))
        raw = draw(st.lists(elements, min_size=rows, max_size=rows))
        contents = tuple(raw) if kind == "fixed-text" else tuple(text.encode() for text in raw)
        return Case(
            "sklearn-recipe",
            "tensor",
            fields,
            (Output(None, 0, "echo"),),
            "array",
            name is not None,
            (Input(((rows,),), (contents,)),),
            (("serialization", "cloudpickle"),),
        )
    if mutation == "example-misfit":
        kind = draw(st.sampled_from(("int64", "int32", "float64")))
        declared = {"int64": "int8", "int32": "uint8", "float64": "float16"}[kind]
        fields = (Field(draw(string_names), kind),)
        big = {"int64": 2**40, "int32": -1, "float64": 0.1}[kind]
        rows = draw(st.integers(1, 3))
        position = draw(st.integers(0, rows - 1))
        contents = tuple(big if i == position else 0 for i in range(rows))
        form = draw(st.sampled_from(("array", "dict")))
        key = draw(string_names) if form == "dict" else None
        return Case(
            "sklearn-recipe",
            "columns",
            fields,
            (Output(key, 0, "echo", declared),),
            form,
            True,
            (Input(((rows,),), (contents,)),),
            (("serialization", "cloudpickle"),),
        )
    count = draw(st.integers(2, 4))
    labels = draw(st.lists(string_names, min_size=count, max_size=count, unique=True))
    kinds = [draw(st.sampled_from(COLUMN_KINDS)) for _ in labels]
    form = "frame"
    keys = ["out"]
    if mutation == "label-0-later":
        labels[draw(st.integers(1, count - 1))] = 0
    elif mutation == "empty-name":
        labels[draw(st.integers(0, count - 1))] = ""
    elif mutation == "float-label":
        labels[draw(st.integers(0, count - 1))] = draw(st.sampled_from((1.5, -0.25, 2.0)))
    elif mutation == "timezone-aware-column":
        kinds[draw(st.integers(0, count - 1))] = "datetime-utc"
    else:  # "empty-output-key"
        form = draw(st.sampled_from(("frame", "dict")))
        keys = [""]
    fields = tuple(Field(label, kind) for label, kind in zip(labels, kinds))
    example = draw(
        _input(
            tuple(Field(f.name, "int64" if f.kind == "datetime-utc" else f.kind) for f in fields),
            example=True,
            finite=set(range(count)),
        )
    )
    if mutation == "timezone-aware-column":  # seconds since 1970 that pandas can hold (the int64 minimum is NaT)
        example = Input(
            example.shapes,
            tuple(
                tuple(range(0, 86400 * len(values), 86400)) if kind == "datetime-utc" else values
                for kind, values in zip(kinds, example.values)
            ),
        )
    source = next(i for i, kind in enumerate(kinds) if kind != "datetime-utc")
    return Case(
        "sklearn-recipe",
        "columns",
        fields,
        (Output(keys[0], source, "echo"),),
        form,
        False,
        (example,),
        (("serialization", "cloudpickle"),),
    )


@st.composite
def _nested_binary(draw):
    return draw(
        st.sampled_from(
            (
                {"type": "array", "items": {"type": "binary"}},
                {"type": "object", "properties": {"k": {"type": "binary", "required": True}}},
                {
                    "type": "array",
                    "items": {"type": "object", "properties": {"k": {"type": "binary", "required": True}}},
                },
            )
        )
    )


def _nested_binary_case(draw):
    """A column of lists (or dicts) of bytes: MLflow infers a nested type holding binary, which logging refuses."""
    mlflow_type = draw(_nested_binary())
    labels = draw(_column_labels(2))
    rows = draw(st.integers(1, 3))
    leaf = st.binary(min_size=1, max_size=4)
    if mlflow_type["type"] == "object":
        cells = st.fixed_dictionaries({"k": leaf})
    elif mlflow_type["items"]["type"] == "object":
        cells = st.lists(st.fixed_dictionaries({"k": leaf}), min_size=1, max_size=2)
    else:
        cells = st.lists(leaf, min_size=1, max_size=3)
    nested = tuple(draw(st.lists(cells, min_size=rows, max_size=rows)))
    numbers = tuple(draw(st.lists(values("int64"), min_size=rows, max_size=rows)))
    fields = (Field(labels[0], nested_kind(mlflow_type)), Field(labels[1], "int64"))
    return Case(
        "sklearn-recipe",
        "columns",
        fields,
        (Output("out", 1, "echo"),),
        "frame",
        False,
        (Input(((rows,), (rows,)), (nested, numbers)),),
        (("serialization", "cloudpickle"),),
    )


__all__ = ["nested_cases", "rejected_cases", "served_cases", "values"]


# -- nested columns (mapping version 5) --------------------------------------------------------------------

NESTED_OPERATIONS = ("echo", "length", "nonzero", "reverse", "wrap")
# Property names of generated Objects: unicode, quotes, spaces, backslashes (JSON keys).
property_names = st.text(st.sampled_from("ab_ü名\"' \\{"), min_size=1, max_size=4)
# A float leaf's values are float32-exact (MLflow's ``float``): these are not, or overflow float32.
NOT_FLOAT32 = (0.1, 1e39, -3.5e38, 1.0000001, 16777217, 2**64 + 1)  # 2**64 itself is a float32 value
NOT_INT32 = (2**31, -(2**31) - 1, 2**40, 2**63)
MALFORMED_PROBLEMS = ("bad-json", "narrow", "wrong-type", "missing-property")


@st.composite
def nested_types(draw):
    """An MLflow type dict: Array(leaf) (most often), Object({1-3 properties: leaf or Array(leaf)}), or
    Array(Object({1-3 leaf properties})); every property required (the example holds each)."""
    shape = draw(st.sampled_from(("array", "array", "array", "object", "array-of-object")))
    if shape == "array":
        return {"type": "array", "items": {"type": draw(st.sampled_from(NESTED_LEAVES))}}
    properties = {}
    for name in draw(st.lists(property_names, min_size=1, max_size=3, unique=True)):
        leaf = {"type": draw(st.sampled_from(NESTED_LEAVES))}
        if shape == "object" and draw(st.integers(0, 2)) == 0:
            leaf = {"type": "array", "items": leaf}
        properties[name] = {**leaf, "required": True}
    record = {"type": "object", "properties": properties}
    return record if shape == "object" else {"type": "array", "items": record}


def _leaf_values(leaf, *, example):
    """Values of an MLflow leaf type, as plain Python: float leaves float32-exact; NaN (and, beyond the
    example, infinities) for float and double; integers over their whole range; hostile text."""
    if leaf == "float":
        return st.floats(width=32, allow_nan=True, allow_infinity=not example)
    if leaf == "double":
        return st.one_of(
            st.floats(allow_nan=True, allow_infinity=not example),
            st.sampled_from((0.1, -0.0, 5e-324, 1.7976931348623157e308, 123456789012345.67)),
        )
    if leaf == "long":
        return _integer_values("int64")
    if leaf == "integer":
        return _integer_values("int32")
    if leaf == "string":
        return texts
    return st.booleans()


def nested_values(mlflow_type, *, example=False):
    """Row values of ``mlflow_type``: lists (empty ones beyond the example), dicts with every property."""
    kind = mlflow_type["type"]
    if kind == "array":
        return st.lists(nested_values(mlflow_type["items"], example=example), min_size=1 if example else 0, max_size=4)
    if kind == "object":
        return st.fixed_dictionaries(
            {name: nested_values(spec, example=example) for name, spec in mlflow_type["properties"].items()}
        )
    return _leaf_values(kind, example=example)


def _leaf_paths(value, mlflow_type, path=()):
    """``[(path, leaf type)]`` of every leaf in ``value``; a path is a tuple of list indices and dict keys."""
    kind = mlflow_type["type"]
    if kind == "array":
        return [p for i, item in enumerate(value) for p in _leaf_paths(item, mlflow_type["items"], path + (i,))]
    if kind == "object":
        properties = mlflow_type["properties"]
        return [p for key, item in value.items() for p in _leaf_paths(item, properties[key], path + (key,))]
    return [(path, kind)]


def _object_paths(value, mlflow_type, path=()):
    """Paths of every Object in ``value``."""
    kind = mlflow_type["type"]
    if kind == "array":
        return [p for i, item in enumerate(value) for p in _object_paths(item, mlflow_type["items"], path + (i,))]
    if kind == "object":
        properties = mlflow_type["properties"]
        inner = [p for key, item in value.items() for p in _object_paths(item, properties[key], path + (key,))]
        return [path] + inner
    return []


def _replaced(value, path, new):
    """``value`` with the element at ``path`` replaced by ``new(old)`` (copies along the path)."""
    if not path:
        return new(value)
    head, rest = path[0], path[1:]
    if isinstance(value, list):
        return [_replaced(item, rest, new) if i == head else item for i, item in enumerate(value)]
    return {key: _replaced(item, rest, new) if key == head else item for key, item in value.items()}


@st.composite
def _malformed_text(draw, mlflow_type, problem, style):
    """JSON text (``str``) of a row with ``problem``, or None where the type has no place for it."""
    template = draw(nested_values(mlflow_type, example=True))  # every list non-empty: every leaf type has a place
    if problem == "bad-json":
        return draw(
            st.one_of(
                st.just(json_text(template, style).decode()[:-1]),  # cut short
                st.sampled_from(("", " ", "[1,]", "{'a': 1}", "nul", '"open', "[] []", "tru", '{"a" 1}', "[NaN")),
            )
        )
    if problem == "narrow":
        leaves = [(path, leaf) for path, leaf in _leaf_paths(template, mlflow_type) if leaf in ("float", "integer")]
        if not leaves:
            return None
        path, leaf = draw(st.sampled_from(leaves))
        number = draw(st.sampled_from(NOT_FLOAT32 if leaf == "float" else NOT_INT32))
        return json_text(_replaced(template, path, lambda _: number), style).decode()
    if problem == "missing-property":
        objects = _object_paths(template, mlflow_type)
        if not objects:
            return None
        path = draw(st.sampled_from(objects))
        record = template
        for step in path:
            record = record[step]
        gone = draw(st.sampled_from(sorted(record)))
        value = _replaced(template, path, lambda old: {k: v for k, v in old.items() if k != gone})
        return json_text(value, style).decode()
    # "wrong-type": a leaf of another type, or a row that is not the column's container at all
    leaves = _leaf_paths(template, mlflow_type)
    if draw(st.integers(0, 3)) == 0 or not leaves:
        wrong = draw(st.sampled_from(({"a": 1}, [1], "text", 1, None, True)))
        if (isinstance(wrong, dict) and mlflow_type["type"] == "object") or (
            isinstance(wrong, list) and mlflow_type["type"] == "array"
        ):
            wrong = "text"
        return json_text(wrong, style).decode()
    path, leaf = draw(st.sampled_from(leaves))
    if leaf == "string":
        wrong = draw(st.sampled_from((1, 2.5, True, [], {"a": "b"})))
    elif leaf == "boolean":
        wrong = draw(st.sampled_from(("true", 2, [True], {"a": True})))
    elif leaf in ("long", "integer"):
        wrong = draw(st.sampled_from(("1", [1], {"a": 1}, 1.5)))
    else:
        wrong = draw(st.sampled_from(("1.5", [1.5], {"a": 1.5}, "NaN")))
    return json_text(_replaced(template, path, lambda _: wrong), style).decode()


@st.composite
def nested_cases(draw):
    """A ``RecipeEstimator`` over a DataFrame with 1-3 nested columns (Array of every leaf type, Object,
    Array(Object)) and 0-2 plain ones, echoing or transforming them (nested outputs among them), with
    inferred signatures; and 0-3 requests with one malformed nested row each."""
    nested_count = draw(st.integers(1, 3))
    plain_count = draw(st.integers(0, 2))
    labels = draw(_column_labels(nested_count + plain_count))
    kinds = [nested_kind(draw(nested_types())) for _ in range(nested_count)]
    kinds += [draw(st.sampled_from(COLUMN_KINDS)) for _ in range(plain_count)]
    order = draw(st.permutations(range(len(kinds))))
    fields = tuple(Field(label, kinds[i]) for label, i in zip(labels, order))
    rows = draw(st.integers(1, 4))
    example = Input(
        tuple((rows,) for _ in fields),
        tuple(
            tuple(
                draw(
                    st.lists(
                        nested_values(nested_type(field.kind), example=True)
                        if is_nested(field.kind)
                        else values(field.kind, finite=True),
                        min_size=rows,
                        max_size=rows,
                    )
                )
            )
            for field in fields
        ),
    )
    extra = []
    for _ in range(draw(st.integers(2, MAX_EXTRA_INPUTS))):
        count = draw(st.integers(0, 4))
        extra.append(
            Input(
                tuple((count,) for _ in fields),
                tuple(
                    tuple(
                        draw(
                            st.lists(
                                nested_values(nested_type(field.kind)) if is_nested(field.kind) else values(field.kind),
                                min_size=count,
                                max_size=count,
                            )
                        )
                    )
                    for field in fields
                ),
            )
        )
    inputs = (example, *extra)
    form = draw(st.sampled_from(("frame", "frame", "frame", "series")))
    count = 1 if form == "series" else draw(st.integers(1, 3))
    keys = draw(_column_labels(count)) if form == "frame" else [draw(st.one_of(st.none(), string_names))]
    nested_positions = [i for i, field in enumerate(fields) if is_nested(field.kind)]
    outputs = []
    for key in keys:
        # Most outputs read a nested column; the others a plain one, as the other recipes do.
        source = draw(st.sampled_from(nested_positions if draw(st.integers(0, 3)) else range(len(fields))))
        if is_nested(fields[source].kind):
            operation = draw(st.sampled_from(NESTED_OPERATIONS))
        else:
            operation = draw(
                st.sampled_from([op for op, kinds in RECIPE_ACCEPTS.items() if fields[source].kind in kinds])
            )
        outputs.append(Output(key, source, operation))
    style = draw(st.sampled_from(("compact", "spaced", "ascii")))
    malformed = []
    bases = [number for number, model_input in enumerate(inputs) if model_input.rows > 0]
    for _ in range(draw(st.sampled_from((0, 1, 1, 2, 3)))):
        base = draw(st.sampled_from(bases))
        field = draw(st.sampled_from(nested_positions))
        problem = draw(st.sampled_from(MALFORMED_PROBLEMS))
        text = draw(_malformed_text(nested_type(fields[field].kind), problem, style))
        if text is None:  # no float / integer leaf, or no Object: bad JSON instead
            problem = "bad-json"
            text = draw(_malformed_text(nested_type(fields[field].kind), problem, style))
        row = draw(st.integers(0, inputs[base].rows - 1))
        malformed.append(Malformed(base, field, row, text, problem))
    options = (("serialization", draw(st.sampled_from(("cloudpickle", "skops")))), ("json_style", style))
    return Case("sklearn-recipe", "columns", fields, tuple(outputs), form, False, inputs, options, tuple(malformed))
