"""Signatures an independent audit found broken, logged through the real wrappers (issues #17, #18).

Each model is saved with ``save_model`` and, where it logs, its shipped request is answered by the
generated ``1/model.py`` (fake ``triton_python_backend_utils``) and compared with MLflow's own
``pyfunc.predict``. The real-server versions live in tests/e2e/test_runtime_fidelity.py.
"""

import json
import re

import mlflow.pyfunc
import numpy as np
import pandas as pd
import pytest
import torch
from mlflow.models import Model, ModelSignature
from mlflow.types import Schema, TensorSpec
from sklearn.compose import ColumnTransformer
from sklearn.linear_model import LinearRegression, LogisticRegression
from sklearn.pipeline import make_pipeline

from mlflow_triton import pytorch, sklearn
from mlflow_triton.errors import UnsupportedSchemaError
from mlflow_triton.local._compare import output_codec
from mlflow_triton.shared_contract import Contract
from tests.support import tiny_models
from tests.support.shipped_request import arrays_from_binary_request, read_headers_file

pytestmark = pytest.mark.filterwarnings("ignore")


def repository_of(package):
    [repository] = (package / "model_repository").iterdir()
    return repository


def contract_of(repository):
    config = tiny_models.triton_model_config(repository)
    return Contract.from_json(config["parameters"]["mlflow_contract"]["string_value"])


def shipped_arrays(repository):
    if (repository / "request.json").exists():
        return tiny_models.request_arrays(repository)
    headers = read_headers_file(repository / "request.headers")
    return arrays_from_binary_request((repository / "request.bin").read_bytes(), headers)[1]


# -- #17.3: integer column labels ------------------------------------------------------------------


def test_save_model_serves_integer_column_labels_when_sklearn_was_fitted_on_a_default_frame(tmp_path):
    frame = pd.DataFrame(np.arange(24.0).reshape(8, 3) % 5)
    model = LogisticRegression().fit(frame, [0, 1, 0, 1, 1, 0, 1, 0])
    example = frame.iloc[:3]

    sklearn.save_model(model, tmp_path / "package", input_example=example)

    repository = repository_of(tmp_path / "package")
    fields = contract_of(repository).inputs.fields
    assert [(f.name, f.tensor) for f in fields] == [(0, "_0"), (1, "_1"), (2, "_2")]
    served = tiny_models.serve_request(repository)
    expected = mlflow.pyfunc.load_model(str(tmp_path / "package")).predict(example)
    np.testing.assert_array_equal(served["output_0"], expected)


def test_save_model_serves_a_frame_prediction_with_integer_labels_when_a_pytorch_module_gets_a_frame(tmp_path):
    example = pd.DataFrame(tiny_models.mlp_example(3))

    pytorch.save_model(
        tiny_models.shared_tiny_mlp(),
        tmp_path / "package",
        input_example=example,
        code_paths=[str(tiny_models.CUSTOM_NET_DIR)],
    )

    repository = repository_of(tmp_path / "package")
    contract = contract_of(repository)
    assert [f.name for f in contract.inputs.fields] == [0, 1, 2, 3]
    assert [(f.name, f.tensor) for f in contract.outputs.fields] == [(0, "_0_2"), (1, "_1_2"), (2, "_2_2")]
    served = tiny_models.serve_request(repository)
    expected = mlflow.pyfunc.load_model(str(tmp_path / "package")).predict(example)
    assert list(expected.columns) == [0, 1, 2]
    for field in contract.outputs.fields:
        np.testing.assert_array_equal(served[field.tensor], expected[field.name].to_numpy())


# -- #17.4: errors naming the field MLflow's inference gave up on ----------------------------------


@pytest.mark.parametrize(
    "odd_column", [pd.to_timedelta([1, 2, 3, 4], unit="s"), [1 + 2j, 3j, 1j, 2 + 0j]], ids=["timedelta", "complex"]
)
def test_save_model_names_the_column_without_an_mlflow_type_when_the_example_frame_holds_one(tmp_path, odd_column):
    frame = pd.DataFrame({"a": [1.0, 2.0, 3.0, 4.0], "odd": odd_column})
    dtype = frame["odd"].dtype
    keep_a = ColumnTransformer([("keep", "passthrough", ["a"])])
    model = make_pipeline(keep_a, LinearRegression()).fit(frame, [1.0, 2.0, 3.0, 4.0])

    with pytest.raises(
        UnsupportedSchemaError,
        match=re.escape(
            f"Column `odd` of the input schema: the input example holds {dtype} values, which have no "
            "MLflow column type"
        ),
    ):
        sklearn.save_model(model, tmp_path / "package", input_example=frame.iloc[:2], protocol="tensors")

    assert not (tmp_path / "package").exists()


class SumToScalar(torch.nn.Module):
    def forward(self, x):
        return x.sum()


