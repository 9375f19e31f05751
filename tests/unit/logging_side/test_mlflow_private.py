"""``mlflow_private``: every use of MLflow's private API, pinned to the installed MLflow.

The package promises ``mlflow>=3.14,<4`` (pyproject) and this test runs in every leg, the MLflow floor included:
each private name still exists and takes the arguments ``mlflow_private`` passes, and no other module of the
logging side reaches into MLflow's private API.
"""

import ast
import importlib
import inspect
import pathlib
import re

import mlflow
import pytest
from packaging.requirements import Requirement
from packaging.version import Version

from mlflow_triton import mlflow_private

ROOT = pathlib.Path(__file__).resolve().parents[3]
# Every part's modules but the door itself and the runtime (vendored into model.py, it cannot import the logging
# side: its private uses are pinned below).
OUTSIDE_THE_DOOR = sorted(
    path
    for folder in ("logging_side", "repository", "command_line", "local_triton", "export", "deploy", "shared_contract")
    for path in (ROOT / folder).glob("*.py")
    if path.name != "mlflow_private.py"
)
# The runtime's private uses: ``_enforce_type`` on an error path only, inside a try that falls back to MLflow's own
# message; ``_parse_json_data``, the parser of MLflow's /invocations, which a streaming model reads its body with
# (``runtime/protocol.py``, ``mlflow_json_parser``).
RUNTIME_CALLED = [
    ("mlflow.models.utils", "_enforce_type", 2, ("required",)),
    ("mlflow.pyfunc.scoring_server", "_parse_json_data", 3, ()),
]
# The text-generation streaming model (``logging_side/_text_stream_model.py``, saved into a package, which cannot
# import the door): the loader contract of MLflow's pyfunc flavor, ``<loader_module>._load_pyfunc(data, config)``,
# on the transformers flavor's loader, and the attributes of the wrapper it returns that the stream reads.
STREAM_MODEL_CALLED = ("mlflow.transformers", "_load_pyfunc", 2, ())
STREAM_MODEL_READ = ("pipeline", "model_config", "predict")

# (module, name, positional arguments passed, keyword arguments passed); None: read, not called.
CALLED = [
    ("mlflow.sklearn", "_SklearnModelWrapper", 1, ()),
    ("mlflow.pytorch", "_PyTorchWrapper", 1, ("device",)),
    ("mlflow.transformers", "_TransformersWrapper", 1, ("flavor_config", "model_config", "prompt_template")),
    ("mlflow.transformers", "_should_add_pyfunc_to_model", 1, ()),
    ("mlflow.transformers", "_validate_llm_inference_task_type", 2, ()),
    ("mlflow.transformers", "_get_engine_type", 1, ()),
    ("mlflow.pyfunc.model", "_FunctionPythonModel", 1, ("signature",)),
    ("mlflow.pyfunc.model", "_PythonModelPyfuncWrapper", 3, ()),
    ("mlflow.utils.model_utils", "_validate_and_get_model_config_from_file", 1, ()),
    ("mlflow.models.utils", "_load_model_code_path", 2, ()),
    ("mlflow.store.artifact.utils.models", "_parse_model_uri", 1, ()),
    (
        "mlflow.tracking.fluent",
        "_create_logged_model",
        0,
        ("name", "source_run_id", "experiment_id", "params", "tags", "flavor"),
    ),
    ("mlflow.models.utils", "_save_example", 3, ()),
    ("mlflow.utils.requirements_utils", "_get_pinned_requirement", 1, ()),
    ("mlflow.utils.requirements_utils", "_get_requires_recursive", 1, ()),
    ("mlflow.utils.requirements_utils", "_normalize_package_name", 1, ()),
    ("mlflow.pyfunc.scoring_server", "_parse_json_data", 3, ()),
    ("mlflow.models.utils", "_enforce_params_schema", 2, ()),
]
READ = [
    ("mlflow.sklearn", "_SklearnModelWrapper"),  # its _SUPPORTED_CUSTOM_PREDICT_FN
    ("mlflow.models.model", "__mlflow_model__"),
    ("mlflow.tracking.fluent", "_last_logged_model_id"),
]


def test_the_installed_mlflow_is_within_the_range_pyproject_promises():
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    # One dependency line per requirement (tomllib needs Python 3.11; the package supports 3.10).
    (line,) = re.findall(r'^\s*"(mlflow[<>=!~,.\d\s]*)",?\s*$', pyproject, re.MULTILINE)
    mlflow_requirement = Requirement(line)

    assert str(mlflow_requirement.specifier) == "<4,>=3.14"
    assert Version(mlflow.__version__) in mlflow_requirement.specifier


