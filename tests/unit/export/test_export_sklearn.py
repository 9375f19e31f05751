"""export_onnx on scikit-learn models: the example Pipeline exported, served in-process, and refused cleanly."""

import json
import os
import pathlib
import re
import subprocess
import sys

import mlflow.pyfunc
import numpy as np
import pandas as pd
import pytest
from sklearn.compose import ColumnTransformer
from sklearn.kernel_ridge import KernelRidge
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import FunctionTransformer, OneHotEncoder, StandardScaler
from tritonclient.grpc import model_config_pb2

from examples.sklearn_example import fitted_pipeline, training_frame
from mlflow_triton import sklearn as mt_sklearn
from mlflow_triton.export import (
    ExportError,
    InvalidArgumentError,
    ParityError,
    UnsupportedModelError,
    _export,
    _source,
    export_onnx,
)
from tests.support import column_models, fake_pb_utils
from tests.support.export_models import (
    config_graph_mismatches,
    digest,
    drive_exported,
    read_config,
    read_handoff,
    save_sklearn_example,
    split_rows,
)
from tests.support.shipped_request import arrays_from_request_json, arrays_from_shipped_request

EXAMPLE_ROWS = 3
REPO_ROOT = pathlib.Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def logged(tmp_path_factory):
    """The example Pipeline saved with pyfunc_predict_fn="predict_proba" (as examples/sklearn_example.py logs it)."""
    return save_sklearn_example(tmp_path_factory.mktemp("logged") / "classifier")


@pytest.fixture(scope="module")
def exported(logged, tmp_path_factory):
    """{backend: exported directory} for the example Pipeline, and the logged model's digest before exporting."""
    before = digest(logged)
    out = tmp_path_factory.mktemp("exports")
    directories = {
        backend: export_onnx(str(logged), out / backend, backend=backend, zero_row_guard=False)
        for backend in ("onnxruntime", "python")
    }
    return directories, before


@pytest.fixture(scope="module")
def expected(logged):
    """pyfunc.predict of the logged model on the saved example: the oracle."""
    _, frame = fitted_pipeline()
    return mlflow.pyfunc.load_model(str(logged)).predict(frame.iloc[:EXAMPLE_ROWS])


def test_export_onnx_writes_onnxruntime_directory_when_backend_is_onnxruntime(exported):
    directory = exported[0]["onnxruntime"]

    assert directory.name == "classifier_onnx"
    assert sorted(p.relative_to(directory).as_posix() for p in directory.rglob("*")) == [
        "1",
        "1/model.onnx",
        "config.pbtxt",
        "handoff.json",
        "request.json",
    ]
    config = read_config(directory)
    assert (config.platform, config.backend, config.max_batch_size) == ("onnxruntime_onnx", "", 64)
    assert config.HasField("dynamic_batching")


@pytest.mark.parametrize("backend", ["onnxruntime", "python"])
def test_export_onnx_writes_config_matching_the_onnx_graph_when_pipeline_is_exported(exported, backend):
    assert config_graph_mismatches(exported[0][backend]) == []


def test_export_onnx_keeps_logged_tensor_names_and_types_when_columns_are_exported(exported):
    config = read_config(exported[0]["onnxruntime"])

    assert [_entry(t) for t in config.input] == [
        ("sepal_length_cm", "TYPE_FP64", [1], False),
        ("petal_width", "TYPE_FP64", [1], False),
        ("colour", "TYPE_STRING", [1], False),
    ]
    assert [_entry(t) for t in config.output] == [("output_0", "TYPE_FP64", [2], False)]


def _entry(tensor):
    return tensor.name, model_config_pb2.DataType.Name(tensor.data_type), list(tensor.dims), tensor.HasField("reshape")


def test_export_onnx_writes_python_backend_directory_when_backend_is_python(exported):
    directory = exported[0]["python"]

    assert sorted(p.relative_to(directory).as_posix() for p in directory.rglob("*")) == [
        "1",
        "1/model.onnx",
        "1/model.py",
        "config.pbtxt",
        "handoff.json",
        "request.json",
        "requirements.txt",
    ]
    config = read_config(directory)
    assert (config.backend, config.platform, config.max_batch_size) == ("python", "", 64)
    assert (directory / "1" / "model.py").read_text() == _export.MODEL_PY.read_text()
    requirements = [
        line for line in (directory / "requirements.txt").read_text().splitlines() if not line.startswith("#")
    ]
    assert requirements == [f"onnxruntime=={__import__('onnxruntime').__version__}", "numpy<2"]


