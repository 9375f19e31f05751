"""architecture.json: classes, names, shapes and dtypes of the packaged model -- never tensor values."""

import json
import subprocess
import sys

import pytest
import torch  # noqa: E402  (the tests extra installs torch; never skipped)

import mlflow_triton.pytorch as mt_pytorch
from mlflow_triton._architecture import describe_module_tree, packaged_files
from mlflow_triton.errors import InvalidArgumentError
from tests.support import tiny_models


@pytest.fixture(scope="module")
def pytorch_package(tmp_path_factory):
    package = tmp_path_factory.mktemp("architecture") / "network"
    mt_pytorch.save_model(
        tiny_models.shared_tiny_mlp(),
        package,
        input_example=tiny_models.mlp_example(),
        code_paths=[str(tiny_models.CUSTOM_NET_DIR)],
        architecture_init_kwargs=tiny_models.MLP_SIZES,
    )
    return package


@pytest.fixture(scope="module")
def transformers_package(tmp_path_factory):
    import mlflow_triton.transformers as mt_transformers

    package = tmp_path_factory.mktemp("architecture") / "generator"
    mt_transformers.save_model(
        tiny_models.shared_text_generation_pipeline(),
        package,
        input_example=tiny_models.TEXT_EXAMPLE,
        model_config=tiny_models.GENERATION_CONFIG,
        architecture_init_kwargs={"n_layer": 1, "n_embd": 16},
    )
    return package


def _report(package):
    return json.loads((package / "architecture.json").read_text(encoding="utf-8"))


def _numbers(value):
    """Every number anywhere in a JSON value."""
    if isinstance(value, dict):
        return [n for item in value.values() for n in _numbers(item)]
    if isinstance(value, list):
        return [n for item in value for n in _numbers(item)]
    return [value] if isinstance(value, (int, float)) and not isinstance(value, bool) else []


def _formatted_values(module, count=40):
    """Text forms of some of the module's parameter and buffer values, as a leak would print them."""
    values = []
    for tensor in [*module.parameters(), *module.buffers()]:
        if tensor.is_floating_point():
            values.extend(tensor.detach().flatten()[:count].tolist())
    texts = set()
    for value in values:
        if value not in (0.0, 1.0):
            texts.update({repr(value), f"{value:.6f}", f"{value:.4f}", repr(float(torch.tensor(value).half()))})
    return texts


# --- location ---------------------------------------------------------------------------------


@pytest.mark.parametrize("package_fixture", ["pytorch_package", "transformers_package"])
def test_architecture_json_is_in_the_package_root_and_in_the_triton_artifact_copy_when_saved(request, package_fixture):
    package = request.getfixturevalue(package_fixture)

    [repository] = (package / "model_repository").iterdir()

    root_copy = (package / "architecture.json").read_bytes()
    assert (repository / "1" / "artifact" / "architecture.json").read_bytes() == root_copy


def test_architecture_json_is_read_without_the_custom_architecture_when_loaded_in_a_clean_interpreter(
    pytorch_package,
):
    script = (
        "import importlib.util, json, sys\n"
        "report = json.load(open(sys.argv[1]))\n"
        "assert importlib.util.find_spec('custom_net') is None\n"
        "assert 'torch' not in sys.modules\n"
        "print(report['model_class']['module'], report['model_class']['qualname'])\n"
    )

    completed = subprocess.run(
        [sys.executable, "-I", "-c", script, str(pytorch_package / "architecture.json")],
        capture_output=True,
        text=True,
        check=True,
        cwd=pytorch_package,
    )

    assert completed.stdout.split() == ["custom_net.mlp", "TinyMLP"]


# --- PyTorch ------------------------------------------------------------------------------------


