"""Custom code that will not import where Triton loads the model is reported before anything is written.

The default validation predicts in memory, where every class is already
imported; a module that is neither installed nor packaged with ``code_paths``
then fails on Triton with ``ModuleNotFoundError``. The wrappers warn
(``CustomCodeWarning``, naming the module and the remedies) and record the
warning in ``validation.json``. The modules below are written into the test's
own directory and imported under a unique name, as a user's ``my_net.py`` next
to a notebook would be.
"""

import importlib.util
import json
import pickle
import sys
import uuid
import warnings

import numpy as np
import pandas as pd
import pytest
import torch

from mlflow_triton import pytorch as mt_pytorch
from mlflow_triton import sklearn as mt_sklearn
from mlflow_triton._custom_code import CodeReference, unimportable_code_warnings
from mlflow_triton.errors import CustomCodeWarning, ValidationError
from tests.support import tiny_models

TORCH_MODULE_SOURCE = """
import torch


class LocalNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(4, 2)
        self.activation = Squash()

    def forward(self, x):
        return self.activation(self.linear(x))


class Squash(torch.nn.Module):
    def forward(self, x):
        return torch.tanh(x)
"""

SKLEARN_MODULE_SOURCE = """
import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin


def double(values):
    return np.asarray(values, dtype=np.float64) * 2.0


class Shift(TransformerMixin, BaseEstimator):
    def __init__(self, offset=1.0):
        self.offset = offset

    def fit(self, X, y=None):
        return self

    def transform(self, X):
        return np.asarray(X, dtype=np.float64) + self.offset
"""


@pytest.fixture
def local_module(tmp_path, monkeypatch):
    """``write(source)`` -> (module, its file): a module imported from the test directory, not installed."""

    def write(source):
        name = f"user_code_{uuid.uuid4().hex[:8]}"
        path = tmp_path / "user_code" / f"{name}.py"
        path.parent.mkdir(exist_ok=True)
        path.write_text(source)
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        monkeypatch.setitem(sys.modules, name, module)
        spec.loader.exec_module(module)
        return module, path

    return write


def _custom_code_warnings(record):
    return [str(w.message) for w in record if issubclass(w.category, CustomCodeWarning)]


def _validation_report(package):
    [report] = package.glob("model_repository/*/validation.json")
    return json.loads(report.read_text())


# --- PyTorch ------------------------------------------------------------------------------------


def test_pytorch_save_model_warns_and_records_when_a_module_class_is_neither_installed_nor_packaged(
    tmp_path, local_module
):
    module, _ = local_module(TORCH_MODULE_SOURCE)
    model = module.LocalNet().eval()

    with pytest.warns(CustomCodeWarning) as record:
        mt_pytorch.save_model(model, tmp_path / "package", input_example=tiny_models.mlp_example())

    [message] = _custom_code_warnings(record)
    assert f"class LocalNet, class Squash is defined in module '{module.__name__}'" in message
    assert f"ModuleNotFoundError: No module named '{module.__name__}'" in message
    assert "code_paths=[" in message and "validate_saved_model=True" in message
    assert _validation_report(tmp_path / "package")["warnings"] == [message]


def test_pytorch_warning_names_the_module_the_saved_artifact_really_fails_to_import(tmp_path, local_module):
    """The warned-about case is real: the clean-interpreter reload fails on exactly that module."""
    module, _ = local_module(TORCH_MODULE_SOURCE)

    with pytest.raises(ValidationError, match=f"No module named '{module.__name__}'"):
        mt_pytorch.save_model(
            module.LocalNet().eval(),
            tmp_path / "package",
            input_example=tiny_models.mlp_example(),
            validate_saved_model=True,
        )


@pytest.mark.parametrize("packaged_as", ["file", "directory"])
def test_pytorch_save_model_does_not_warn_when_code_paths_cover_the_module(tmp_path, local_module, packaged_as):
    module, path = local_module(TORCH_MODULE_SOURCE)
    code_paths = [str(path)] if packaged_as == "file" else [str(path.parent)]

    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        mt_pytorch.save_model(
            module.LocalNet().eval(),
            tmp_path / "package",
            input_example=tiny_models.mlp_example(),
            code_paths=code_paths,
        )

    assert _custom_code_warnings(record) == []
    assert _validation_report(tmp_path / "package")["warnings"] == []


