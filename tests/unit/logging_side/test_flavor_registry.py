"""A flavor is one module plus its registry entry: a flavor defined in this module alone is saved with its Triton
repository, read by ``check``'s source reading and refused by ``export-onnx`` by name, through the registry's facts
(``mlflow_triton.flavors``); and the registry's facts agree with the runtime, which cannot read them."""

import types

import mlflow.pyfunc
import numpy as np
import pytest
from mlflow.models import Model, ModelSignature
from mlflow.pyfunc import PyFuncModel
from mlflow.types import Schema, TensorSpec

from mlflow_triton import _framework, _options, _packaging, _schema, flavors, pytorch, sklearn
from mlflow_triton.errors import InvalidArgumentError
from mlflow_triton.export import UnsupportedModelError, export_onnx
from mlflow_triton.local.errors import ModelSourceError
from mlflow_triton.local.sources import resolve_model
from mlflow_triton.repository.config import read_config
from mlflow_triton.repository.layout import CONFIG_FILE
from mlflow_triton.runtime.loading import device_setting

TINY = "tiny_doubler"
EXAMPLE = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dtype=np.float32)
# One named input tensor: MLflow's schema enforcement would hand predict a dict, which the flavor refuses.
SIGNATURE = ModelSignature(
    inputs=Schema([TensorSpec(np.dtype("float32"), (-1, 3), "x")]),
    outputs=Schema([TensorSpec(np.dtype("float32"), (-1, 3))]),
)


# -- the flavor: what its module would hold -----------------------------------------------------------------------


class Doubler(mlflow.pyfunc.PythonModel):
    """The flavor's model: twice its input (an ndarray: the flavor takes no dict, as its entry says)."""

    def predict(self, context, model_input, params=None):
        assert isinstance(model_input, np.ndarray), type(model_input)
        return model_input * 2


def save_tiny_model(tiny_model, path, mlflow_model=None, signature=None, input_example=None, pip_requirements=None):
    """The flavor's own ``save_model`` (MLflow's ``mlflow.<flavor>``): its flavor plus ``python_function``."""
    mlflow_model = mlflow_model or Model()
    mlflow_model.add_flavor(TINY, factor=2)
    mlflow.pyfunc.save_model(
        path,
        python_model=tiny_model,
        mlflow_model=mlflow_model,
        signature=signature,
        input_example=input_example,
        pip_requirements=pip_requirements,
    )


class _Predicting:
    """The in-memory pyfunc implementation: MLflow's wrappers call ``predict(data, params=...)``."""

    def __init__(self, model):
        self.model = model

    def predict(self, data, params=None):
        return self.model.predict(None, data, params)


class _Tiny(_framework.Framework):
    flavor = TINY
    model_argument = "tiny_model"
    dict_input = False

    def native_module(self):
        return types.SimpleNamespace(save_model=save_tiny_model)

    def native_options(self, options):
        return _framework.with_default_requirements(options, lambda _: mlflow.pyfunc.get_default_pip_requirements())

    def pyfunc_adapter(self, model, options, model_meta):
        return PyFuncModel(model_meta, _Predicting(model))


def log_model(tiny_model, *, input_example, signature=None, name="model", **kwargs):
    """The flavor module's ``log_model``."""
    destination, triton = _options.Destination(name=name), _options.TritonOptions()
    return _packaging.log_model(flavors.entry(TINY), tiny_model, input_example, signature, destination, triton, kwargs)


def save_model(tiny_model, path, *, input_example, signature=None, **kwargs):
    """The flavor module's ``save_model``."""
    triton = _options.TritonOptions()
    _packaging.save_model(flavors.entry(TINY), tiny_model, path, input_example, signature, triton, kwargs)


@pytest.fixture
def registry(monkeypatch):
    """The registry as it is, restored after the test (the built-in entries loaded first, so none is lost)."""
    flavors.entries()
    monkeypatch.setattr(flavors, "_REGISTERED", dict(flavors._REGISTERED))
    return flavors


@pytest.fixture
def tiny(registry):
    return registry.register(_Tiny())


@pytest.fixture
def saved(tiny, tmp_path, tracking_store):
    path = tmp_path / "tiny"
    save_model(Doubler(), path, input_example=EXAMPLE, signature=SIGNATURE)
    return path


# -- log, check's source reading, export's refusal --------------------------------------------------------------