def test_pytorch_architecture_records_model_and_module_classes_when_saved(pytorch_package):
    report = _report(pytorch_package)

    assert report["flavor"] == "pytorch"
    assert report["model_class"] == {"module": "custom_net.mlp", "qualname": "TinyMLP"}
    modules = {entry["name"]: (entry["class"]["module"], entry["class"]["qualname"]) for entry in report["modules"]}
    assert modules == {
        "": ("custom_net.mlp", "TinyMLP"),
        "encoder": ("custom_net.mlp", "ScaledBlock"),
        "encoder.linear": ("torch.nn.modules.linear", "Linear"),
        "encoder.activation": ("torch.nn.modules.activation", "ReLU"),
        "encoder.dropout": ("torch.nn.modules.dropout", "Dropout"),
        "head": ("torch.nn.modules.linear", "Linear"),
    }


def test_pytorch_architecture_records_parameter_and_buffer_shapes_and_dtypes_when_saved(pytorch_package):
    report = _report(pytorch_package)

    assert report["parameters"] == [
        {"name": "encoder.linear.weight", "shape": [8, 4], "dtype": "float32"},
        {"name": "encoder.linear.bias", "shape": [8], "dtype": "float32"},
        {"name": "head.weight", "shape": [3, 8], "dtype": "float32"},
        {"name": "head.bias", "shape": [3], "dtype": "float32"},
    ]
    assert report["parameter_count"] == 8 * 4 + 8 + 3 * 8 + 3
    assert report["buffers"] == [{"name": "encoder.scale", "shape": [8], "dtype": "float32", "persistent": True}]


def test_pytorch_architecture_holds_no_tensor_values_when_saved(pytorch_package):
    text = (pytorch_package / "architecture.json").read_text(encoding="utf-8")

    leaked = sorted(value for value in _formatted_values(tiny_models.shared_tiny_mlp()) if value in text)

    assert leaked == []
    assert all(isinstance(number, int) for number in _numbers(json.loads(text)))


def test_pytorch_architecture_lists_packaged_code_configuration_and_data_files_when_saved(pytorch_package):
    files = _report(pytorch_package)["files"]

    assert files["python"] == ["code/custom_net/__init__.py", "code/custom_net/bert.py", "code/custom_net/mlp.py"]
    assert {"data/model.pth", "data/pickle_module_info.txt"} <= set(files["data"])
    assert {"MLmodel", "requirements.txt"} <= set(files["mlflow_package"])
    assert files["configuration"] == []
    assert not any(
        path.startswith("model_repository") or path == "architecture.json" for group in files.values() for path in group
    )


def test_architecture_records_init_kwargs_as_declared_and_unverified_when_given(pytorch_package):
    init_kwargs = _report(pytorch_package)["init_kwargs"]

    assert init_kwargs["declared"] == tiny_models.MLP_SIZES
    assert init_kwargs["verified"] is False
    assert "not verified" in init_kwargs["note"]


def test_architecture_records_no_init_kwargs_when_none_are_declared(tmp_path):
    mt_pytorch.save_model(
        tiny_models.shared_tiny_mlp(),
        tmp_path / "package",
        input_example=tiny_models.mlp_example(),
        code_paths=[str(tiny_models.CUSTOM_NET_DIR)],
    )

    assert _report(tmp_path / "package")["init_kwargs"] is None


@pytest.mark.parametrize(
    ("declared", "message"),
    [
        ({"activation": torch.nn.ReLU}, "architecture_init_kwargs must be JSON-serializable"),
        ({"dropout": float("nan")}, "architecture_init_kwargs must be JSON-serializable"),
        ([4, 8, 3], "architecture_init_kwargs must be a dict of constructor arguments"),
    ],
)
def test_save_model_rejects_init_kwargs_and_writes_nothing_when_they_are_not_a_json_dict(tmp_path, declared, message):
    with pytest.raises(InvalidArgumentError, match=message):
        mt_pytorch.save_model(
            tiny_models.shared_tiny_mlp(),
            tmp_path / "package",
            input_example=tiny_models.mlp_example(),
            architecture_init_kwargs=declared,
        )

    assert list(tmp_path.iterdir()) == []


# --- Transformers -------------------------------------------------------------------------------


