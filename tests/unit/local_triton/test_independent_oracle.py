"""The e2e answer checks judge Triton against an expectation built without the runtime's codecs.

The runtime's output codec produced Triton's answer; an expectation built by the same code would hide
any value defect in it. Every e2e test, the helpers they use and the soak build their expectation with
``tests/support/oracle.py`` (numpy from ``pyfunc.predict`` and the declared tensor types). This test
reads their sources: none may import the runtime's codecs or the product's codec-built expectation
(``mlflow-triton check`` itself keeps building its own with the runtime's codec: it is the product
under test, and these tests judge its answers independently).
"""

import ast
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.support.fidelity.expectations import Answer, expected_answer

ROOT = Path(__file__).resolve().parents[3]
ANSWER_CHECKS = sorted(
    [
        *ROOT.glob("tests/e2e/*.py"),
        *ROOT.glob("tests/support/*.py"),
        *ROOT.glob("tests/support/fidelity/*.py"),
        *ROOT.glob("benchmarks/soak*.py"),
    ]
)
CODEC_MODULES = {"mlflow_triton.runtime.codecs", "mlflow_triton.runtime.conversions"}
CODEC_BUILT_EXPECTATIONS = {"expected_outputs", "predict_outputs", "output_codec", "StructureCodec"}


def imported_names(path):
    """``[(module, name)]`` of every import in ``path`` (``name`` None for ``import module``)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(alias.name, None) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            found += [(node.module, alias.name) for alias in node.names]
    return found


def test_answer_check_sources_are_found_when_the_tree_is_read():
    names = {path.relative_to(ROOT).as_posix() for path in ANSWER_CHECKS}

    assert {
        "tests/e2e/test_cli.py",
        "tests/e2e/test_faults.py",
        "tests/e2e/test_runner.py",
        "tests/e2e/test_soak.py",
        "tests/e2e/test_readme_triton_by_hand.py",
        "tests/support/background_load.py",
        "tests/support/oracle.py",
        "benchmarks/soak.py",
    } <= names


@pytest.mark.parametrize("path", ANSWER_CHECKS, ids=lambda path: path.relative_to(ROOT).as_posix())
def test_answer_check_imports_no_runtime_codec_when_it_builds_an_expectation(path):
    offending = [
        (module, name)
        for module, name in imported_names(path)
        if module in CODEC_MODULES
        or (module.startswith("mlflow_triton") and name in CODEC_BUILT_EXPECTATIONS)
        or (module == "mlflow_triton.runtime" and name in {"codecs", "conversions"})
    ]

    assert offending == []


def test_independent_encoder_imports_nothing_of_the_runtime_when_read():
    sources = [
        ROOT / "tests/support/oracle.py",
        ROOT / "tests/support/fidelity/expectations.py",
        ROOT / "tests/support/fidelity/cases.py",
    ]

    assert [
        (path.name, module)
        for path in sources
        for module, _ in imported_names(path)
        if module.startswith("mlflow_triton.runtime")
    ] == []


# -- the encoder itself, against arrays written out by hand ----------------------------------------------------


class Declared:
    """A ``config.pbtxt`` output declaration as ``mlflow_triton.repository.config.declarations`` returns it."""

    def __init__(self, name, data_type, dims):
        self.name, self.data_type, self.dims = name, data_type, dims


class Field:
    def __init__(self, name, tensor, content=None):
        self.name, self.tensor, self.content = name, tensor, content


class Side:
    def __init__(self, structure, fields):
        self.structure, self.fields = structure, fields


class Contract:
    def __init__(self, outputs):
        self.outputs = outputs


def test_expected_answer_is_the_prediction_in_the_declared_dtypes_when_a_frame_has_a_column_per_output():
    contract = Contract(
        Side("columns", [Field("score", "score"), Field("label", "label", "text"), Field("count", "count")])
    )
    outputs = [
        Declared("score", "TYPE_FP32", [-1]),
        Declared("label", "TYPE_STRING", [-1]),
        Declared("count", "TYPE_INT32", [-1]),
    ]
    prediction = pd.DataFrame({"score": [0.25, -1.5], "label": ["名前", ""], "count": [7, -3]})

    answer = expected_answer(contract, outputs, prediction=prediction)

    assert isinstance(answer, Answer)
    assert sorted(answer.outputs) == ["count", "label", "score"]
    assert (answer.outputs["score"].dtype, answer.outputs["score"].tolist()) == (np.float32, [0.25, -1.5])
    assert (answer.outputs["label"].dtype, answer.outputs["label"].tolist()) == (object, ["名前".encode(), b""])
    assert (answer.outputs["count"].dtype, answer.outputs["count"].tolist()) == (np.int32, [7, -3])


def test_expected_answer_is_a_500_naming_the_tensor_when_a_value_does_not_fit_the_declared_dtype():
    contract = Contract(Side("tensor", [Field(None, "output_0")]))
    outputs = [Declared("output_0", "TYPE_INT8", [-1])]

    answer = expected_answer(contract, outputs, prediction=np.array([1, 300]))

    assert (answer.status, answer.message_start) == (
        500,
        "The prediction does not fit the configured outputs: Tensor `output_0`",
    )