def test_pytorch_save_model_does_not_warn_for_installed_classes(tmp_path):
    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU()).eval()

    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        mt_pytorch.save_model(model, tmp_path / "package", input_example=tiny_models.mlp_example())

    assert _custom_code_warnings(record) == []


def test_pytorch_custom_code_check_is_skipped_when_the_saved_model_is_validated(tmp_path, local_module):
    """validate_saved_model=True reloads the package in a clean interpreter: the complete check."""
    module, path = local_module(TORCH_MODULE_SOURCE)

    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        mt_pytorch.save_model(
            module.LocalNet().eval(),
            tmp_path / "package",
            input_example=tiny_models.mlp_example(),
            code_paths=[str(path)],
            validate_saved_model=True,
        )

    assert _custom_code_warnings(record) == []


# --- scikit-learn -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def frame():
    return pd.DataFrame({"a": [1.0, 2.0, 3.0, 4.0], "b": [0.5, 1.5, 2.5, 3.5]})


def _pipeline(module, frame):
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import FunctionTransformer

    return make_pipeline(FunctionTransformer(module.double), module.Shift(offset=0.5), LogisticRegression()).fit(
        frame, [0, 1, 0, 1]
    )


def test_sklearn_save_model_warns_and_records_when_a_transformer_and_a_function_come_from_a_local_module(
    tmp_path, local_module, frame
):
    module, _ = local_module(SKLEARN_MODULE_SOURCE)

    with pytest.warns(CustomCodeWarning) as record:
        mt_sklearn.save_model(
            _pipeline(module, frame),
            tmp_path / "package",
            input_example=frame.iloc[:2],
            serialization_format="cloudpickle",
        )

    [message] = _custom_code_warnings(record)
    assert f"class Shift, function double is defined in module '{module.__name__}'" in message
    assert _validation_report(tmp_path / "package")["warnings"] == [message]


def test_sklearn_save_model_does_not_warn_when_code_paths_cover_the_module(tmp_path, local_module, frame):
    module, path = local_module(SKLEARN_MODULE_SOURCE)

    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        mt_sklearn.save_model(
            _pipeline(module, frame),
            tmp_path / "package",
            input_example=frame.iloc[:2],
            serialization_format="cloudpickle",
            code_paths=[str(path)],
        )

    assert _custom_code_warnings(record) == []


def test_sklearn_save_model_does_not_warn_for_an_installed_pipeline(tmp_path, fitted_pipeline, example_frame):
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        mt_sklearn.save_model(fitted_pipeline, tmp_path / "package", input_example=example_frame)

    assert _custom_code_warnings(record) == []
    assert _validation_report(tmp_path / "package")["warnings"] == []


# --- __main__: a problem only for serializers that store it by reference ------------------------


MAIN_NET = CodeReference("class", "__main__", "Net")


def test_main_module_class_warns_when_the_serializer_stores_it_by_reference():
    [message] = unimportable_code_warnings(
        [MAIN_NET],
        code_paths=None,
        main_stored_by_value=False,
        serializer="pickle_module=pickle",
        remedy="or leave pickle_module unset",
    )

    assert message.startswith("class Net is defined in __main__, which pickle_module=pickle stores by reference")
    assert "code_paths=[...], or leave pickle_module unset; validate_saved_model=True" in message


# A class defined inside a function of a module that Triton cannot import (this test module: not installed, not in
# code_paths), as MLflow's own tests define their models (found by the MLflow corpus, docs/mlflow-corpus.md).
LOCAL_NET = CodeReference("class", __name__, "build.<locals>.Net")


def test_local_class_does_not_warn_when_cloudpickle_stores_it_by_value():
    assert (
        unimportable_code_warnings(
            [LOCAL_NET], code_paths=None, main_stored_by_value=True, serializer="pickle_module=cloudpickle", remedy=""
        )
        == []
    )