def test_transformers_architecture_records_pipeline_components_and_config_path_when_saved(transformers_package):
    report = _report(transformers_package)

    assert report["flavor"] == "transformers"
    assert report["pipeline"] == {
        "class": {"module": "transformers.pipelines.text_generation", "qualname": "TextGenerationPipeline"},
        "task": "text-generation",
    }
    tokenizer = tiny_models.shared_tokenizer()
    assert report["components"] == {
        "model": {
            "class": {"module": "transformers.models.gpt2.modeling_gpt2", "qualname": "GPT2LMHeadModel"},
            "path": "model",
        },
        "tokenizer": {
            "class": {"module": type(tokenizer).__module__, "qualname": type(tokenizer).__qualname__},
            "path": "components/tokenizer",
        },
    }
    assert report["model_config_file"] == "model/config.json"
    assert (transformers_package / report["model_config_file"]).is_file()
    assert report["init_kwargs"]["declared"] == {"n_layer": 1, "n_embd": 16}


def test_transformers_architecture_records_shapes_and_dtypes_without_values_when_saved(transformers_package):
    text = (transformers_package / "architecture.json").read_text(encoding="utf-8")
    report = json.loads(text)
    model = tiny_models.shared_text_generation_pipeline().model

    parameters = {entry["name"]: (entry["shape"], entry["dtype"]) for entry in report["parameters"]}
    assert parameters["transformer.wte.weight"] == ([len(tiny_models.shared_tokenizer()), 16], "float32")
    assert parameters["transformer.h.0.attn.c_attn.weight"] == ([16, 48], "float32")
    assert len(parameters) == len(dict(model.named_parameters()))
    assert {entry["name"] for entry in report["modules"]} == {name for name, _ in model.named_modules()}
    assert sorted(value for value in _formatted_values(model) if value in text) == []
    assert all(isinstance(number, int) for number in _numbers(report))


def test_transformers_architecture_lists_configuration_and_weight_files_when_saved(transformers_package):
    files = _report(transformers_package)["files"]

    assert {"model/config.json", "model/generation_config.json", "components/tokenizer/tokenizer_config.json"} <= set(
        files["configuration"]
    )
    assert "model/model.safetensors" in files["data"]
    assert files["python"] == []


# --- the building blocks ----------------------------------------------------------------------


class _WithExtras(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lazy = torch.nn.LazyLinear(2)
        self.shared = torch.nn.Linear(2, 2, bias=False)
        self.tied = self.shared
        self.register_buffer("steps", torch.zeros((), dtype=torch.int64))
        self.register_buffer("cache", torch.ones(3, dtype=torch.float16), persistent=False)


def test_describe_module_tree_records_lazy_shared_and_non_persistent_tensors_when_described():
    tree = describe_module_tree(_WithExtras())

    assert tree["parameters"] == [
        {"name": "lazy.weight", "shape": None, "dtype": "float32"},
        {"name": "lazy.bias", "shape": None, "dtype": "float32"},
        {"name": "shared.weight", "shape": [2, 2], "dtype": "float32"},
    ]
    assert tree["parameter_count"] == 4
    assert tree["buffers"] == [
        {"name": "steps", "shape": [], "dtype": "int64", "persistent": True},
        {"name": "cache", "shape": [3], "dtype": "float16", "persistent": False},
    ]
    assert [entry["name"] for entry in tree["modules"]] == ["", "lazy", "shared"]


def test_packaged_files_groups_files_by_kind_when_listed(tmp_path):
    for relative in (
        "MLmodel",
        "code/pkg/net.py",
        "model/config.json",
        "components/tokenizer/chat_template.jinja",
        "model/model.safetensors",
        "data/model.pth",
    ):
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relative).write_text("x")

    assert packaged_files(tmp_path) == {
        "python": ["code/pkg/net.py"],
        "configuration": ["components/tokenizer/chat_template.jinja", "model/config.json"],
        "data": ["data/model.pth", "model/model.safetensors"],
        "mlflow_package": ["MLmodel"],
    }
