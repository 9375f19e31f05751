"""``mlflow_triton.pytorch``: eval-mode check, pickle packaging, in-memory prediction, code_paths, GPU."""

import inspect
import json
import os
import subprocess
import sys

import mlflow
import numpy as np
import pytest
import torch  # noqa: E402  (the tests extra installs torch; never skipped)
from mlflow.models import Model, ModelSignature
from mlflow.types import Schema, TensorSpec

import mlflow_triton.pytorch as mt_pytorch
from mlflow_triton import triton
from mlflow_triton.errors import InvalidArgumentError, ValidationError
from mlflow_triton.repository.config import read_config
from mlflow_triton.runtime.loading import DEVICE_VARIABLE
from tests.support import tiny_models

CODE_PATHS = [str(tiny_models.CUSTOM_NET_DIR)]


@pytest.fixture
def experiment_id(tmp_path):
    with tiny_models.sqlite_tracking(tmp_path) as experiment_id:
        yield experiment_id


@pytest.fixture(scope="module")
def logged_mlp(tmp_path_factory):
    """One logged TinyMLP (code_paths, architecture_init_kwargs) shared by read-only tests."""
    directory = tmp_path_factory.mktemp("logged_mlp")
    with tiny_models.sqlite_tracking(directory):
        info = mt_pytorch.log_model(
            tiny_models.shared_tiny_mlp(),
            input_example=tiny_models.mlp_example(),
            name="network",
            code_paths=CODE_PATHS,
            architecture_init_kwargs=tiny_models.MLP_SIZES,
        )
        yield info, triton.load_model(info.model_uri)


def _assert_nothing_logged(experiment_id, directory):
    assert mlflow.search_logged_models(experiment_ids=[experiment_id], output_format="list") == []
    assert mlflow.MlflowClient().search_registered_models() == []
    assert [p for p in (directory / "artifacts").rglob("*") if p.is_file()] == []


def _repository(package):
    [repository] = (package / "model_repository").iterdir()
    return repository


def _artifact_listing(path):
    return sorted(p.relative_to(path).as_posix() for p in path.rglob("*") if p.is_file())


# --- public surface ----------------------------------------------------------------------------


def test_module_exports_its_public_surface_when_imported():
    assert sorted(mt_pytorch.__all__) == ["FLAVOR_NAME", "TRITON_FLAVOR_NAME", "log_model", "save_model"]
    assert (mt_pytorch.FLAVOR_NAME, mt_pytorch.TRITON_FLAVOR_NAME) == ("pytorch", "triton")


@pytest.mark.parametrize("function", [mt_pytorch.log_model, mt_pytorch.save_model])
def test_wrapper_takes_the_model_positionally_and_everything_else_by_keyword_when_called(function):
    parameters = list(inspect.signature(function).parameters.values())

    assert parameters[0].name == "pytorch_model"
    assert parameters[0].kind == inspect.Parameter.POSITIONAL_OR_KEYWORD
    keyword_only = [p.name for p in parameters if p.kind == inspect.Parameter.KEYWORD_ONLY]
    assert {"input_example", "device", "signature", "validate_saved_model", "architecture_init_kwargs"} <= set(
        keyword_only
    )
    assert parameters[-1].kind == inspect.Parameter.VAR_KEYWORD


def test_importing_the_wrappers_loads_neither_torch_nor_transformers_when_imported():
    script = (
        "import sys\n"
        "from mlflow_triton import pytorch, transformers\n"
        "print(sorted(name for name in ('torch', 'transformers') if name in sys.modules))\n"
    )

    completed = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)

    assert completed.stdout.strip() == "[]"


def test_save_model_names_the_extra_to_install_when_torch_is_missing(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "torch", None)

    with pytest.raises(ImportError, match=r"pip install 'mlflow-triton\[torch\]'"):
        mt_pytorch.save_model(object(), tmp_path / "package", input_example=tiny_models.mlp_example())


# --- training mode: rejected before anything is written ---------------------------------------


def _whole_model_training(model):
    model.train()


def _dropout_training(model):
    model.encoder.dropout.train()


def _root_only_training(model):
    model.training = True


@pytest.mark.parametrize(
    ("put_in_training", "message"),
    [
        (_whole_model_training, r"Submodule `encoder` of the model is in training mode; call model\.eval\(\)"),
        (_dropout_training, r"Submodule `encoder\.dropout` of the model is in training mode; call model\.eval\(\)"),
        (_root_only_training, r"The model \(TinyMLP\) is in training mode; call model\.eval\(\)"),
    ],
)
def test_log_model_rejects_model_and_logs_nothing_when_a_submodule_is_in_training_mode(
    experiment_id, tmp_path, put_in_training, message
):
    model = tiny_models.fresh_tiny_mlp()
    put_in_training(model)

    with pytest.raises(InvalidArgumentError, match=message):
        mt_pytorch.log_model(model, input_example=tiny_models.mlp_example(), code_paths=CODE_PATHS)

    _assert_nothing_logged(experiment_id, tmp_path)


