"""Request parameters: a Triton request's ``parameters`` become ``pyfunc.predict(data, params=...)``.

Issue #22.1: a request carrying ``"parameters": {"scale": 2.0}`` was answered with the params
schema's default. Now the parameters reach ``predict`` after MLflow's own type and shape check;
an unknown or ill-typed parameter, or any parameter sent to a model without a params schema, is
the client's error (INVALID_ARG, HTTP 400) naming the parameter and the accepted ones.
"""

import json

import mlflow
import numpy as np
import pytest
from mlflow.models import Model, infer_signature
from mlflow.types.schema import ParamSchema, ParamSpec

import mlflow_triton.pytorch as mt_pytorch
from mlflow_triton.errors import InvalidArgumentError
from mlflow_triton.runtime.errors import RequestError as ParameterError
from mlflow_triton.runtime.parameters import request_params
from tests.support import fake_pb_utils, tiny_models
from tests.support.shipped_request import arrays_from_binary_request, read_headers_file

SCALE = ParamSchema([ParamSpec("scale", "double", 1.0)])
LISTS = ParamSchema([ParamSpec("stop", "string", ["."], (-1,)), ParamSpec("top_k", "long", 5)])
INVALID_ARG = fake_pb_utils.TritonError.INVALID_ARG


# -- request_params: the text request.parameters() returns -> predict's params --------------------


@pytest.mark.parametrize("raw", [None, "", "{}"])
def test_request_params_returns_none_when_the_request_carries_no_parameters(raw):
    assert request_params(raw, SCALE) is None
    assert request_params(raw, None) is None


def test_request_params_converts_an_integer_to_a_double_when_the_schema_declares_a_double():
    params = request_params('{"scale":2}', SCALE)

    assert params == {"scale": 2.0}
    assert type(params["scale"]) is float


def test_request_params_decodes_json_text_when_the_parameter_is_a_list():
    assert request_params(json.dumps({"stop": '["x", "y"]', "top_k": 3}), LISTS) == {"stop": ["x", "y"], "top_k": 3}


def test_request_params_refuses_naming_the_parameter_and_the_accepted_ones_when_a_parameter_is_unknown():
    with pytest.raises(
        ParameterError,
        match=r"^Request parameter\(s\) `temperature` not accepted by this model; "
        r"accepted: scale \(a double, default 1\.0\)$",
    ):
        request_params('{"scale":2.0,"temperature":0.5}', SCALE)


def test_request_params_refuses_without_quoting_the_value_when_a_value_has_another_type():
    with pytest.raises(
        ParameterError,
        match=r"^Request parameter `scale` must be a double, got a str; "
        r"accepted: scale \(a double, default 1\.0\)$",
    ):
        request_params('{"scale":"SECRET-abc"}', SCALE)


def test_request_params_refuses_when_a_list_parameter_is_not_json_text():
    with pytest.raises(
        ParameterError,
        match=r"^Request parameter `stop` must be a list of string values, sent as "
        r"JSON text .*not valid JSON$",
    ):
        request_params('{"stop":"[unclosed"}', LISTS)


def test_request_params_refuses_when_a_list_parameter_is_a_scalar():
    with pytest.raises(
        ParameterError,
        match=r"^Request parameter `stop` must be a list of string values, got a "
        r"str; ",
    ):
        request_params('{"stop":"\\"x\\""}', LISTS)


def test_request_params_refuses_naming_every_parameter_when_the_model_has_no_params_schema():
    with pytest.raises(
        ParameterError,
        match=r"^Request parameter\(s\) `a`, `scale`: this model takes no parameters "
        r"\(its MLflow signature has no params schema\)",
    ):
        request_params('{"scale":2.0,"a":1}', None)


def test_request_params_refuses_when_the_parameters_are_not_a_json_object():
    with pytest.raises(ParameterError, match=r"^The request's parameters are not a JSON object$"):
        request_params("[1]", SCALE)


# -- #31.2 / #31.5: what Triton changes on the way, and the lossless `mlflow_params` channel ----------

GATE = ParamSchema(
    [ParamSpec("threshold", "double", 0.5), ParamSpec("tag", "string", ""), ParamSpec("count", "long", 1)]
)


