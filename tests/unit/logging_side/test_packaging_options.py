"""``_framework`` and ``_packaging``: native option checks, recorded requirements and empty examples."""

import inspect
import re
import types

import mlflow
import mlflow.sklearn
import numpy as np
import pandas as pd
import pytest

from mlflow_triton import _framework, _packaging, sklearn
from mlflow_triton.errors import InvalidArgumentError

SKLEARN_NATIVE_OPTIONS = (
    "code_paths, conda_env, extra_files, extra_pip_requirements, metadata, pip_requirements, pyfunc_predict_fn, "
    "serialization_format, skops_trusted_types"
)


class _CatchAllFramework(_framework.Framework):
    """A flavor whose save_model forwards unknown keywords elsewhere, like mlflow.pytorch.save_model."""

    flavor = "catch_all"
    model_argument = "catch_all_model"

    def native_module(self):
        def save_model(catch_all_model, path, mlflow_model=None, signature=None, code_paths=None, **kwargs):
            """A native save_model with a keyword catch-all."""

        return types.SimpleNamespace(save_model=save_model)


# -- check_native_options ------------------------------------------------------------------------


def test_check_native_options_lists_the_sklearn_options_when_an_option_is_unknown():
    with pytest.raises(InvalidArgumentError, match=re.escape(f"accepted: {SKLEARN_NATIVE_OPTIONS}")):
        sklearn._FRAMEWORK.check_native_options({"n_jobs": 2})


def test_check_native_options_accepts_every_unmanaged_save_model_parameter_when_given():
    managed = _framework.MANAGED_NATIVE_OPTIONS | {sklearn._FRAMEWORK.model_argument}
    parameters = set(inspect.signature(mlflow.sklearn.save_model).parameters) - managed

    sklearn._FRAMEWORK.check_native_options(dict.fromkeys(parameters))

    assert ", ".join(sorted(parameters)) == SKLEARN_NATIVE_OPTIONS


def test_check_native_options_rejects_the_catch_all_name_when_save_model_takes_var_keywords():
    with pytest.raises(InvalidArgumentError, match=r"^Unknown option\(s\) kwargs for .*; accepted: code_paths$"):
        _CatchAllFramework().check_native_options({"kwargs": {"pickle_protocol": 4}})


def test_check_native_options_names_artifact_path_replacement_when_artifact_path_is_given():
    with pytest.raises(
        InvalidArgumentError, match=r"^artifact_path is not supported; use name= for the MLflow model name$"
    ):
        _CatchAllFramework().check_native_options({"artifact_path": "model", "code_paths": []})


# -- recorded requirements -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("serialization_format", "cloudpickle", "skops"),
    [(None, False, True), ("skops", False, True), ("cloudpickle", True, False), ("pickle", False, False)],
)
def test_sklearn_native_options_record_default_requirements_when_no_requirements_are_given(
    serialization_format, cloudpickle, skops
):
    options = {} if serialization_format is None else {"serialization_format": serialization_format}

    recorded = sklearn._FRAMEWORK.native_options(options)["pip_requirements"]

    assert recorded == mlflow.sklearn.get_default_pip_requirements(include_cloudpickle=cloudpickle, include_skops=skops)


def test_with_default_requirements_appends_extra_requirements_when_given_as_a_list():
    options = _framework.with_default_requirements({"extra_pip_requirements": ["pyarrow"]}, lambda _: ["scikit-learn"])

    assert options == {"pip_requirements": ["scikit-learn", "pyarrow"]}


def test_with_default_requirements_reads_extra_requirements_when_given_as_a_file(tmp_path):
    requirements = tmp_path / "extra.txt"
    requirements.write_text("# serving extras\npyarrow>=14\n\n  orjson  \n")

    options = _framework.with_default_requirements({"extra_pip_requirements": str(requirements)}, lambda _: ["sk"])

    assert options == {"pip_requirements": ["sk", "pyarrow>=14", "orjson"]}


@pytest.mark.parametrize(
    "given",
    [
        {"pip_requirements": ["scikit-learn==1.5"]},
        {"pip_requirements": "requirements.txt"},
        {"conda_env": "conda.yaml"},
    ],
)
def test_with_default_requirements_keeps_the_callers_requirements_when_given(given):
    assert _framework.with_default_requirements(given, lambda _: ["never-used"]) == given


# -- empty examples ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("example", "empty"),
    [
        (None, True),
        (pd.DataFrame(), True),
        (pd.DataFrame({"x": []}), True),
        (pd.Series([], dtype=float), True),
        (np.array([]), True),
        (np.empty((0, 4)), True),
        ([], True),
        ((), True),
        ({}, True),
        ("", True),
        (b"", True),
        (pd.DataFrame({"x": [1]}), False),
        (np.zeros((1, 4)), False),
        ([0], False),
        ({"x": np.zeros(1)}, False),
        ("text", False),
        (np.float64(0.0), False),
    ],
)
def test_is_empty_reports_whether_an_example_has_values_when_checked(example, empty):
    assert _packaging._is_empty(example) is empty