def test_save_model_maps_a_scalar_prediction_as_one_element_that_decodes_to_the_0d_array(tmp_path):
    example = tiny_models.mlp_example()
    pytorch.save_model(SumToScalar().eval(), tmp_path / "package", input_example=example)

    repository = repository_of(tmp_path / "package")
    contract = contract_of(repository)
    assert contract.version == 5 and contract.outputs.fields[0].scalar
    config = tiny_models.triton_model_config(repository)
    assert [(o["data_type"], o["dims"]) for o in config["output"]] == [("TYPE_FP32", ["1"])]
    codec = output_codec(repository)
    expected = mlflow.pyfunc.load_model(str(tmp_path / "package")).predict(example)
    assert expected.shape == ()
    decoded = codec.from_tensors(codec.to_tensors(expected))
    assert decoded.shape == () and decoded.dtype == expected.dtype and decoded == expected
    assert json.loads((repository / "validation.json").read_text())["tensor_mapping"]["outputs"] == {"output_0": [1]}


# -- #18.1: a single named tensor with an ndarray example (the README's explicit signature) ----------


def test_save_model_serves_a_single_named_input_tensor_when_the_example_is_an_ndarray(tmp_path):
    embed = torch.nn.Embedding(100, 8).eval()
    signature = ModelSignature(
        inputs=Schema([TensorSpec(np.dtype("int64"), (-1, -1), "input_ids")]),
        outputs=Schema([TensorSpec(np.dtype("float32"), (-1, -1, 8))]),
    )
    example = np.array([[1, 2, 3]])

    pytorch.save_model(embed, tmp_path / "package", input_example=example, signature=signature)

    repository = repository_of(tmp_path / "package")
    inputs = contract_of(repository).inputs
    assert (inputs.structure, [(f.name, f.tensor) for f in inputs.fields]) == ("tensor", [("input_ids", "input_ids")])
    body = json.loads((repository / "request.json").read_text())
    assert [(i["name"], i["shape"]) for i in body["inputs"]] == [("input_ids", [1, 3])]
    recorded = Model.load(str(tmp_path / "package" / "MLmodel")).signature
    assert recorded.inputs == Schema([TensorSpec(np.dtype("int64"), (-1, -1))])
    assert recorded.outputs == signature.outputs
    expected = mlflow.pyfunc.load_model(str(tmp_path / "package")).predict(example)
    np.testing.assert_array_equal(tiny_models.serve_request(repository)["output_0"], expected)


def test_log_model_logs_the_readme_explicit_signature_snippet_when_run_as_written(tracking_store):
    embedder = torch.nn.Embedding(100, 8).eval()
    signature = ModelSignature(
        inputs=Schema([TensorSpec(np.dtype("int64"), (-1, -1), "input_ids")]),
        outputs=Schema([TensorSpec(np.dtype("float32"), (-1, -1, 8))]),
    )

    info = pytorch.log_model(embedder, input_example=np.array([[1, 2, 3]]), signature=signature, name="embedder")

    prediction = mlflow.pyfunc.load_model(info.model_uri).predict(np.array([[4, 5], [6, 7]]))
    assert prediction.shape == (2, 2, 8) and prediction.dtype == np.float32


# -- #18.4: an empty column name ----------------------------------------------------------------------


def test_save_model_rejects_an_empty_column_name_before_writing_when_the_example_has_one(tmp_path):
    frame = pd.DataFrame({"": [1.0, 2.0, 3.0, 4.0]})
    model = LinearRegression().fit(frame, [1.0, 2.0, 3.0, 4.0])

    with pytest.raises(UnsupportedSchemaError, match=re.escape("Column '' of the input schema: an empty name")):
        sklearn.save_model(model, tmp_path / "package", input_example=frame.iloc[:2], protocol="tensors")

    assert not (tmp_path / "package").exists()


# -- #17.2: FP16 inputs ship in the binary tensor extension ----------------------------------------------


def test_save_model_ships_a_binary_request_that_model_py_answers_when_the_module_is_half_precision(tmp_path):
    module = torch.nn.Sequential(torch.nn.Linear(4, 3)).eval().half()
    example = tiny_models.mlp_example().astype(np.float16)

    pytorch.save_model(module, tmp_path / "package", input_example=example)

    repository = repository_of(tmp_path / "package")
    assert not (repository / "request.json").exists()
    headers = read_headers_file(repository / "request.headers")
    prefix, arrays = arrays_from_binary_request((repository / "request.bin").read_bytes(), headers)
    assert [(i["name"], i["datatype"]) for i in prefix["inputs"]] == [("input_0", "FP16")]
    np.testing.assert_array_equal(arrays["input_0"], example)
    served = tiny_models.serve_request(repository, shipped_arrays(repository))
    expected = mlflow.pyfunc.load_model(str(tmp_path / "package")).predict(example)
    assert served["output_0"].dtype == np.float16
    np.testing.assert_array_equal(served["output_0"], expected)


def test_save_model_ships_a_binary_request_when_only_the_output_is_half_precision(tmp_path):
    module = tiny_models.scripted_half_output()

    pytorch.save_model(module, tmp_path / "package", input_example=tiny_models.mlp_example(), validate_saved_model=True)

    repository = repository_of(tmp_path / "package")
    assert sorted(p.name for p in repository.glob("request.*")) == ["request.bin", "request.headers"]
    headers = read_headers_file(repository / "request.headers")
    prefix, _ = arrays_from_binary_request((repository / "request.bin").read_bytes(), headers)
    assert prefix["inputs"][0]["datatype"] == "FP32"
    assert prefix["outputs"] == [{"name": "output_0", "parameters": {"binary_data": True}}]