def test_export_onnx_leaves_logged_model_unchanged_when_exported(logged, exported):
    assert digest(logged) == exported[1]


def test_export_onnx_ships_example_in_exported_shapes_when_request_is_written(exported):
    arrays = arrays_from_request_json(exported[0]["python"] / "request.json")
    _, frame = fitted_pipeline()

    assert {name: a.shape for name, a in arrays.items()} == {
        "sepal_length_cm": (3, 1),
        "petal_width": (3, 1),
        "colour": (3, 1),
    }
    np.testing.assert_array_equal(arrays["petal_width"][:, 0], frame["petal_width"].iloc[:3].to_numpy())
    assert [v.decode() for v in arrays["colour"][:, 0]] == frame["colour"].iloc[:3].tolist()


def test_exported_model_py_answers_like_pyfunc_when_requests_are_batched_together(exported, expected):
    directory = exported[0]["python"]
    arrays = arrays_from_request_json(directory / "request.json")

    responses = drive_exported(directory, split_rows(arrays, [1, 2]))

    answers = [fake_pb_utils.outputs_of(r)["output_0"] for r in responses]
    assert [a.shape for a in answers] == [(1, 2), (2, 2)]
    np.testing.assert_allclose(np.concatenate(answers), expected, rtol=1e-4, atol=1e-5)


def test_export_onnx_records_parity_and_what_was_not_verified_when_exported(exported):
    handoff = read_handoff(exported[0]["onnxruntime"])

    assert handoff["parity"]["passed"] is True
    assert handoff["converter"]["name"] == "skl2onnx"
    assert handoff["converter"]["options"] == {"zipmap": False}
    assert handoff["source"]["pyfunc_predict_fn"] == "predict_proba"
    assert set(handoff["onnx"]["opsets"]) == {"ai.onnx", "ai.onnx.ml"}
    compared = handoff["parity"]["inputs_compared"]
    assert [c["rows"] for c in compared[:3]] == [3, 3, 64]
    assert compared[3]["requests"] >= compared[3]["examples"]
    assert max(compared[3]["rows_per_request"]) > 3
    assert 0 <= handoff["parity"]["largest_differences"]["output_0"] <= 1e-5
    assert "ONNX Runtime backend did not run" in handoff["not_verified"][0]
    assert [t["field"] for t in handoff["tensors"]["inputs"]] == ["sepal length (cm)", "petal_width", "colour"]


def test_export_onnx_exports_labels_with_reshape_when_pyfunc_predicts_labels(tmp_path):
    logged = save_sklearn_example(tmp_path / "labels", pyfunc_predict_fn="predict")
    _, frame = fitted_pipeline()

    directory = export_onnx(str(logged), tmp_path / "out", backend="python", zero_row_guard=False, max_batch_size=8)

    config = read_config(directory)
    [output] = config.output
    assert _entry(output) == ("output_0", "TYPE_INT64", [1], True)
    assert list(output.reshape.shape) == []
    assert config_graph_mismatches(directory) == []
    [response] = drive_exported(directory, [arrays_from_request_json(directory / "request.json")])
    np.testing.assert_array_equal(
        fake_pb_utils.outputs_of(response)["output_0"], mlflow.pyfunc.load_model(str(logged)).predict(frame.iloc[:3])
    )


def test_export_onnx_exports_a_batched_repository_like_an_unbatched_one_when_logged_with_max_batch_size(tmp_path):
    plain = save_sklearn_example(tmp_path / "plain", pyfunc_predict_fn="predict")
    batched = save_sklearn_example(tmp_path / "batched", pyfunc_predict_fn="predict", max_batch_size=8)
    _, frame = fitted_pipeline()

    directories = [
        export_onnx(
            str(logged), tmp_path / f"out-{logged.name}", backend="python", zero_row_guard=False, max_batch_size=8
        )
        for logged in (plain, batched)
    ]

    plain_config, batched_config = (read_config(directory) for directory in directories)
    assert [_entry(t) for t in batched_config.output] == [_entry(t) for t in plain_config.output]
    assert [_entry(t) for t in batched_config.input] == [_entry(t) for t in plain_config.input]
    [response] = drive_exported(directories[1], [arrays_from_request_json(directories[1] / "request.json")])
    np.testing.assert_array_equal(
        fake_pb_utils.outputs_of(response)["output_0"], mlflow.pyfunc.load_model(str(batched)).predict(frame.iloc[:3])
    )