def test_save_model_writes_nothing_when_the_model_is_in_training_mode(tmp_path):
    model = tiny_models.fresh_tiny_mlp().train()

    with pytest.raises(InvalidArgumentError, match="`encoder` of the model is in training mode"):
        mt_pytorch.save_model(model, tmp_path / "package", input_example=tiny_models.mlp_example())

    assert list(tmp_path.iterdir()) == []


def test_log_model_rejects_model_when_it_is_not_a_torch_module(experiment_id):
    with pytest.raises(InvalidArgumentError, match="pytorch_model must be a torch.nn.Module"):
        mt_pytorch.log_model(object(), input_example=tiny_models.mlp_example())


# --- packaging ---------------------------------------------------------------------------------


def test_log_model_packages_pickle_with_code_paths_when_no_format_is_given(logged_mlp):
    info, repository = logged_mlp
    package = repository.parent.parent
    artifact = repository / "1" / "artifact"

    flavor = Model.load(str(package / "MLmodel")).flavors["pytorch"]
    assert flavor["code"] == "code"
    for root in (package, artifact):
        listing = _artifact_listing(root)
        assert "data/model.pth" in listing
        assert "data/pickle_module_info.txt" in listing
        assert not any(name.endswith(".pt2") for name in listing)
        assert {"code/custom_net/__init__.py", "code/custom_net/mlp.py"} <= set(listing)


@pytest.mark.parametrize(
    ("options", "expected_format"),
    [
        ({}, "pickle"),
        ({"serialization_format": None}, "pickle"),
        ({"serialization_format": "pt2"}, "pt2"),
        ({"export_model": True}, None),  # MLflow's deprecated switch decides (pt2); not overridden
    ],
)
def test_native_options_default_to_pickle_when_the_caller_chose_no_format(options, expected_format):
    native = mt_pytorch._FRAMEWORK.native_options(options)

    assert native.get("serialization_format") == expected_format


def test_native_options_record_pytorch_default_requirements_when_none_are_given():
    native = mt_pytorch._FRAMEWORK.native_options({"extra_pip_requirements": ["custom-dep==1.0"]})

    names = [requirement.split("==")[0] for requirement in native["pip_requirements"]]
    assert names == ["torch", "cloudpickle", "custom-dep"]


def test_native_options_keep_requirements_when_the_caller_gives_them():
    native = mt_pytorch._FRAMEWORK.native_options({"pip_requirements": ["torch==2.13.0"]})

    assert native["pip_requirements"] == ["torch==2.13.0"]


def test_log_model_skips_requirement_inference_when_logging(logged_mlp):
    _, repository = logged_mlp

    requirements = (repository / "1" / "artifact" / "requirements.txt").read_text().splitlines()
    assert sorted(line.split("==")[0] for line in requirements if line and not line.startswith("mlflow")) == [
        "cloudpickle",
        "torch",
    ]


def test_log_model_forwards_torch_save_options_when_given(tmp_path):
    mt_pytorch.save_model(
        tiny_models.shared_tiny_mlp(),
        tmp_path / "package",
        input_example=tiny_models.mlp_example(),
        code_paths=CODE_PATHS,
        pickle_protocol=4,
    )

    assert (tmp_path / "package" / "data" / "model.pth").is_file()


def test_log_model_rejects_option_when_mlflow_pytorch_does_not_take_it(experiment_id):
    with pytest.raises(InvalidArgumentError, match=r"Unknown option\(s\) not_an_option for mlflow.pytorch"):
        mt_pytorch.log_model(tiny_models.shared_tiny_mlp(), input_example=tiny_models.mlp_example(), not_an_option=1)


# --- in-memory prediction and serving ----------------------------------------------------------


def test_log_model_predicts_example_in_memory_on_the_current_device_when_logging(monkeypatch, tmp_path):
    original = mlflow.pytorch._PyTorchWrapper
    wrapped = []

    def spy(model, device):
        wrapped.append((model, device))
        return original(model, device=device)

    def no_reload(*args, **kwargs):
        raise AssertionError("logging must not reload the saved model")

    monkeypatch.setattr(mlflow.pytorch, "_PyTorchWrapper", spy)
    monkeypatch.setattr(mlflow.pytorch, "load_model", no_reload)
    monkeypatch.setattr(mlflow.pyfunc, "load_model", no_reload)
    model = tiny_models.shared_tiny_mlp()

    mt_pytorch.save_model(model, tmp_path / "package", input_example=tiny_models.mlp_example(), code_paths=CODE_PATHS)

    assert wrapped and all(m is model and device == "cpu" for m, device in wrapped)
    report = json.loads((_repository(tmp_path / "package") / "validation.json").read_text())
    assert (report["mode"], report["validation_device"], report["saved_artifact_checked"]) == (
        "in-memory",
        "cpu",
        False,
    )


