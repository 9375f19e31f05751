"""``mlflow_triton.pyfunc``: custom pyfunc models (PythonModel, models from code, loader_module) with a repository.

Against a real sqlite tracking store; the generated model.py is driven with the fake ``pb_utils``
(the real server: tests/e2e/test_existing_models_triton.py).
"""

import json
import pathlib

import mlflow
import numpy as np
import pandas as pd
import pytest
from mlflow.models import Model

from mlflow_triton import pyfunc
from mlflow_triton.errors import InvalidArgumentError, ValidationError

FRAME = pd.DataFrame({"a": [1.0, 2.0, 3.0], "b": [0.5, -1.0, 4.0]})


class Scaled(mlflow.pyfunc.PythonModel):
    """Multiplies by the factor its artifact holds, read in load_context."""

    def load_context(self, context):
        with open(context.artifacts["factor"]) as handle:
            self.factor = float(handle.read())

    def predict(self, context, model_input, params=None):
        return model_input * self.factor


class Failing(Scaled):
    def predict(self, context, model_input, params=None):
        raise RuntimeError("the model is broken")


@pytest.fixture
def factor_file(tmp_path):
    path = tmp_path / "factor.txt"
    path.write_text("2.5")
    return path


def local_copy(model_uri, tmp_path):
    return pathlib.Path(
        mlflow.artifacts.download_artifacts(artifact_uri=model_uri, dst_path=str(tmp_path / "download"))
    )


def test_log_model_records_python_function_and_triton_flavors_when_model_reads_an_artifact(
    tracking_store, factor_file, tmp_path, read_request
):
    info = pyfunc.log_model(
        Scaled(), input_example=FRAME, artifacts={"factor": str(factor_file)}, registered_model_name="scaled"
    )

    local = local_copy(info.model_uri, tmp_path)
    mlmodel = Model.load(str(local))
    assert set(mlmodel.flavors) == {"python_function", "triton"}
    assert info.registered_model_version == 1
    repository = local / "model_repository" / "model"
    validation = json.loads((repository / "validation.json").read_text())
    assert validation["tensor_mapping"]["validated"] is True
    served = mlflow.pyfunc.load_model(str(repository / "1" / "artifact")).predict(FRAME)
    pd.testing.assert_frame_equal(served, FRAME * 2.5)


def test_log_model_predicts_the_artifact_value_in_memory_when_load_context_reads_it(
    tracking_store, factor_file, tmp_path, drive_model_py
):
    info = pyfunc.log_model(Scaled(), input_example=FRAME, artifacts={"factor": str(factor_file)})

    local = local_copy(info.model_uri, tmp_path)
    outputs = drive_model_py(
        local / "model_repository" / "model", {"a": FRAME["a"].to_numpy(), "b": FRAME["b"].to_numpy()}
    )
    np.testing.assert_array_equal(outputs["a_2"], FRAME["a"].to_numpy() * 2.5)
    np.testing.assert_array_equal(outputs["b_2"], FRAME["b"].to_numpy() * 2.5)


def test_log_model_leaves_nothing_logged_when_predict_fails(tracking_store, factor_file):
    with pytest.raises(ValidationError, match="Prediction of the example failed: RuntimeError: the model is broken"):
        pyfunc.log_model(
            Failing(), input_example=FRAME, artifacts={"factor": str(factor_file)}, registered_model_name="failing"
        )

    tracking_store.assert_nothing_logged()


class Streaming(mlflow.pyfunc.PythonModel):
    def predict(self, context, model_input, params=None):
        yield from model_input["a"]


def test_log_model_refuses_a_predict_that_yields_saying_what_mlflow_serve_does_and_what_to_do(tracking_store):
    # before (#42): "Column #0 of the output schema: AnyType columns are not mapped"
    with pytest.raises(
        ValidationError,
        match=r"^The prediction of the example is a generator \(predict yields its answer instead of returning it\): "
        r"MLflow's scoring server cannot answer it either \(mlflow models serve answers HTTP 500, .*\), and a "
        r"Triton tensor holds whole values; return the whole answer from predict \(a list, an array or a "
        r"DataFrame, e\.g\. list\(\.\.\.\) of the generator\)",
    ):
        pyfunc.log_model(Streaming(), input_example=FRAME, registered_model_name="streaming")

    tracking_store.assert_nothing_logged()


def test_log_model_leaves_nothing_logged_when_load_context_fails(tracking_store, tmp_path):
    with pytest.raises(ValidationError, match="python_model.load_context failed: KeyError: 'factor'"):
        pyfunc.log_model(Scaled(), input_example=FRAME, registered_model_name="no-artifact")

    tracking_store.assert_nothing_logged()


def test_log_model_refuses_an_artifact_path_when_it_does_not_exist(tracking_store, tmp_path):
    with pytest.raises(InvalidArgumentError, match=r"artifacts\['factor'\]: .*missing.txt' does not exist"):
        pyfunc.log_model(Scaled(), input_example=FRAME, artifacts={"factor": str(tmp_path / "missing.txt")})

    tracking_store.assert_nothing_logged()


MODEL_CODE = """\
import mlflow


class Doubled(mlflow.pyfunc.PythonModel):
    def predict(self, context, model_input, params=None):
        return model_input * 2


mlflow.models.set_model(Doubled())
"""