def test_export_onnx_answers_text_labels_as_bytes_when_the_classes_are_strings(tmp_path):
    frame, label = training_frame()
    model = Pipeline(fitted_pipeline()[0].steps[:-1] + [("classifier", LogisticRegression())])
    model.fit(frame, np.where(label == 1, "yes", "nö"))
    mt_sklearn.save_model(model, tmp_path / "logged", input_example=frame.iloc[:5])

    directory = export_onnx(str(tmp_path / "logged"), tmp_path / "out", backend="python", zero_row_guard=False)

    assert _entry(read_config(directory).output[0]) == ("output_0", "TYPE_STRING", [1], True)
    [response] = drive_exported(directory, [arrays_from_request_json(directory / "request.json")])
    answer = fake_pb_utils.outputs_of(response)["output_0"]
    assert answer.tolist() == [v.encode() for v in model.predict(frame.iloc[:5])]


def test_export_onnx_answers_regression_values_as_one_column_when_the_graph_keeps_an_axis(tmp_path):
    from sklearn.linear_model import Ridge

    frame, _ = training_frame()
    numeric = frame[["sepal length (cm)", "petal_width"]]
    model = Pipeline([("scale", StandardScaler()), ("regress", Ridge())]).fit(numeric, numeric.sum(axis=1) ** 2)
    mt_sklearn.save_model(model, tmp_path / "logged", input_example=numeric.iloc[:4])

    directory = export_onnx(str(tmp_path / "logged"), tmp_path / "out", backend="python", zero_row_guard=False)

    assert _entry(read_config(directory).output[0]) == ("output_0", "TYPE_FP64", [1], False)
    assert config_graph_mismatches(directory) == []
    [response] = drive_exported(directory, [arrays_from_request_json(directory / "request.json")])
    np.testing.assert_allclose(
        fake_pb_utils.outputs_of(response)["output_0"][:, 0], model.predict(numeric.iloc[:4]), rtol=1e-4, atol=1e-5
    )


def test_export_onnx_joins_numeric_columns_when_the_model_takes_a_matrix(tmp_path):
    frame = pd.DataFrame({"a": np.linspace(0, 1, 20), "b": np.linspace(1, 0, 20) ** 2, "n": np.arange(20)})
    model = Pipeline([("classify", LogisticRegression())]).fit(frame, (frame["a"] > 0.4).astype(int))
    mt_sklearn.save_model(model, tmp_path / "logged", input_example=frame.iloc[:4], pyfunc_predict_fn="predict_proba")

    directory = export_onnx(str(tmp_path / "logged"), tmp_path / "out", backend="python", zero_row_guard=False)

    assert [t.name for t in read_config(directory).input] == ["a", "b", "n"]
    # request.bin: Triton would read some of these float64 values from JSON as their neighbours
    assert (directory / "request.bin").is_file() and not (directory / "request.json").exists()
    [response] = drive_exported(directory, [arrays_from_shipped_request(directory)])
    np.testing.assert_allclose(
        fake_pb_utils.outputs_of(response)["output_0"], model.predict_proba(frame.iloc[:4]), rtol=1e-4, atol=1e-5
    )


def test_export_onnx_casts_integer_columns_at_the_input_when_they_reach_a_numeric_step(tmp_path):
    frame = pd.DataFrame(
        {"tenure months": np.arange(30) % 72, "charge": np.linspace(20.0, 120.0, 30), "seats": np.arange(30) % 3}
    )
    model = Pipeline(
        [
            (
                "prepare",
                ColumnTransformer(
                    [("scale", StandardScaler(), ["tenure months", "charge"]), ("seats", OneHotEncoder(), ["seats"])]
                ),
            ),
            ("classify", LogisticRegression()),
        ]
    ).fit(frame, frame["charge"] > 60)
    mt_sklearn.save_model(
        model,
        tmp_path / "logged",
        input_example=frame.iloc[:4],
        pyfunc_predict_fn="predict_proba",
        serialization_format="cloudpickle",
    )

    directory = export_onnx(str(tmp_path / "logged"), tmp_path / "out", backend="python", zero_row_guard=False)

    inputs = {entry.name: model_config_pb2.DataType.Name(entry.data_type) for entry in read_config(directory).input}
    assert inputs == {"tenure_months": "TYPE_INT64", "charge": "TYPE_FP64", "seats": "TYPE_INT64"}
    assert config_graph_mismatches(directory) == []
    [response] = drive_exported(directory, [arrays_from_shipped_request(directory)])
    np.testing.assert_allclose(
        fake_pb_utils.outputs_of(response)["output_0"], model.predict_proba(frame.iloc[:4]), rtol=1e-6, atol=1e-9
    )


