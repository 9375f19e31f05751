"""Optional output columns: a prediction frame with missing values is answered with ``<tensor>__missing`` masks.

The mirror of the input convention (docs/repository.md): the column's tensor carries a placeholder in a missing row
and a BOOL mask marks it, so the answer is exact over JSON, which has no NaN; decoding restores NaN / ``None``.
"""

import json

import mlflow.pyfunc
import numpy as np
import pandas as pd
import pytest
from mlflow.models import Model

from mlflow_triton import sklearn
from mlflow_triton.errors import UnsupportedSchemaError
from mlflow_triton.repository.config import declarations, read_config
from mlflow_triton.runtime.codecs import StructureCodec
from tests.support.column_models import identity_model
from tests.support.oracle import expected_tensors

EXAMPLE = pd.DataFrame(
    {
        "size": [1.5, np.nan, 3.25],
        "city": ["Oslo", None, "Pune"],
        "ok": [True, None, False],
    }
)


@pytest.fixture(scope="module")
def logged(tmp_path_factory):
    path = tmp_path_factory.mktemp("optional-outputs") / "identity"
    sklearn.save_model(identity_model(), path, input_example=EXAMPLE, serialization_format="cloudpickle")
    return path, path / "model_repository" / "identity"


def test_save_model_maps_each_optional_output_column_with_a_missing_value_mask(logged):
    _, repository = logged

    config, contract = read_config(repository / "config.pbtxt")

    assert [(f.name, f.tensor, f.missing) for f in contract.outputs.fields] == [
        ("size", "size_2", "size_2__missing"),
        ("city", "city_2", "city_2__missing"),
        ("ok", "ok_2", "ok_2__missing"),
    ]
    _, outputs = declarations(config)
    assert [(d.name, d.data_type) for d in outputs] == [
        ("size_2", "TYPE_FP64"),
        ("city_2", "TYPE_STRING"),
        ("ok_2", "TYPE_BOOL"),
        ("size_2__missing", "TYPE_BOOL"),
        ("city_2__missing", "TYPE_BOOL"),
        ("ok_2__missing", "TYPE_BOOL"),
    ]
    assert contract.version == 4
    assert Model.load(str(repository.parents[1])).signature.outputs.inputs[0].required is False


def test_generated_model_py_answers_masks_and_placeholders_like_the_oracle(logged, drive_model_py, read_request):
    path, repository = logged
    _, arrays = read_request(repository)

    answered = drive_model_py(repository, arrays)

    expected = expected_tensors(repository, mlflow.pyfunc.load_model(str(path)).predict(EXAMPLE))
    assert sorted(answered) == sorted(expected)
    for name, array in expected.items():
        assert answered[name].tolist() == array.tolist(), name
    assert answered["size_2__missing"].tolist() == [False, True, False]
    assert answered["city_2"].tolist() == [b"Oslo", b"", b"Pune"]


def test_the_answer_decodes_to_the_prediction_with_its_missing_values(logged, drive_model_py, read_request):
    path, repository = logged
    config, contract = read_config(repository / "config.pbtxt")
    _, outputs = declarations(config)
    codec = StructureCodec(contract.outputs, {d.name: (d.data_type, d.dims) for d in outputs})

    decoded = codec.from_tensors(drive_model_py(repository, read_request(repository)[1]))

    prediction = mlflow.pyfunc.load_model(str(path)).predict(EXAMPLE)
    pd.testing.assert_frame_equal(decoded, prediction, check_dtype=False)
    assert decoded.isna().to_numpy().tolist() == [[False] * 3, [True] * 3, [False] * 3]


def test_validation_json_records_the_output_masks_in_its_outputs(logged):
    _, repository = logged

    report = json.loads((repository / "validation.json").read_text(encoding="utf-8"))

    assert {"size_2__missing", "city_2__missing", "ok_2__missing"} <= set(report["tensor_mapping"]["outputs"])


def test_save_model_refuses_an_optional_integer_output_column_naming_it(tmp_path):
    class Counts:
        def predict(self, X):
            return pd.DataFrame({"count": pd.array([1, None, 3], dtype="Int64")})

    from sklearn.base import BaseEstimator

    class Model(BaseEstimator, Counts):
        def fit(self, X, y=None):
            return self

    with pytest.raises(UnsupportedSchemaError, match="Column `count` of the output schema: an optional long output"):
        sklearn.save_model(
            Model(),
            tmp_path / "m",
            input_example=EXAMPLE[["size"]],
            serialization_format="cloudpickle",
            protocol="tensors",
        )

    assert list(tmp_path.iterdir()) == []
