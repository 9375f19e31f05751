"""Triton-safe names: ``sanitize``, ``TensorNamer`` and ``check_model_name``."""

import re

import pytest

from mlflow_triton.errors import InvalidArgumentError, MlflowTritonError
from mlflow_triton.repository.names import (
    MAX_MODEL_NAME_LENGTH,
    TensorNamer,
    check_model_name,
    default_model_name,
    sanitize,
)

TENSOR_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("price", "price"),
        ("Price_2", "Price_2"),
        ("a b", "a_b"),
        ("a-b", "a_b"),
        ("a_b", "a_b"),
        ("a  --  b", "a_b"),
        ("a\nb", "a_b"),
        ('"quoted"', "quoted"),
        ("{braces}", "braces"),
        ("back\\slash", "back_slash"),
        ("__dunder__", "dunder"),
        ("1abc", "_1abc"),
        ("123", "_123"),
        ("über", "uber"),
        ("café au lait", "cafe_au_lait"),
        (0, "_0"),
        (12, "_12"),
        (-3, "_3"),
    ],
)
def test_sanitize_returns_safe_name_when_name_has_safe_characters_left(name, expected):
    assert sanitize(name, "fallback") == expected


@pytest.mark.parametrize("name", [None, "", " ", "\n", "{}", "\\", '"', "名前", "__", "-"])
def test_sanitize_returns_fallback_when_nothing_safe_is_left(name):
    assert sanitize(name, "input_3") == "input_3"


@pytest.mark.parametrize("name", ["a b", "1", "ü", "x\ty", "\u00a0k", "Ω", "①", "ﬁ"])
def test_sanitize_matches_tensor_name_pattern_when_name_is_hostile(name):
    assert TENSOR_NAME.fullmatch(sanitize(name, "fallback"))


def test_tensor_namer_suffixes_names_when_sanitized_forms_collide():
    namer = TensorNamer()

    claimed = [namer.claim(name, "input_0") for name in ("a b", "a_b", "a-b")]

    assert claimed == ["a_b", "a_b_2", "a_b_3"]


def test_tensor_namer_skips_taken_suffix_when_suffixed_name_is_already_claimed():
    namer = TensorNamer()

    claimed = [namer.claim(name, "x") for name in ("a_2", "a", " a ")]

    assert claimed == ["a_2", "a", "a_3"]


def test_tensor_namer_suffixes_fallback_when_fallback_is_already_a_name():
    namer = TensorNamer()

    claimed = [namer.claim("output_0", "f"), namer.claim("", "output_0")]

    assert claimed == ["output_0", "output_0_2"]


@pytest.mark.parametrize(
    "name",
    ["model", "my-model", "my.model", "my_model_2", "_private", "7up", "A" * MAX_MODEL_NAME_LENGTH],
)
def test_check_model_name_returns_name_when_name_is_safe(name):
    assert check_model_name(name) == name


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("", "non-empty string"),
        (None, "non-empty string"),
        (42, "non-empty string"),
        ("a/b", "not a safe Triton model name"),
        ("a\\b", "not a safe Triton model name"),
        ("..", "not a safe Triton model name"),
        ("a..b", "not a safe Triton model name"),
        (".hidden", "not a safe Triton model name"),
        ("-dash", "not a safe Triton model name"),
        ("with space", "not a safe Triton model name"),
        ("model\n", "not a safe Triton model name"),
        ("modèle", "not a safe Triton model name"),
        ("x" * 200, "200 characters long; at most 128"),
        ("x" * (MAX_MODEL_NAME_LENGTH + 1), "at most 128"),
    ],
)
def test_check_model_name_raises_when_name_is_unsafe(name, message):
    with pytest.raises(InvalidArgumentError, match=re.escape(message)):
        check_model_name(name)


def test_check_model_name_error_is_in_error_family_when_raised():
    assert issubclass(InvalidArgumentError, MlflowTritonError)
    assert issubclass(InvalidArgumentError, ValueError)


@pytest.mark.parametrize(
    ("name", "expected"),
    [("classifier", "classifier"), ("text-generator", "text_generator"), ("", "model"), ("名前", "model")],
)
def test_default_model_name_is_sanitized_when_derived_from_mlflow_name(name, expected):
    assert default_model_name(name) == expected
    assert check_model_name(default_model_name(name))