def test_flavor_registered_here_is_saved_with_its_triton_repository_when_its_module_logs(saved):
    mlmodel = Model.load(str(saved / "MLmodel"))
    [repository] = (saved / "model_repository").iterdir()
    _, contract = read_config(repository / CONFIG_FILE)

    assert {TINY, "python_function", "triton"} <= set(mlmodel.flavors)
    assert contract.flavor == TINY
    # the entry takes no dict: MLflow records the only input tensor unnamed, Triton keeps its name
    assert [spec.name for spec in mlmodel.signature.inputs.inputs] == [None]
    assert [field.name for field in contract.inputs.fields] == ["x"]
    np.testing.assert_array_equal(mlflow.pyfunc.load_model(str(saved)).predict(EXAMPLE), EXAMPLE * 2)


def test_check_reads_a_logged_model_of_the_flavor_from_the_store_when_it_has_the_triton_flavor(
    tiny, tracking_store, tmp_path
):
    info = log_model(Doubler(), input_example=EXAMPLE, signature=SIGNATURE, name="tiny")

    source = resolve_model(info.model_uri, tmp_path / "download")

    assert source.generated
    assert read_config(source.files / CONFIG_FILE)[1].flavor == TINY
    assert [model.name for model in tracking_store.logged_models()] == ["tiny"]


def test_check_names_the_flavors_module_and_model_argument_when_mlflow_logged_it_natively(tiny, tmp_path):
    native = tmp_path / "native"
    save_tiny_model(Doubler(), native, input_example=EXAMPLE, pip_requirements=[])

    with pytest.raises(ModelSourceError) as raised:
        resolve_model(str(native), tmp_path / "download")

    assert str(raised.value) == (
        f"{native} was logged with mlflow.{TINY}, not {__name__}: it has no triton flavor. Re-log it with "
        f"{__name__}.log_model(tiny_model, input_example=..., name=...) (same arguments as mlflow's own log_model, "
        "input_example required)"
    )


def test_export_refuses_the_flavor_naming_the_exportable_ones_when_its_entry_has_no_exporter(saved, tmp_path):
    out = tmp_path / "out"

    with pytest.raises(
        UnsupportedModelError, match=rf"^Flavor '{TINY}' cannot be exported; supported: sklearn, pytorch$"
    ):
        export_onnx(str(saved), out)

    assert not out.exists() or list(out.iterdir()) == []


def test_export_names_a_registered_flavor_among_the_exportable_ones_when_its_entry_names_an_exporter(
    saved, registry, tmp_path
):
    class _Exportable(_Tiny):
        flavor = "tiny_exportable"
        exporter = "pytorch"

    registry.register(_Exportable())

    with pytest.raises(UnsupportedModelError, match=r"supported: sklearn, pytorch, tiny_exportable$"):
        export_onnx(str(saved), tmp_path / "out")


# -- the registry -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("flavor", list(flavors.WRAPPERS))
def test_each_built_in_module_registers_the_flavor_it_is_listed_for_when_asked(flavor):
    entry = flavors.entry(flavor)

    assert entry.flavor == flavor
    assert entry.wrapper_module == flavors.WRAPPERS[flavor]


def test_runtime_device_setting_speaks_each_entrys_loader_form_when_the_registry_is_read():
    # The runtime (vendored into model.py) cannot import the registry: its rule must agree with every entry.
    for entry in flavors.entries():
        assert device_setting(entry.flavor, "cuda:1") == ("1" if entry.device_index else "cuda:1"), entry.flavor
        assert device_setting(entry.flavor, "cpu") == ("-1" if entry.device_index else "cpu"), entry.flavor


def test_signature_for_pyfunc_unnames_the_only_tensor_when_the_flavors_entry_takes_no_dict(tiny):
    named = ModelSignature(inputs=Schema([TensorSpec(np.dtype("float32"), (-1, 3), "x")]))

    assert [s.name for s in _schema.signature_for_pyfunc(named, TINY).inputs.inputs] == [None]
    assert [s.name for s in _schema.signature_for_pyfunc(named, "unregistered").inputs.inputs] == ["x"]


def test_register_refuses_a_second_entry_naming_the_module_holding_the_flavor_when_registered(registry):
    class _Impostor(_framework.Framework):
        flavor = sklearn.FLAVOR_NAME

    with pytest.raises(
        InvalidArgumentError, match=r"flavor 'sklearn' is registered already, by mlflow_triton\.sklearn\._Sklearn"
    ):
        registry.register(_Impostor())

    assert registry.entry("sklearn") is sklearn._FRAMEWORK
    assert registry.entry("pytorch") is pytorch._FRAMEWORK
