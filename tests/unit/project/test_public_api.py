"""The public surface: what ``from mlflow_triton import ...`` offers, and nothing by accident."""

import importlib
import inspect
import subprocess
import sys

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
    "mlflow_triton.command_line",
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


def test_framework_modules_are_attributes_of_the_package_after_a_bare_import_in_a_fresh_interpreter():
    # mlflow_triton.pyfunc.log_model(...) as the docs write it, without `import mlflow_triton.pyfunc` first
    script = (
        "import sys, mlflow_triton\n"
        "assert 'mlflow_triton.sklearn' not in sys.modules\n"
        "names = ('sklearn', 'pytorch', 'transformers', 'pyfunc', 'triton')\n"
        "print(sorted(getattr(mlflow_triton, n).FLAVOR_NAME for n in names))\n"
        "print(mlflow_triton.errors.BatchingWarning.__name__, set(names) <= set(dir(mlflow_triton)))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=False)

    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:2] == [
        "['python_function', 'pytorch', 'sklearn', 'transformers', 'triton']",
        "BatchingWarning True",
    ]


def test_a_name_the_package_does_not_have_is_an_attribute_error():
    import mlflow_triton

    with pytest.raises(AttributeError, match="module 'mlflow_triton' has no attribute 'xgboost'"):
        mlflow_triton.xgboost  # noqa: B018


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