def test_request_params_refuses_naming_the_key_when_triton_passes_a_parameter_twice():
    """Triton 2.51 passes `{"a": 1, "a": 2}` as `{"a":1,"a":1}`: MLflow's scoring server would apply 2."""
    with pytest.raises(
        ParameterError,
        match=r"^Request parameter\(s\) `threshold` given more than once; Triton passes the first value where "
        r"MLflow's scoring server keeps the last: send each parameter once$",
    ):
        request_params('{"threshold":0.25,"threshold":0.25}', GATE)


@pytest.mark.parametrize("passed", ["9223372036854776000.0", "-9223372036854776000.0", "1.8446744073709552e19"])
def test_request_params_refuses_saying_the_number_is_beyond_int64_when_a_long_arrives_as_a_double_past_its_range(
    passed,
):
    """What Triton's HTTP front end makes of 2**63, -2**63 - 1 and 2**64 sent for a `long`."""
    with pytest.raises(
        ParameterError,
        match=r"^Request parameter `count` must be a long, got a number beyond the int64 range "
        r"-9223372036854775808\.\.9223372036854775807 \(Triton's HTTP front end passes an integer beyond it as a "
        r"double\); accepted: count ",
    ):
        request_params(f'{{"count":{passed}}}', GATE)


def test_request_params_says_a_float_when_a_long_gets_a_fraction():
    with pytest.raises(ParameterError, match=r"^Request parameter `count` must be a long, got a float; "):
        request_params('{"count":1.5}', GATE)


@pytest.mark.parametrize(("dtype", "default", "expected"), [("integer", 1, "an integer"), ("long", 1, "a long")])
def test_request_params_names_the_expected_type_with_its_article(dtype, default, expected):
    schema = ParamSchema([ParamSpec("k", dtype, default)])

    with pytest.raises(
        ParameterError, match=rf"^Request parameter `k` must be {expected}, got a str; accepted: k \({expected},"
    ):
        request_params('{"k":"2"}', schema)


def test_request_params_names_the_u0000_cut_when_the_json_text_of_a_list_parameter_ends_early():
    """`"stop": "[\\"a\\u0000b\\"]"` reaches the model as `["a`: Triton cut the string at U+0000."""
    with pytest.raises(
        ParameterError,
        match=r"^Request parameter `stop` must be a list of string values, sent as JSON text .*; the text is not "
        r"valid JSON: it ends before its JSON value does \(Triton cuts a string parameter at its first U\+0000 "
        r"character, .* or send all parameters as JSON text in the `mlflow_params` parameter\)$",
    ):
        request_params(json.dumps({"stop": '["a'}), LISTS)


def test_request_params_reads_every_value_exactly_when_the_params_travel_as_json_text_in_mlflow_params():
    sent = {"threshold": 5 / 11, "tag": "ab\x00cd", "count": 3}

    params = request_params(json.dumps({"mlflow_params": json.dumps(sent)}), GATE)

    assert params == sent and repr(params["threshold"]) == repr(5 / 11)


def test_request_params_takes_lists_as_json_values_when_they_travel_in_mlflow_params():
    raw = json.dumps({"mlflow_params": json.dumps({"stop": ["a\x00b", "!"], "top_k": 2})})

    assert request_params(raw, LISTS) == {"stop": ["a\x00b", "!"], "top_k": 2}


def test_request_params_refuses_with_mlflows_words_when_mlflow_params_holds_json_text_for_a_list():
    # MLflow's scoring server refuses {"params": {"stop": "[\"a\"]"}}: a string is not a list there (#42)
    with pytest.raises(
        ParameterError,
        match=r"^Request parameter `stop` \(in `mlflow_params`\): Value must be a 1D array with shape \(-1,\) for "
        r"param 'stop'",
    ):
        request_params(json.dumps({"mlflow_params": json.dumps({"stop": '["a"]'})}), LISTS)


def test_request_params_keeps_the_last_value_like_mlflow_when_mlflow_params_repeats_a_key():
    assert request_params(json.dumps({"mlflow_params": '{"count": 1, "count": 2}'}), GATE) == {"count": 2}


def test_request_params_refuses_naming_the_others_when_parameters_are_sent_beside_mlflow_params():
    with pytest.raises(
        ParameterError,
        match=r"^Request parameter\(s\) `count` sent beside `mlflow_params`: send all parameters in "
        r"`mlflow_params` \(the JSON text of the params object\), or none there$",
    ):
        request_params(json.dumps({"mlflow_params": "{}", "count": 2}), GATE)