def test_export_onnx_refuses_naming_the_step_when_an_estimator_has_no_converter(tmp_path):
    frame, label = training_frame()
    model = Pipeline([("scale", StandardScaler()), ("regress", KernelRidge())]).fit(frame[["petal_width"]], label)
    mt_sklearn.save_model(model, tmp_path / "logged", input_example=frame[["petal_width"]].iloc[:3])

    with pytest.raises(
        UnsupportedModelError,
        match=r"Step `regress` \(sklearn\.kernel_ridge\.KernelRidge\) has no "
        r"converter in skl2onnx .*What to do: replace the step",
    ):
        export_onnx(str(tmp_path / "logged"), tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_export_onnx_refuses_naming_the_column_when_a_column_is_optional_or_datetime(tmp_path):
    mt_sklearn.save_model(
        column_models.pipeline(),
        tmp_path / "logged",
        input_example=column_models.example_frame(),
        serialization_format="cloudpickle",
    )

    with pytest.raises(UnsupportedModelError, match=re.escape("Column `size` is an optional column")):
        export_onnx(str(tmp_path / "logged"), tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_export_onnx_refuses_naming_the_step_when_a_function_transformer_runs_python(tmp_path):
    frame, label = training_frame()
    preprocessing = ColumnTransformer(
        [
            ("numeric", FunctionTransformer(np.log1p), ["petal_width"]),
            ("text", OneHotEncoder(handle_unknown="ignore"), ["colour"]),
        ]
    )
    model = Pipeline([("prepare", preprocessing), ("classify", LogisticRegression())])
    columns = ["petal_width", "colour"]
    model.fit(frame[columns].assign(petal_width=frame["petal_width"].abs()), label)
    example = frame[columns].iloc[:3].assign(petal_width=[0.5, 1.0, 1.5])
    mt_sklearn.save_model(model, tmp_path / "logged", input_example=example)

    with pytest.raises(
        UnsupportedModelError,
        match=r"Step `prepare > numeric` is a FunctionTransformer running the "
        r"Python function 'log1p', which ONNX cannot express",
    ):
        export_onnx(str(tmp_path / "logged"), tmp_path / "out" / "nested")
    assert not (tmp_path / "out").exists()


def test_export_onnx_raises_parity_error_and_writes_nothing_when_the_graph_answers_differently(
    logged, tmp_path, monkeypatch
):
    pipeline, frame = fitted_pipeline()
    different = Pipeline(pipeline.steps[:-1] + [("classifier", LogisticRegression(C=1e-3))])
    different.fit(frame, (frame["sepal length (cm)"] > 5.8).astype(int))
    monkeypatch.setattr(_source.LoggedModel, "raw_model", lambda self: different)  # the converter sees another model

    with pytest.raises(
        ParityError,
        match=r"Parity check failed on the saved input example: output `output_0` of "
        r"request 1 of 1, element \[\d+, \d+\], is .* from onnxruntime but .* from "
        r"pyfunc.predict: difference .* exceeds the tolerance 1e-09 \+ 1e-06 \* "
        r"\|pyfunc\|\. Input: .*sepal length \(cm\).*Nothing was written",
    ):
        export_onnx(str(logged), tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_export_onnx_refuses_and_keeps_the_directory_when_the_target_exists(logged, tmp_path):
    target = tmp_path / "out" / "classifier_onnx"
    target.mkdir(parents=True)
    (target / "mine.txt").write_text("keep me")

    with pytest.raises(InvalidArgumentError, match=re.escape(f"{str(target)!r} already exists")):
        export_onnx(str(logged), tmp_path / "out")
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["classifier_onnx"]
    assert (target / "mine.txt").read_text() == "keep me"


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"backend": "tensorrt"}, "backend 'tensorrt' is not supported; supported: onnxruntime, python"),
        ({"max_batch_size": 0}, "max_batch_size must be an integer >= 1 (the largest batch Triton forms), got 0"),
        ({"max_batch_size": True}, "max_batch_size must be an integer >= 1 (the largest batch Triton forms), got True"),
        ({"max_batch_size": "8"}, "max_batch_size must be an integer >= 1 (the largest batch Triton forms), got '8'"),
    ],
)
def test_export_onnx_raises_naming_the_argument_when_it_is_invalid(logged, tmp_path, arguments, message):
    with pytest.raises(InvalidArgumentError, match=re.escape(message)):
        export_onnx(str(logged), tmp_path / "out", **arguments)
    assert not (tmp_path / "out").exists()


