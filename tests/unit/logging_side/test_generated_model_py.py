"""The generated 1/model.py: vendored sources checked byte for byte, and standalone serving.

Inside Triton mlflow-triton is not installed, so model.py must import nothing from it; here
that is proved twice: statically (``ast``) and by serving a real model while any import of
``mlflow_triton`` raises.
"""

import ast
import importlib.abc
import json
import pathlib
import sys

import mlflow.sklearn
import numpy as np
import pandas as pd
import pytest
from google.protobuf import json_format
from mlflow.models import infer_signature
from sklearn.linear_model import LinearRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from mlflow_triton._model_py import compose_model_py, vendored_source
from mlflow_triton._schema import layout_from_signature
from mlflow_triton.repository.config import build_config
from mlflow_triton.runtime import RUNTIME_VERSION
from mlflow_triton.runtime.codecs import StructureCodec, tensor_types_from_model_config
from tests.support import fake_pb_utils

ROOT = pathlib.Path(__file__).resolve().parents[3]
CONTRACT = ROOT / "shared_contract" / "contract.py"
RUNTIME_MODULES = ("conversions.py", "codecs.py", "loading.py", "parameters.py", "batching.py", "triton_model.py")
BLOCK_START = "# <mlflow-triton package imports"
BLOCK_END = "# </mlflow-triton package imports>"
# Everything model.py may import: the standard library it uses, numpy, pandas, MLflow and Triton.
ALLOWED_IMPORTS = {
    "contextlib",
    "copy",
    "dataclasses",
    "datetime",
    "json",
    "math",
    "os",
    "pathlib",
    "sys",
    "threading",
    "traceback",
    "numpy",
    "pandas",
    "mlflow",
    "triton_python_backend_utils",
}


@pytest.fixture(scope="module")
def model_py():
    return compose_model_py()


def imports_of(source):
    """``(module, level)`` of every import statement, however deeply nested."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.extend((alias.name, 0) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            found.append((node.module or "", node.level))
    return found


def without_package_imports(text):
    """The source minus its package-imports block, computed independently of the composer."""
    lines = text.splitlines(keepends=True)
    if not any(line.startswith(BLOCK_START) for line in lines):
        return text
    start = next(i for i, line in enumerate(lines) if line.startswith(BLOCK_START))
    end = next(i for i, line in enumerate(lines) if line.startswith(BLOCK_END))
    removed = [line for line in lines[start + 1 : end] if line.strip()]
    # relative imports, one a line or parenthesized over several (names indented, then ")")
    assert removed and all(line.startswith(("from .", "    ", ")")) for line in removed)
    return "".join(lines[:start] + lines[end + 1 :])


def vendored_section(model_py, label):
    """The text model.py carries under ``# ---- <label> ----``, up to the blank line before the next."""
    header_start = model_py.index(f"# ---- {label} -")
    body_start = model_py.index("\n", header_start) + 1
    next_header = model_py.find("\n\n# ---- ", body_start)
    return model_py[body_start:] if next_header == -1 else model_py[body_start:next_header]


def test_model_py_imports_nothing_from_mlflow_triton_when_parsed(model_py):
    imports = imports_of(model_py)

    assert [module for module, level in imports if level > 0] == []
    assert [module for module, _ in imports if module.split(".")[0] == "mlflow_triton"] == []
    assert {module.split(".")[0] for module, _ in imports} <= ALLOWED_IMPORTS


def test_model_py_carries_the_contract_byte_for_byte_when_composed(model_py):
    expected = CONTRACT.read_bytes()

    assert vendored_section(model_py, "shared_contract/contract.py").encode("utf-8") == expected


@pytest.mark.parametrize("module", RUNTIME_MODULES)
def test_model_py_carries_each_runtime_module_minus_its_package_imports_when_composed(model_py, module):
    source = (ROOT / "runtime" / module).read_text(encoding="utf-8")

    assert vendored_section(model_py, f"runtime/{module}") == without_package_imports(source)


def test_model_py_announces_it_is_generated_when_composed(model_py):
    first_line = model_py.splitlines()[0]

    assert "do not edit" in first_line
    assert f"runtime {RUNTIME_VERSION}" in first_line
    # the same model.py reads every mapping version (it was "mapping version 2" for batched and column models too)
    assert "reads mapping versions 1, 2, 3, 4" in first_line


def test_vendored_source_refuses_when_the_package_imports_block_holds_other_code(tmp_path):
    module = tmp_path / "module.py"
    module.write_text(f"{BLOCK_START}: removed>\nimport os\n{BLOCK_END}\n", encoding="utf-8")

    with pytest.raises(RuntimeError, match=r"only relative imports may stand in the package-imports block"):
        vendored_source("runtime/module.py", module)


class RefuseMlflowTriton(importlib.abc.MetaPathFinder):
    """Makes any import of mlflow_triton fail, as it would inside Triton."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname.split(".")[0] == "mlflow_triton":
            raise ImportError(f"{fullname} is not installed inside Triton")
        return None


@pytest.fixture
def without_mlflow_triton(monkeypatch):
    for name in [name for name in sys.modules if name.split(".")[0] == "mlflow_triton"]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setattr(sys, "meta_path", [RefuseMlflowTriton(), *sys.meta_path])


def test_refuse_mlflow_triton_blocks_the_package_when_installed(without_mlflow_triton):
    with pytest.raises(ImportError, match="mlflow_triton is not installed inside Triton"):
        __import__("mlflow_triton.runtime")


@pytest.fixture(scope="module")
def repository(tmp_path_factory, model_py):
    """A model repository holding a tiny real scikit-learn model, its model.py and its JSON config."""
    frame = pd.DataFrame({"x": [0.0, 1.0, 2.0, 3.0], "w": [1, 0, 1, 0]})
    pipeline = make_pipeline(StandardScaler(), LinearRegression()).fit(frame, [1.0, 3.0, 5.0, 7.0])
    signature = infer_signature(frame, pipeline.predict(frame))
    root = tmp_path_factory.mktemp("repository") / "linear"
    mlflow.sklearn.save_model(
        pipeline, root / "1" / "artifact", signature=signature, serialization_format="cloudpickle", pip_requirements=[]
    )
    (root / "1" / "model.py").write_text(model_py, encoding="utf-8")
    layout = layout_from_signature(signature, "sklearn")
    config = json.loads(json_format.MessageToJson(build_config("linear", layout), preserving_proto_field_name=True))
    tensors = StructureCodec(layout.contract.inputs, tensor_types_from_model_config(config, "input")).to_tensors(frame)
    return root, config, tensors, pipeline.predict(frame)


def test_model_py_serves_a_real_model_when_mlflow_triton_cannot_be_imported(repository, without_mlflow_triton):
    root, config, tensors, expected = repository
    module = fake_pb_utils.load_model_py(root / "1" / "model.py", name="standalone_model_py")
    model = module.TritonPythonModel()
    model.initialize(
        {
            "model_config": json.dumps(config),
            "model_repository": str(root),
            "model_version": "1",
            "model_instance_kind": "CPU",
            "model_instance_device_id": "0",
        }
    )

    [response] = model.execute([fake_pb_utils.request_from_arrays(tensors)])

    outputs = fake_pb_utils.outputs_of(response)
    np.testing.assert_allclose(outputs["output_0"], expected)
    assert [name for name in sys.modules if name.split(".")[0] == "mlflow_triton"] == []
    assert module.TritonPythonModel.__module__ == "standalone_model_py"
