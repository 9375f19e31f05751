"""The fidelity campaign's nested draws are what they claim, without a server.

``nested_cases()`` (``tests/property/fidelity_strategies.py``) says which MLflow type each nested column has,
writes each row's JSON text itself (``cases.json_text``, not the runtime's codec) and draws malformed rows of
four kinds. If a claim were wrong, the real-Triton campaign would blame the server for the draw's defect:
here the type is checked against MLflow's own inference of the example, the texts against ``json.loads``,
and each malformed row against its kind.
"""

import json
import math

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st
from mlflow.types.utils import _infer_schema

from tests.property.fidelity_strategies import nested_cases, nested_types, nested_values, rejected_cases
from tests.support.fidelity.cases import (
    Malformed,
    is_nested,
    json_text,
    malformed_input,
    model_value,
    nested_type,
    raw_arrays,
    user_value,
)
from tests.support.fidelity.expectations import SCHEMA_REFUSED, enforcement_failure, malformed_failure


def _same(a, b):
    """Equal, NaN equal to NaN, and ``True`` never equal to ``1`` (JSON keeps them apart)."""
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))
    if type(a) is not type(b):
        return False
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    return a == b


@st.composite
def _typed_rows(draw):
    mlflow_type = draw(nested_types())
    return mlflow_type, draw(nested_values(mlflow_type)), draw(st.sampled_from(("compact", "spaced", "ascii")))


@given(_typed_rows())
def test_oracle_json_text_reads_back_as_the_drawn_row_when_nested_values_are_drawn(drawn):
    mlflow_type, value, style = drawn

    text = json_text(value, style)

    assert _same(json.loads(text.decode("utf-8")), value)
    if style == "ascii":
        assert text.isascii()


@given(_typed_rows())
def test_float_leaves_are_float32_exact_when_nested_values_are_drawn(drawn):
    mlflow_type, value, _ = drawn

    held = user_value(value, mlflow_type)

    def leaves(item, spec):
        kind = spec["type"]
        if kind == "array":
            return [leaf for x in item for leaf in leaves(x, spec["items"])]
        if kind == "object":
            return [leaf for k, x in item.items() for leaf in leaves(x, spec["properties"][k])]
        return [(kind, item)]

    for (kind, plain), (_, user) in zip(leaves(value, mlflow_type), leaves(held, mlflow_type)):
        if kind == "float":
            assert isinstance(user, np.float32) and (float(user) == plain or (math.isnan(plain) and np.isnan(user)))
        elif kind == "integer":
            assert isinstance(user, np.int32) and int(user) == plain
        else:
            assert user is plain


@settings(max_examples=40)
@given(nested_cases())
def test_mlflow_infers_the_drawn_type_when_the_example_holds_the_drawn_rows(case):
    schema = _infer_schema(model_value(case, case.example))

    inferred = {spec.name: spec for spec in schema.inputs}
    for field in case.fields:
        if is_nested(field.kind):
            assert inferred[field.name].type.to_dict() == nested_type(field.kind), field
            assert inferred[field.name].required


@settings(max_examples=100)
@given(nested_cases())
def test_each_malformed_row_is_what_its_kind_says_when_nested_cases_are_drawn(case):
    for malformed in case.malformed:
        base = case.inputs[malformed.base]
        mlflow_type = nested_type(case.fields[malformed.field].kind)
        assert 0 <= malformed.row < base.rows
        if malformed.problem == "bad-json":
            try:
                json.loads(malformed.text)
            except ValueError:
                continue
            raise AssertionError(f"{malformed.text!r} is valid JSON")
        value = json.loads(malformed.text)
        if malformed.problem == "narrow":
            assert _has_unfit_number(value, mlflow_type), malformed
        elif malformed.problem == "missing-property":
            assert _lacks_property(value, mlflow_type), malformed
        else:
            assert malformed.problem == "wrong-type"
            assert not _fits_type(value, mlflow_type), malformed
        if malformed.problem != "narrow":  # pyfunc.predict judges these: the row must make a model value
            assert isinstance(model_value(case, malformed_input(case, malformed)), pd.DataFrame)


@settings(max_examples=60)
@given(nested_cases())
def test_request_rows_are_the_oracle_json_texts_when_a_nested_case_is_encoded(case):
    for model_input in case.inputs:
        for field, array, values in zip(case.fields, raw_arrays(case, model_input), model_input.values):
            if is_nested(field.kind):
                assert array.dtype == object and array.shape == (model_input.rows,)
                assert all(_same(json.loads(text), value) for text, value in zip(array.tolist(), values))