def test_export_onnx_refuses_when_out_dir_lies_inside_the_logged_model(logged, tmp_path):
    before = digest(logged)

    with pytest.raises(InvalidArgumentError, match="lies inside the logged model"):
        export_onnx(str(logged), logged / "exports")
    assert digest(logged) == before


def test_export_onnx_names_the_extra_when_a_converter_is_missing(logged, tmp_path, monkeypatch):
    monkeypatch.setitem(__import__("sys").modules, "skl2onnx", None)

    with pytest.raises(ImportError, match=re.escape("pip install 'mlflow-triton[onnx]'")):
        export_onnx(str(logged), tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_export_onnx_removes_staging_and_created_parents_when_writing_fails(logged, tmp_path, monkeypatch):
    def broken(**_):
        raise OSError("disk full")

    monkeypatch.setattr(_export._handoff, "handoff", broken)

    with pytest.raises(OSError, match="disk full"):
        export_onnx(str(logged), tmp_path / "out" / "deeper")
    assert list(tmp_path.iterdir()) == []


def _save_tfidf_pipeline(path):
    from sklearn.feature_extraction.text import TfidfVectorizer

    frame = pd.DataFrame({"text": ["the cat sat", "a dog ran", "the dog sat", "a cat ran"] * 5})
    model = Pipeline(
        [("prepare", ColumnTransformer([("tfidf", TfidfVectorizer(), "text")])), ("classify", LogisticRegression())]
    ).fit(frame, [0, 1, 1, 0] * 5)
    mt_sklearn.save_model(model, path, input_example=frame.iloc[:3], pyfunc_predict_fn="predict_proba")
    return path


def test_export_onnx_names_the_locale_and_writes_nothing_when_en_us_utf8_is_missing(tmp_path, monkeypatch):
    logged = _save_tfidf_pipeline(tmp_path / "logged")
    (tmp_path / "no-locales").mkdir()
    monkeypatch.setenv("LOCPATH", str(tmp_path / "no-locales"))  # glibc looks for locales only there

    with pytest.raises(
        ExportError,
        match=r"(?s)Failed to construct locale with name:en_US\.UTF-8.*StringNormalizer "
        r"\(TfidfVectorizer / CountVectorizer\).*locale-gen\); nothing was written",
    ):
        export_onnx(str(logged), tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_export_onnx_hands_on_the_locale_requirement_when_a_text_vectorizer_is_exported(tmp_path):
    # A fresh interpreter whose glibc finds en_US.UTF-8 in a locale directory compiled here (no system change).
    locales = tmp_path / "locales"
    locales.mkdir()
    subprocess.run(["localedef", "-i", "en_US", "-f", "UTF-8", str(locales / "en_US.UTF-8")], check=True)
    script = (
        "import json, pathlib, sys; sys.path.insert(0, sys.argv[2]);"
        "from tests.unit.export.test_export_sklearn import _save_tfidf_pipeline;"
        "from mlflow_triton.export import export_onnx;"
        "root = pathlib.Path(sys.argv[1]); logged = _save_tfidf_pipeline(root / 'logged');"
        "print(json.dumps(json.loads((export_onnx(str(logged), root / 'out') / 'handoff.json').read_text())))"
    )
    completed = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path), str(REPO_ROOT)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "LOCPATH": str(locales)},
        timeout=600,
    )

    assert completed.returncode == 0, completed.stderr[-3000:]
    handoff = json.loads(completed.stdout.strip().splitlines()[-1])
    assert handoff["parity"]["passed"] is True
    assert "StringNormalizer" in handoff["onnx"]["ops"]
    assert any("needs the en_US.UTF-8 locale in the serving process" in note for note in handoff["not_verified"])
