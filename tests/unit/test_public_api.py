"""The public surface: what ``from mlflow_triton import ...`` offers, and nothing by accident."""

import importlib
import inspect

import pytest

PUBLIC_MODULES = [
    "mlflow_triton.sklearn",
    "mlflow_triton.pytorch",
    "mlflow_triton.transformers",
    "mlflow_triton.pyfunc",
    "mlflow_triton.triton",
    "mlflow_triton.errors",
    "mlflow_triton.shared_contract",
    "mlflow_triton.export",
    "mlflow_triton.local",
    "mlflow_triton.deploy",
    "mlflow_triton.cli",
]


@pytest.mark.parametrize("module_name", PUBLIC_MODULES)
def test_all_lists_exactly_the_public_names_when_module_is_imported(module_name):
    module = importlib.import_module(module_name)
    defined_here = {
        name
        for name, value in vars(module).items()
        if not name.startswith("_")
        and (inspect.isfunction(value) or inspect.isclass(value))
        and value.__module__.startswith(module_name)
    }

    assert defined_here <= set(module.__all__)
    assert all(hasattr(module, name) for name in module.__all__)


def test_framework_modules_import_when_named_from_the_package():
    from mlflow_triton import pytorch, sklearn, transformers, triton

    assert {m.FLAVOR_NAME for m in (sklearn, pytorch, transformers)} == {"sklearn", "pytorch", "transformers"}
    assert triton.FLAVOR_NAME == "triton"


@pytest.mark.parametrize(
    "module_name",
    ["mlflow_triton.sklearn", "mlflow_triton.pytorch", "mlflow_triton.transformers", "mlflow_triton.pyfunc"],
)
def test_log_model_takes_input_example_as_required_keyword_when_inspected(module_name):
    parameters = inspect.signature(importlib.import_module(module_name).log_model).parameters
    first = next(iter(parameters.values()))

    assert first.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
    assert parameters["input_example"].kind is inspect.Parameter.KEYWORD_ONLY
    assert parameters["input_example"].default is inspect.Parameter.empty


def test_triton_log_model_has_exactly_the_documented_parameters_when_inspected():
    from mlflow_triton import triton

    assert list(inspect.signature(triton.log_model).parameters) == [
        "triton_model_path",
        "name",
        "registered_model_name",
        "await_registration_for",
        "run_id",
        "metadata",
    ]