@settings(max_examples=60)
@given(rejected_cases())
def test_a_nested_binary_rejection_names_the_column_when_it_is_drawn(case):
    nested = [field for field in case.fields if is_nested(field.kind)]
    if nested:
        from mlflow.types.schema import Array, Object

        schema = _infer_schema(model_value(case, case.example))
        spec = next(s for s in schema.inputs if s.name == nested[0].name)
        assert isinstance(spec.type, (Array, Object))
        assert "binary" in json.dumps(spec.type.to_dict())


def _has_unfit_number(value, spec):
    kind = spec["type"]
    if kind == "array":
        return isinstance(value, list) and any(_has_unfit_number(x, spec["items"]) for x in value)
    if kind == "object":
        return isinstance(value, dict) and any(
            _has_unfit_number(x, spec["properties"][k]) for k, x in value.items() if k in spec["properties"]
        )
    if kind == "float" and type(value) in (int, float):
        with np.errstate(over="ignore"):
            return float(np.float32(value)) != value
    if kind == "integer" and type(value) is int:
        return not -(2**31) <= value < 2**31
    return False


def _lacks_property(value, spec):
    kind = spec["type"]
    if kind == "array":
        return any(_lacks_property(x, spec["items"]) for x in value)
    if kind == "object":
        properties = spec["properties"]
        return set(value) != set(properties) or any(_lacks_property(value[k], properties[k]) for k in value)
    return False


def _fits_type(value, spec):
    """Whether ``value`` has the JSON shape of ``spec`` (leaves of their JSON kind), every property present."""
    kind = spec["type"]
    if kind == "array":
        return isinstance(value, list) and all(_fits_type(x, spec["items"]) for x in value)
    if kind == "object":
        properties = spec["properties"]
        return (
            isinstance(value, dict)
            and set(value) == set(properties)
            and all(_fits_type(x, properties[k]) for k, x in value.items())
        )
    if kind == "string":
        return isinstance(value, str)
    if kind == "boolean":
        return isinstance(value, bool)
    if kind in ("long", "integer"):
        return type(value) is int
    return type(value) in (int, float)


# -- the expected refusals, by hand ----------------------------------------------------------------------------


class _Mapped:
    def __init__(self, name, tensor):
        self.name, self.tensor = name, tensor


def test_malformed_failures_name_the_tensor_and_the_row_when_the_runtime_refuses_the_text():
    mapped = _Mapped("my vec", "my_vec")

    bad = malformed_failure(Malformed(0, 0, 3, "[1", "bad-json"), mapped)
    narrow = malformed_failure(Malformed(0, 0, 1, "[0.1]", "narrow"), mapped)
    refused = enforcement_failure(Malformed(0, 0, 2, '["x"]', "wrong-type"), mapped)

    assert (bad.status, bad.message_start, bad.contains) == (400, "Tensor `my_vec`", ": row 3 is not valid JSON (")
    assert (narrow.status, narrow.message_start) == (400, "Tensor `my_vec`")
    assert narrow.contains == ": row 1 holds a number that does not fit MLflow's "
    assert (refused.status, refused.message_start, refused.contains) == (
        400,
        SCHEMA_REFUSED,
        "column `my vec`, row 2: ",
    )


def test_recipe_operations_keep_each_row_whole_when_rows_are_lists_and_dicts():
    from tests.support.fidelity.cases import import_fidelity_models

    import_fidelity_models()
    from fidelity_models import ops

    rows = np.empty(3, dtype=object)
    rows[:] = [[1, 2, 3], {"a": 1, "b": [2]}, []]

    assert ops.apply("reverse", rows).tolist() == [[3, 2, 1], {"b": [2], "a": 1}, []]
    assert list(ops.apply("reverse", rows)[1]) == ["b", "a"]
    assert ops.apply("wrap", rows).tolist() == [
        {"size": 3, "value": [1, 2, 3]},
        {"size": 2, "value": {"a": 1, "b": [2]}},
        {"size": 0, "value": []},
    ]
    assert ops.apply("length", rows).tolist() == [3, 2, 0]
    assert ops.apply("echo", rows[:1]).tolist() == [[1, 2, 3]]  # one row holding a list stays one row