@pytest.mark.parametrize(
    ("channel", "reason"),
    [
        (3, r"must be a string \(the JSON text of the params object\), got an int$"),
        ("[1]", r"must be the JSON text of the params object, got a list of 1 value\(s\)$"),
        ('{"count": 2', r"must be the JSON text of the params object; the text is not valid JSON: it ends before"),
        ("{count}", r"must be the JSON text of the params object; the text is not valid JSON$"),
    ],
)
def test_request_params_refuses_when_mlflow_params_is_not_the_json_text_of_an_object(channel, reason):
    with pytest.raises(ParameterError, match=rf"^Request parameter `mlflow_params` {reason}"):
        request_params(json.dumps({"mlflow_params": channel}), GATE)


def test_request_params_checks_the_params_of_mlflow_params_against_the_schema_when_one_is_unknown():
    with pytest.raises(ParameterError, match=r"^Request parameter\(s\) `treshold` not accepted by this model; "):
        request_params(json.dumps({"mlflow_params": '{"treshold": 0.5}'}), GATE)


# -- a real PyTorch model (forward(x, scale=1.0)) behind the generated model.py ---------------------


@pytest.fixture(scope="module")
def scaled(tmp_path_factory):
    """(package path, repository) of the scaled linear model, logged with a params schema."""
    model = tiny_models.scripted_scaled_linear()
    example = tiny_models.mlp_example()
    signature = infer_signature(example, model(torch_tensor(example)).detach().numpy(), params={"scale": 1.0})
    package = tmp_path_factory.mktemp("scaled") / "package"
    mt_pytorch.save_model(model, package, input_example=example, signature=signature)
    [repository] = (package / "model_repository").iterdir()
    return package, repository


@pytest.fixture(scope="module")
def unscaled(tmp_path_factory):
    """The same model logged without a params schema (its signature inferred from the example)."""
    package = tmp_path_factory.mktemp("unscaled") / "package"
    mt_pytorch.save_model(tiny_models.scripted_scaled_linear(), package, input_example=tiny_models.mlp_example())
    [repository] = (package / "model_repository").iterdir()
    return repository


def torch_tensor(array):
    import torch

    return torch.from_numpy(array)


def answer(instance, requests):
    return instance.execute([fake_pb_utils.request_from_arrays(arrays, parameters) for arrays, parameters in requests])


def test_save_model_keeps_the_params_schema_in_the_package_and_in_the_served_artifact_when_the_signature_has_one(
    scaled,
):
    package, repository = scaled

    for directory in (package, repository / "1" / "artifact"):
        assert Model.load(str(directory / "MLmodel")).get_params_schema() == SCALE


def test_log_model_records_the_params_schema_when_the_signature_has_one(tmp_path):
    model = tiny_models.scripted_scaled_linear()
    example = tiny_models.mlp_example()
    signature = infer_signature(example, model(torch_tensor(example)).detach().numpy(), params={"scale": 1.0})

    with tiny_models.sqlite_tracking(tmp_path):
        info = mt_pytorch.log_model(model, input_example=example, signature=signature)
        logged = mlflow.models.get_model_info(info.model_uri)

    assert info.signature.params == SCALE
    assert logged.signature.params == SCALE


def test_execute_answers_like_pyfunc_predict_with_the_request_params_when_the_signature_has_a_params_schema(scaled):
    package, repository = scaled
    instance = tiny_models.initialized_model_py(repository)
    arrays = tiny_models.request_arrays(repository)
    expected = mlflow.pyfunc.load_model(str(package)).predict(tiny_models.mlp_example(), params={"scale": 2.0})

    [response] = answer(instance, [(arrays, {"scale": 2.0})])

    [output] = fake_pb_utils.outputs_of(response).values()
    np.testing.assert_array_equal(output, expected)
    assert not np.array_equal(output, mlflow.pyfunc.load_model(str(package)).predict(tiny_models.mlp_example()))


def test_execute_answers_with_the_schema_defaults_when_the_request_carries_no_parameters(scaled):
    package, repository = scaled
    instance = tiny_models.initialized_model_py(repository)
    expected = mlflow.pyfunc.load_model(str(package)).predict(tiny_models.mlp_example())

    [response] = answer(instance, [(tiny_models.request_arrays(repository), None)])

    [output] = fake_pb_utils.outputs_of(response).values()
    np.testing.assert_array_equal(output, expected)


