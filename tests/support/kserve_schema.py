"""Validate an ``InferenceService`` manifest against KServe's published Python SDK models (``kserve==0.21.0``).

No PyPI package ships KServe's CRD YAML (``serving.kserve.io_inferenceservices.yaml``): the ``kserve`` wheel
ships the SDK models generated from the same OpenAPI schema (``kserve.models.V1beta1InferenceService``,
``V1beta1PredictorSpec``, ``V1beta1TritonSpec``, … with ``openapi_types`` and ``attribute_map``) and relies on
the ``kubernetes`` client's models for Kubernetes types (``V1ObjectMeta``, ``V1ResourceRequirements``).

``kserve`` 0.21 pins ``pandas<3``, so it is installed without its dependencies (``pip install --no-deps
kserve==0.21.0``, see the Makefile) and only its ``models`` and ``configuration`` modules are loaded here (its
``__init__`` would import the model server).

What the validation covers: every key at every level is a field of that KServe / Kubernetes type (an unknown
or misspelt field fails, as a structural CRD schema would prune or reject it); every value has the field's type
(string, integer, boolean, list, map, nested object); the fields the generated models mark required are present;
``apiVersion`` and ``kind`` are KServe's. What it does not cover: the CRD's ``x-kubernetes-*`` extensions, value
patterns and enums that the generator did not carry into the SDK (for example Kubernetes quantity syntax), and
KServe's admission webhooks (which check, for example, that exactly one predictor framework is set).
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types

KSERVE_VERSION = "0.21.0"
_SCALARS = {"str": str, "bool": bool, "float": (int, float), "int": int, "datetime": str, "date": str}
_CLASSES: dict[str, type] = {}


class ManifestInvalid(AssertionError):
    """The manifest does not fit KServe's models; the message names the field path."""


def validate_inference_service(manifest: dict) -> None:
    """Raise :class:`ManifestInvalid` naming the first field that does not fit ``V1beta1InferenceService``."""
    if manifest.get("apiVersion") != "serving.kserve.io/v1beta1" or manifest.get("kind") != "InferenceService":
        raise ManifestInvalid(
            f"apiVersion/kind: expected serving.kserve.io/v1beta1 InferenceService, got "
            f"{manifest.get('apiVersion')!r} {manifest.get('kind')!r}"
        )
    _check(manifest, "V1beta1InferenceService", "")


def _check(value, type_name: str, path: str) -> None:
    if type_name.startswith("List[") or type_name.startswith("Dict["):  # the kubernetes client's spelling
        type_name = f"list[{type_name[5:-1]}]" if type_name[0] == "L" else f"dict({type_name[5:-1]})"
    if type_name.startswith("list[") and type_name.endswith("]"):
        if not isinstance(value, list):
            raise ManifestInvalid(f"{path}: expected a list ({type_name}), got {type(value).__name__}")
        for index, item in enumerate(value):
            _check(item, type_name[5:-1], f"{path}[{index}]")
        return
    if type_name.startswith("dict(") and type_name.endswith(")"):
        if not isinstance(value, dict):
            raise ManifestInvalid(f"{path}: expected a map ({type_name}), got {type(value).__name__}")
        value_type = type_name[5:-1].split(",", 1)[1].strip()
        for key, item in value.items():
            if not isinstance(key, str):
                raise ManifestInvalid(f"{path}: map key {key!r} is not a string")
            _check(item, value_type, f"{path}.{key}")
        return
    if type_name == "object":
        return
    if type_name in _SCALARS:
        if not isinstance(value, _SCALARS[type_name]) or (type_name != "bool" and isinstance(value, bool)):
            raise ManifestInvalid(f"{path}: expected {type_name}, got {type(value).__name__} {value!r}")
        return
    cls = _model_class(type_name)
    if not isinstance(value, dict):
        raise ManifestInvalid(f"{path}: expected a {type_name} object, got {type(value).__name__}")
    fields = {json_name: attribute for attribute, json_name in cls.attribute_map.items()}
    unknown = sorted(set(value) - set(fields))
    if unknown:
        raise ManifestInvalid(
            f"{path or '<root>'}: {unknown[0]!r} is not a field of {type_name} (fields: {', '.join(sorted(fields))})"
        )
    for json_name, item in value.items():
        _check(item, cls.openapi_types[fields[json_name]], f"{path}.{json_name}" if path else json_name)
    try:  # the generated setters reject a missing required field and values outside declared enums
        cls(**{fields[json_name]: item for json_name, item in value.items()})
    except ValueError as error:
        raise ManifestInvalid(f"{path or '<root>'} ({type_name}): {error}") from None


def _model_class(name: str) -> type:
    if not _CLASSES:
        _CLASSES.update(_kserve_models())
    if name not in _CLASSES:
        import kubernetes.client

        found = getattr(kubernetes.client, name, None)
        if not isinstance(found, type):
            raise ManifestInvalid(f"no KServe or Kubernetes model named {name}")
        _CLASSES[name] = found
    return _CLASSES[name]


def _kserve_models() -> dict[str, type]:
    """``kserve.models``' classes, imported without running ``kserve/__init__.py``."""
    spec = importlib.util.find_spec("kserve")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(
            f"kserve=={KSERVE_VERSION} is not installed: pip install --no-deps kserve=={KSERVE_VERSION}"
        )
    saved = {name: module for name, module in sys.modules.items() if name == "kserve" or name.startswith("kserve.")}
    package = types.ModuleType("kserve")
    package.__path__ = list(spec.submodule_search_locations)
    sys.modules["kserve"] = package
    try:
        models = importlib.import_module("kserve.models")
        return {n: c for n, c in vars(models).items() if isinstance(c, type) and n.startswith("V1")}
    finally:
        for name in [n for n in sys.modules if n == "kserve" or n.startswith("kserve.")]:
            del sys.modules[name]
        sys.modules.update(saved)