def test_log_model_serves_a_model_from_code_when_python_model_is_a_file(tracking_store, tmp_path, drive_model_py):
    code = tmp_path / "doubled.py"
    code.write_text(MODEL_CODE)

    info = pyfunc.log_model(str(code), input_example=FRAME)

    local = local_copy(info.model_uri, tmp_path)
    assert Model.load(str(local)).flavors["python_function"]["model_code_path"].endswith("doubled.py")
    outputs = drive_model_py(
        local / "model_repository" / "model", {"a": FRAME["a"].to_numpy(), "b": FRAME["b"].to_numpy()}
    )
    np.testing.assert_array_equal(outputs["a_2"], FRAME["a"].to_numpy() * 2)


def test_log_model_refuses_a_model_from_code_when_the_file_sets_no_model(tracking_store, tmp_path):
    code = tmp_path / "empty.py"
    code.write_text("x = 1\n")

    with pytest.raises(InvalidArgumentError, match=r"does not call mlflow.models.set_model\(model\)"):
        pyfunc.log_model(str(code), input_example=FRAME)

    tracking_store.assert_nothing_logged()


LOADER = """\
import pathlib


class _Offset:
    def __init__(self, offset):
        self.offset = offset

    def predict(self, model_input, params=None):
        return model_input + self.offset


def _load_pyfunc(data_path):
    return _Offset(float(pathlib.Path(data_path).read_text()))
"""


def test_save_model_serves_a_loader_module_when_data_path_holds_its_data(tmp_path, monkeypatch, drive_model_py):
    module = tmp_path / "code" / "offset_loader.py"
    module.parent.mkdir()
    module.write_text(LOADER)
    monkeypatch.syspath_prepend(str(module.parent))
    data = tmp_path / "offset.txt"
    data.write_text("10")

    pyfunc.save_model(
        None,
        tmp_path / "saved",
        input_example=FRAME,
        loader_module="offset_loader",
        data_path=str(data),
        code_paths=[str(module)],
    )

    outputs = drive_model_py(
        tmp_path / "saved" / "model_repository" / "saved", {"a": FRAME["a"].to_numpy(), "b": FRAME["b"].to_numpy()}
    )
    np.testing.assert_array_equal(outputs["b_2"], FRAME["b"].to_numpy() + 10)


def test_save_model_refuses_a_loader_module_when_it_cannot_be_imported(tmp_path):
    with pytest.raises(InvalidArgumentError, match="loader_module 'nowhere_to_be_found' cannot be imported here"):
        pyfunc.save_model(None, tmp_path / "saved", input_example=FRAME, loader_module="nowhere_to_be_found")

    assert not (tmp_path / "saved").exists()


def test_save_model_refuses_a_missing_model_when_neither_python_model_nor_loader_module_is_given(tmp_path):
    with pytest.raises(InvalidArgumentError, match="python_model is required"):
        pyfunc.save_model(None, tmp_path / "saved", input_example=FRAME)

    assert list(tmp_path.iterdir()) == []


def test_log_model_refuses_python_model_when_it_is_neither_a_model_a_function_nor_a_path(tracking_store):
    with pytest.raises(InvalidArgumentError, match="python_model must be a mlflow.pyfunc.PythonModel"):
        pyfunc.log_model(42, input_example=FRAME)

    tracking_store.assert_nothing_logged()


class WithParams(mlflow.pyfunc.PythonModel):
    def predict(self, context, model_input, params=None):
        return model_input * (params or {}).get("scale", 1.0)


def test_log_model_ships_the_example_params_when_the_example_carries_them(tracking_store, tmp_path, read_request):
    info = pyfunc.log_model(WithParams(), input_example=(FRAME, {"scale": 3.0}))

    local = local_copy(info.model_uri, tmp_path)
    assert Model.load(str(local)).signature.params.to_dict() == [
        {"name": "scale", "type": "double", "default": 3.0, "shape": None}
    ]
    request = json.loads((local / "model_repository" / "model" / "request.json").read_text())
    assert request["parameters"] == {"scale": 3.0}


def test_log_model_wraps_a_function_when_python_model_is_a_function(tracking_store, tmp_path, drive_model_py):
    def negated(model_input):
        return -model_input

    info = pyfunc.log_model(negated, input_example=FRAME)

    local = local_copy(info.model_uri, tmp_path)
    outputs = drive_model_py(
        local / "model_repository" / "model", {"a": FRAME["a"].to_numpy(), "b": FRAME["b"].to_numpy()}
    )
    np.testing.assert_array_equal(outputs["a_2"], -FRAME["a"].to_numpy())


def test_log_model_model_config_reaches_load_context_when_given(tracking_store, tmp_path, drive_model_py):
    class Configured(mlflow.pyfunc.PythonModel):
        def load_context(self, context):
            self.shift = context.model_config["shift"]

        def predict(self, context, model_input, params=None):
            return model_input + self.shift

    info = pyfunc.log_model(Configured(), input_example=FRAME, model_config={"shift": 7})

    local = local_copy(info.model_uri, tmp_path)
    outputs = drive_model_py(
        local / "model_repository" / "model", {"a": FRAME["a"].to_numpy(), "b": FRAME["b"].to_numpy()}
    )
    np.testing.assert_array_equal(outputs["a_2"], FRAME["a"].to_numpy() + 7)