def test_execute_refuses_only_the_request_with_an_unknown_parameter_with_invalid_arg(scaled):
    _, repository = scaled
    instance = tiny_models.initialized_model_py(repository)
    arrays = tiny_models.request_arrays(repository)

    first, broken = answer(instance, [(arrays, {"scale": 3}), (arrays, {"scael": 2.0})])

    assert broken.error().code() == INVALID_ARG
    assert broken.error().message() == (
        "Request parameter(s) `scael` not accepted by this model; accepted: scale (a double, default 1.0)"
    )
    assert not first.has_error()


def test_execute_refuses_parameters_with_invalid_arg_when_the_model_has_no_params_schema(unscaled):
    instance = tiny_models.initialized_model_py(unscaled)

    [response] = answer(instance, [(tiny_models.request_arrays(unscaled), {"scale": 2.0})])

    assert response.error().code() == INVALID_ARG
    assert (
        response.error()
        .message()
        .startswith(
            "Request parameter(s) `scale`: this model takes no parameters (its MLflow signature has no params schema)"
        )
    )


# -- an (input, params) example: its params are predicted with and shipped with the request ------------------


def test_save_model_ships_the_example_params_as_request_parameters_when_the_example_is_an_input_params_tuple(
    tmp_path,
):
    from mlflow_triton.local._compare import expected_outputs

    model = tiny_models.scripted_scaled_linear()
    example = tiny_models.mlp_example()
    signature = infer_signature(example, model(torch_tensor(example)).detach().numpy(), params={"scale": 1.0})
    package = tmp_path / "package"

    mt_pytorch.save_model(model, package, input_example=(example, {"scale": 3.0}), signature=signature)

    [repository] = (package / "model_repository").iterdir()
    body = json.loads((repository / "request.json").read_text())
    assert body["parameters"] == {"scale": 3.0}
    instance = tiny_models.initialized_model_py(repository)
    [response] = answer(instance, [(tiny_models.request_arrays(repository), body["parameters"])])
    [output] = fake_pb_utils.outputs_of(response).values()
    expected = mlflow.pyfunc.load_model(str(package)).predict(example, params={"scale": 3.0})
    np.testing.assert_array_equal(output, expected)
    [oracle] = expected_outputs(package, repository).values()  # what `mlflow-triton check` compares with
    np.testing.assert_array_equal(oracle, expected)


def test_save_model_infers_the_params_schema_from_the_example_params_when_no_signature_is_given(tmp_path):
    package = tmp_path / "package"

    mt_pytorch.save_model(
        tiny_models.scripted_scaled_linear(), package, input_example=(tiny_models.mlp_example(), {"scale": 2.0})
    )

    assert Model.load(str(package / "MLmodel")).get_params_schema() == ParamSchema([ParamSpec("scale", "double", 2.0)])


def test_save_model_refuses_example_params_when_the_signature_has_no_params_schema(tmp_path):
    example = tiny_models.mlp_example()
    signature = infer_signature(example, example[:, :3])

    with pytest.raises(
        InvalidArgumentError,
        match=r"^input_example carries params \(scale\) but the signature has no "
        r"params schema",
    ):
        mt_pytorch.save_model(
            tiny_models.scripted_scaled_linear(),
            tmp_path / "package",
            input_example=(example, {"scale": 2.0}),
            signature=signature,
        )


# -- #31.2: params Triton would change travel in `mlflow_params`; the runtime reads them exactly ---------------

GATE_INPUT, GATE_PARAMS = tiny_models.gate_example()


def test_save_model_ships_the_example_params_in_mlflow_params_and_answers_like_predict_when_triton_would_change_them(
    tmp_path,
):
    package = tmp_path / "package"

    mt_pytorch.save_model(
        tiny_models.scripted_gate(),
        package,
        input_example=(GATE_INPUT, GATE_PARAMS),
        signature=tiny_models.gate_signature(),
    )

    [repository] = (package / "model_repository").iterdir()
    prefix, arrays = arrays_from_binary_request(
        (repository / "request.bin").read_bytes(), read_headers_file(repository / "request.headers")
    )
    assert list(prefix["parameters"]) == ["mlflow_params"]
    instance = tiny_models.initialized_model_py(repository)
    [response] = answer(instance, [(arrays, prefix["parameters"])])
    [output] = fake_pb_utils.outputs_of(response).values()
    expected = mlflow.pyfunc.load_model(str(package)).predict(GATE_INPUT, params=GATE_PARAMS)
    np.testing.assert_array_equal(output, expected)
    assert expected[0, 0] == (1 + 1189) * 3  # x >= 5/11 holds and every character of the tag counts