@pytest.mark.parametrize(
    ("module", "name", "positional", "keywords"), CALLED, ids=[f"{m}.{n}" for m, n, _, _ in CALLED]
)
def test_each_private_callable_exists_and_takes_the_arguments_passed(module, name, positional, keywords):
    target = getattr(importlib.import_module(module), name)

    inspect.signature(target).bind(*[None] * positional, **dict.fromkeys(keywords))


@pytest.mark.parametrize(("module", "name", "positional", "keywords"), RUNTIME_CALLED)
def test_the_runtimes_private_callable_exists_and_takes_the_arguments_passed(module, name, positional, keywords):
    source = "".join(
        (ROOT / "runtime" / name).read_text(encoding="utf-8") for name in ("triton_model.py", "protocol.py")
    )
    target = getattr(importlib.import_module(module), name)

    assert f"from {module} import {name}" in source
    inspect.signature(target).bind(*[None] * positional, **dict.fromkeys(keywords))


def test_the_text_stream_models_loader_call_and_wrapper_reads_hold():
    module, name, positional, keywords = STREAM_MODEL_CALLED
    source = (ROOT / "logging_side" / "_text_stream_model.py").read_text(encoding="utf-8")
    target = getattr(importlib.import_module(module), name)
    wrapper = mlflow.transformers._TransformersWrapper

    assert f"loader.{name}(data, model_config)" in source and '"loader_module"' in source
    inspect.signature(target).bind(*[None] * positional, **dict.fromkeys(keywords))
    assert all(f"wrapper.{attribute}" in source for attribute in STREAM_MODEL_READ)
    init = inspect.getsource(wrapper.__init__)
    assert callable(wrapper.predict) and "self.pipeline = " in init and "self.model_config = " in init


def test_the_registered_model_meta_file_is_mlflows_name_where_mlflow_has_one():
    import mlflow.store.artifact.models_artifact_repo as repo

    expected = getattr(repo, "REGISTERED_MODEL_META_FILE_NAME", None)  # gone in MLflow 3.18, which writes no such file
    assert mlflow_private.registered_model_meta_file() == expected
    assert expected is not None or Version(mlflow.__version__) >= Version("3.18")


def test_the_private_values_read_exist_with_the_shape_used():
    import mlflow.models.model
    import mlflow.sklearn
    import mlflow.tracking.fluent

    assert set(mlflow.sklearn._SklearnModelWrapper._SUPPORTED_CUSTOM_PREDICT_FN) >= {"predict_proba"}
    assert hasattr(mlflow.models.model, "__mlflow_model__")
    assert callable(mlflow.tracking.fluent._last_logged_model_id.get)


def _private_names_in(tree):
    """``(module, name)`` for each import of a ``_``-prefixed name from an ``mlflow`` module."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "mlflow":
            found.update((node.module, alias.name) for alias in node.names if alias.name.startswith("_"))
        if isinstance(node, ast.Attribute) and node.attr.startswith("_"):
            owner = ast.unparse(node.value)
            if owner in ("mlflow_model", "fluent"):  # modules imported by name in mlflow_private
                found.add(
                    ({"mlflow_model": "mlflow.models.model", "fluent": "mlflow.tracking.fluent"}[owner], node.attr)
                )
    return found


def test_the_pinned_names_are_exactly_those_mlflow_private_uses():
    tree = ast.parse(inspect.getsource(mlflow_private))

    assert _private_names_in(tree) == {(module, name) for module, name, _, _ in CALLED} | set(READ)


def _reaches_into_mlflow(node):
    """An attribute ``_x`` of something MLflow: ``mlflow.a._x``, a module bound to a name (``fluent._x``), or one a
    function returns (``_mlflow_pytorch()._x``)."""
    if not (isinstance(node, ast.Attribute) and node.attr.startswith("_")) or node.attr == "__version__":
        return False
    owner = ast.unparse(node.value)
    return owner == "fluent" or ("mlflow" in owner.lower() and "mlflow_triton" not in owner)


@pytest.mark.parametrize("path", OUTSIDE_THE_DOOR, ids=lambda path: f"{path.parent.name}/{path.name}")
def test_no_other_module_uses_mlflow_private_api(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    imported = [
        f"{node.module}.{alias.name}"
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "mlflow"
        for alias in node.names
        if alias.name.startswith("_") or any(part.startswith("_") for part in node.module.split("."))
    ]
    reached = [ast.unparse(node) for node in ast.walk(tree) if _reaches_into_mlflow(node)]

    assert imported == []
    assert reached == []
