"""``architecture.json``: what a PyTorch or Transformers package is made of, without its weights.

The report is plain JSON, readable with ``json.load`` alone: no custom model
code is imported and no weights are loaded to read it. It records

* the model class (module and qualified name) and the class of every module
  in ``named_modules()``;
* every parameter and buffer by name with its shape and dtype -- never a
  tensor value;
* the relative paths of the package's files: Python files (``code_paths``
  copies under ``code/``), configuration files (``*.json``, ``*.jinja``,
  ``*.yaml``... below the package root, e.g. ``model/config.json``), other data
  below the root (weights, vocabularies) and MLflow's own root-level files;
* for Transformers, the pipeline class and task, the component classes
  (model, tokenizer, processor, ...) with their saved directories, and the
  path of the saved ``config.json``;
* ``architecture_init_kwargs`` exactly as the caller declared them. They are
  documentation, not verified against the model.

It describes structure only: module classes cannot express arbitrary
``forward()`` logic or preprocessing, and it is no reconstruction recipe.
"""

import pathlib
from typing import Any

from mlflow.models import Model

FORMAT_VERSION = 1
CONFIGURATION_SUFFIXES = (".json", ".jinja", ".yaml", ".yml", ".toml", ".cfg", ".ini")
INIT_KWARGS_NOTE = (
    "Declared by the caller with architecture_init_kwargs; recorded as given and not verified against the model."
)
SCOPE_NOTE = (
    "Structure only: module classes and tensor shapes/dtypes, no tensor values. It does not "
    "describe forward() logic or preprocessing and is not a reconstruction recipe."
)


def with_init_kwargs(options: dict[str, Any], declared: dict[str, Any] | None) -> dict[str, Any]:
    """The wrapper's options plus ``architecture_init_kwargs`` when declared (checked by the flow)."""
    if declared is None:
        return options
    return {**options, "architecture_init_kwargs": declared}


def describe_pytorch(model: Any, package_path: Any, declared_init_kwargs: Any) -> dict[str, Any]:
    """The architecture.json content for a ``torch.nn.Module`` saved at ``package_path``."""
    return {
        "format_version": FORMAT_VERSION,
        "flavor": "pytorch",
        "model_class": class_reference(type(model)),
        **describe_module_tree(model),
        "files": packaged_files(package_path),
        "init_kwargs": _init_kwargs(declared_init_kwargs),
        "note": SCOPE_NOTE,
    }


def describe_transformers(pipeline: Any, package_path: Any, declared_init_kwargs: Any) -> dict[str, Any]:
    """The architecture.json content for a Transformers pipeline saved at ``package_path``.

    Component classes come from the pipeline; a ``processor`` passed to
    ``save_model`` separately is known by the class name MLflow recorded.
    """
    package_path = pathlib.Path(package_path)
    flavor = Model.load(str(package_path / "MLmodel")).flavors.get("transformers", {})
    model = pipeline.model
    model_directory = flavor.get("model_binary")
    components = {"model": _component(class_reference(type(model)), model_directory, package_path)}
    for name in flavor.get("components") or ():
        component = getattr(pipeline, name, None)
        if component is not None:
            components[name] = _component(class_reference(type(component)), f"components/{name}", package_path)
    if flavor.get("processor_type"):
        components["processor"] = _component(
            _transformers_class_reference(flavor["processor_type"]), "components/processor", package_path
        )
    config_file = f"{model_directory}/config.json" if model_directory else None
    report = {
        "format_version": FORMAT_VERSION,
        "flavor": "transformers",
        "pipeline": {"class": class_reference(type(pipeline)), "task": getattr(pipeline, "task", None)},
        "components": components,
        "model_config_file": config_file if config_file and (package_path / config_file).is_file() else None,
        "model_class": class_reference(type(model)),
    }
    if hasattr(model, "named_modules"):
        report.update(describe_module_tree(model))
    report.update(
        {
            "files": packaged_files(package_path),
            "init_kwargs": _init_kwargs(declared_init_kwargs),
            "note": SCOPE_NOTE,
        }
    )
    return report


def class_reference(cls):
    """``{"module": ..., "qualname": ...}``: enough to find a class without importing it."""
    return {"module": cls.__module__, "qualname": cls.__qualname__}


def describe_module_tree(model):
    """Module classes, parameters and buffers of a ``torch.nn.Module``: names, shapes, dtypes."""
    modules = [{"name": name, "class": class_reference(type(module))} for name, module in model.named_modules()]
    parameters = [_tensor_entry(name, tensor) for name, tensor in model.named_parameters()]
    buffers = []
    for name, tensor in model.named_buffers():
        owner_name, _, leaf = name.rpartition(".")
        owner = model.get_submodule(owner_name) if owner_name else model
        persistent = leaf not in getattr(owner, "_non_persistent_buffers_set", ())
        buffers.append({**_tensor_entry(name, tensor), "persistent": persistent})
    return {
        "modules": modules,
        "parameters": parameters,
        "parameter_count": sum(_element_count(tensor) for _, tensor in model.named_parameters()),
        "buffers": buffers,
    }


def packaged_files(package_path):
    """Relative paths (POSIX) of the package's files, grouped by what they are."""
    root = pathlib.Path(package_path)
    groups = {"python": [], "configuration": [], "data": [], "mlflow_package": []}
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        relative = path.relative_to(root)
        if len(relative.parts) == 1:
            group = "python" if path.suffix == ".py" else "mlflow_package"
        elif path.suffix == ".py":
            group = "python"
        elif path.suffix.lower() in CONFIGURATION_SUFFIXES:
            group = "configuration"
        else:
            group = "data"
        groups[group].append(relative.as_posix())
    return groups


def _component(reference, saved_directory, package_path):
    """A component's class and its saved directory (``None`` when nothing was saved there)."""
    saved = saved_directory is not None and (package_path / saved_directory).is_dir()
    return {"class": reference, "path": saved_directory if saved else None}


def _transformers_class_reference(class_name):
    """The reference of a class MLflow recorded by name only (looked up in ``transformers``)."""
    import transformers

    cls = getattr(transformers, class_name, None)
    return class_reference(cls) if isinstance(cls, type) else {"module": None, "qualname": class_name}


def _tensor_entry(name, tensor):
    """Name, shape and dtype of a tensor: its metadata only, never its values."""
    try:
        shape = [int(size) for size in tensor.shape]
    except (RuntimeError, ValueError):  # an uninitialized (lazy) parameter has no shape yet
        shape = None
    return {"name": name, "shape": shape, "dtype": str(tensor.dtype).removeprefix("torch.")}


def _element_count(tensor):
    try:
        return int(tensor.numel())
    except (RuntimeError, ValueError):
        return 0


def _init_kwargs(declared):
    if declared is None:
        return None
    return {"declared": declared, "verified": False, "note": INIT_KWARGS_NOTE}