def test_generated_model_py_answers_shipped_request_like_the_logged_pyfunc_when_served(logged_mlp):
    info, repository = logged_mlp
    example = tiny_models.mlp_example()

    served = tiny_models.serve_request(repository)

    expected = mlflow.pyfunc.load_model(info.model_uri).predict(example)
    with torch.no_grad():
        in_memory = tiny_models.shared_tiny_mlp()(torch.from_numpy(example)).numpy()
    assert list(served) == ["output_0"]
    np.testing.assert_array_equal(served["output_0"], expected)
    np.testing.assert_allclose(served["output_0"], in_memory, rtol=1e-6)


def test_log_model_raises_when_example_is_a_dict_because_mlflow_pytorch_pyfunc_takes_arrays(experiment_id, tmp_path):
    example = {"x": tiny_models.mlp_example()}

    with pytest.raises(ValidationError, match="does not support List or Dict input types"):
        mt_pytorch.log_model(tiny_models.shared_tiny_mlp(), input_example=example, code_paths=CODE_PATHS)

    _assert_nothing_logged(experiment_id, tmp_path)


# --- signatures: only declared dynamic axes ----------------------------------------------------


def test_log_model_keeps_only_the_first_axis_dynamic_when_the_signature_is_inferred(logged_mlp):
    _, repository = logged_mlp

    config, _ = read_config(repository / "config.pbtxt")

    assert [list(t.dims) for t in config.input] == [[-1, 4]]
    assert [list(t.dims) for t in config.output] == [[-1, 3]]


def test_log_model_keeps_explicit_dynamic_axes_in_config_dims_when_signature_is_given(tmp_path):
    signature = ModelSignature(
        inputs=Schema([TensorSpec(np.dtype("float32"), (-1, -1))]),
        outputs=Schema([TensorSpec(np.dtype("float32"), (-1, -1))]),
    )

    mt_pytorch.save_model(
        tiny_models.shared_tiny_mlp(),
        tmp_path / "package",
        input_example=tiny_models.mlp_example(),
        signature=signature,
        code_paths=CODE_PATHS,
    )

    config, _ = read_config(_repository(tmp_path / "package") / "config.pbtxt")
    assert [list(t.dims) for t in config.input] == [[-1, -1]]
    assert [list(t.dims) for t in config.output] == [[-1, -1]]
    assert Model.load(str(tmp_path / "package" / "MLmodel")).signature == signature


# --- validate_saved_model: a clean interpreter must import the architecture -------------------


def test_validate_saved_model_fails_and_logs_nothing_when_the_architecture_module_is_not_packaged(
    experiment_id, tmp_path
):
    with pytest.raises(ValidationError, match=r"(?s)could not be reloaded.*code_paths.*custom_net"):
        mt_pytorch.log_model(
            tiny_models.shared_tiny_mlp(), input_example=tiny_models.mlp_example(), validate_saved_model=True
        )

    _assert_nothing_logged(experiment_id, tmp_path)


def test_validate_saved_model_checks_the_saved_artifact_when_the_architecture_is_packaged(experiment_id):
    info = mt_pytorch.log_model(
        tiny_models.shared_tiny_mlp(),
        input_example=tiny_models.mlp_example(),
        code_paths=CODE_PATHS,
        validate_saved_model=True,
    )

    report = json.loads((triton.load_model(info.model_uri) / "validation.json").read_text())
    assert (report["mode"], report["saved_artifact_checked"], report["validation_device"]) == (
        "saved-artifact",
        True,
        "cpu",
    )


# --- GPU target ---------------------------------------------------------------------------------


def test_gpu_repository_declares_kind_gpu_and_asks_the_loader_for_the_assigned_cuda_device_when_initialized(
    tmp_path, monkeypatch
):
    mt_pytorch.save_model(
        tiny_models.shared_tiny_mlp(),
        tmp_path / "package",
        input_example=tiny_models.mlp_example(),
        device="gpu",
        code_paths=CODE_PATHS,
    )
    repository = _repository(tmp_path / "package")

    instance, requested_devices = tiny_models.initialized_on_pretend_gpu(repository, monkeypatch, cpu_setting="cpu")

    config, _ = read_config(repository / "config.pbtxt")
    assert [group.kind for group in config.instance_group] == [config.instance_group[0].KIND_GPU]
    assert requested_devices == ["cuda:1"]
    assert instance.device == "cuda:1"
    assert DEVICE_VARIABLE not in os.environ


@pytest.mark.filterwarnings("ignore::mlflow_triton.errors.CustomCodeWarning")  # the class lives in tests/
def test_save_model_leaves_the_example_and_the_shipped_request_unchanged_when_the_module_changes_its_input(tmp_path):
    """#22.3's sibling: torch.from_numpy shares memory, so an in-place forward doubled the caller's array."""

    class InPlace(torch.nn.Module):
        def forward(self, x):
            x.mul_(2.0)
            return x + 0.0

    example = tiny_models.mlp_example()
    before = example.copy()

    mt_pytorch.save_model(InPlace().eval(), tmp_path / "package", input_example=example)

    np.testing.assert_array_equal(example, before)
    body = json.loads((_repository(tmp_path / "package") / "request.json").read_text())
    np.testing.assert_array_equal(np.array(body["inputs"][0]["data"], dtype=np.float32), before.ravel())