def test_local_class_warns_when_the_serializer_stores_it_by_reference():
    [message] = unimportable_code_warnings(
        [LOCAL_NET], code_paths=None, main_stored_by_value=False, serializer="serialization_format='skops'", remedy=""
    )

    assert message.startswith(f"class build.<locals>.Net is defined in module {__name__!r}")


def test_main_module_class_does_not_warn_when_cloudpickle_stores_it_by_value():
    assert (
        unimportable_code_warnings(
            [MAIN_NET],
            code_paths=None,
            main_stored_by_value=True,
            serializer="pickle_module=cloudpickle",
            remedy="",
        )
        == []
    )


def test_pytorch_save_model_warns_about_a_main_class_only_with_a_by_reference_pickle_module(tmp_path, monkeypatch):
    class MainNet(torch.nn.Module):
        def forward(self, x):
            return x * 2.0

    MainNet.__module__, MainNet.__qualname__ = "__main__", "MainNet"
    monkeypatch.setattr(sys.modules["__main__"], "MainNet", MainNet, raising=False)

    with warnings.catch_warnings(record=True) as default_record:
        warnings.simplefilter("always")
        mt_pytorch.save_model(MainNet().eval(), tmp_path / "cloudpickled", input_example=tiny_models.mlp_example())
    with pytest.warns(CustomCodeWarning, match="class MainNet is defined in __main__, which pickle_module=pickle"):
        mt_pytorch.save_model(
            MainNet().eval(),
            tmp_path / "pickled",
            input_example=tiny_models.mlp_example(),
            pickle_module=pickle,
        )

    assert _custom_code_warnings(default_record) == []


@pytest.mark.parametrize("pickle_module_name", ["mlflow.pytorch.pickle_module", "cloudpickle"])
def test_pytorch_save_model_does_not_warn_about_a_main_class_when_the_pickle_module_is_cloudpickle_by_another_name(
    tmp_path, monkeypatch, pickle_module_name
):
    """MLflow's own ``mlflow.pytorch.pickle_module`` is cloudpickle's Pickler under another module name (#22.5)."""
    import importlib

    class MainNet(torch.nn.Module):
        def forward(self, x):
            return x * 2.0

    MainNet.__module__, MainNet.__qualname__ = "__main__", "MainNet"
    monkeypatch.setattr(sys.modules["__main__"], "MainNet", MainNet, raising=False)

    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        mt_pytorch.save_model(
            MainNet().eval(),
            tmp_path / "package",
            input_example=tiny_models.mlp_example(),
            pickle_module=importlib.import_module(pickle_module_name),
        )

    assert _custom_code_warnings(record) == []
    assert _validation_report(tmp_path / "package")["warnings"] == []


def test_sklearn_code_references_follow_pipelines_column_transformers_and_functions(local_module, frame):
    from sklearn.compose import ColumnTransformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import FunctionTransformer, StandardScaler

    from mlflow_triton.sklearn import _code_references

    module, _ = local_module(SKLEARN_MODULE_SOURCE)
    pipeline = Pipeline(
        [
            ("columns", ColumnTransformer([("scaled", StandardScaler(), ["a"]), ("shifted", module.Shift(), ["b"])])),
            ("double", FunctionTransformer(func=module.double, inverse_func=np.log1p)),
            ("classify", LogisticRegression()),
        ]
    )

    references = {(r.module, r.qualname) for r in _code_references(pipeline)}

    assert {(module.__name__, "Shift"), (module.__name__, "double")} <= references
    assert ("sklearn.pipeline", "Pipeline") in references
    assert ("sklearn.preprocessing._data", "StandardScaler") in references


def test_module_of_an_editable_install_outside_site_packages_does_not_warn():
    """This package is installed editable: its files live in the checkout, its distribution provides it."""
    import mlflow_triton.errors

    assert "site-packages" not in mlflow_triton.errors.__file__
    assert (
        unimportable_code_warnings(
            [CodeReference("class", "mlflow_triton.errors", "ValidationError")],
            code_paths=None,
            main_stored_by_value=False,
            serializer="pickle",
            remedy="",
        )
        == []
    )