def test_save_model_refuses_naming_the_channel_when_the_params_schema_declares_mlflow_params(tmp_path):
    example = tiny_models.mlp_example()
    signature = infer_signature(example, example[:, :3], params={"mlflow_params": "x"})

    with pytest.raises(
        InvalidArgumentError, match=r"^The params schema declares a parameter `mlflow_params`: that request parameter"
    ):
        mt_pytorch.save_model(
            tiny_models.scripted_scaled_linear(), tmp_path / "package", input_example=example, signature=signature
        )
    assert not (tmp_path / "package").exists()


def test_pyfunc_save_model_ships_numpy_datetime_params_as_iso_text_that_reach_predict_as_mlflow_gives_them(
    tmp_path, drive_model_py, read_request
):
    # MLflow's sample_params_basic holds np.datetime64 values: the request was not written (TypeError in json.dumps)
    import pandas as pd

    from mlflow_triton import pyfunc

    class Echo(mlflow.pyfunc.PythonModel):
        def predict(self, context, model_input, params=None):
            return pd.DataFrame({"when": [str(params["when"])] * len(model_input)})

    params = {"when": np.datetime64("2023-06-26T00:00:00")}
    frame = pd.DataFrame({"x": [1.0, 2.0, 3.0]})
    signature = infer_signature(frame, pd.DataFrame({"when": ["text"] * 3}), params=params)
    pyfunc.save_model(Echo(), tmp_path / "echo", input_example=(frame, params), signature=signature)

    repository = tmp_path / "echo" / "model_repository" / "echo"
    body = json.loads((repository / "request.json").read_text(encoding="utf-8"))
    assert body["parameters"] == {"when": "2023-06-26T00:00:00"}
    expected = mlflow.pyfunc.load_model(str(tmp_path / "echo")).predict(frame, params=params)
    answered = drive_model_py(repository, read_request(repository)[1], parameters=body["parameters"])
    assert answered[next(iter(answered))].tolist() == [value.encode() for value in expected["when"]]


# -- #52: without a signature the example is predicted with its params, as MLflow's own inference does -------------


class CountsScaled(mlflow.pyfunc.PythonModel):
    """Integer counts times a float parameter: the output's type is the parameter's doing."""

    def predict(self, context, model_input, params=None):
        return model_input[["count"]] * params["scale"]


@pytest.mark.parametrize("max_batch_size", [0, 4], ids=["unbatched", "batched"])
def test_pyfunc_save_model_infers_the_signature_mlflow_infers_when_the_example_params_decide_the_output(
    tmp_path, drive_model_py, read_request, max_batch_size
):
    """MLflow's inference predicts the example with the params schema it infers from them (a pyfunc without one
    drops params, and this model's predict fails with KeyError): the logged signature and answer are MLflow's."""
    import pandas as pd

    from mlflow_triton import pyfunc

    frame = pd.DataFrame({"count": [1, 2, 3]})
    example = (frame, {"scale": 1.5})
    mlflow.pyfunc.save_model(tmp_path / "mlflow", python_model=CountsScaled(), input_example=example)
    pyfunc.save_model(
        CountsScaled(),
        tmp_path / "package",
        input_example=example,
        triton_model_name="m",
        max_batch_size=max_batch_size,
    )

    recorded = Model.load(str(tmp_path / "package" / "MLmodel")).signature
    assert recorded == Model.load(str(tmp_path / "mlflow" / "MLmodel")).signature
    repository = tmp_path / "package" / "model_repository" / "m"
    body, arrays = read_request(repository)
    answered = drive_model_py(repository, arrays, parameters=body["parameters"])
    expected = mlflow.pyfunc.load_model(str(tmp_path / "package")).predict(frame, params={"scale": 1.5})
    np.testing.assert_array_equal(next(iter(answered.values())).reshape(-1), expected["count"].to_numpy())
