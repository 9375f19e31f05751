"""export_onnx on tree-based sklearn models: splits compared as sklearn compares them, and probed by parity.

sklearn's trees compare ``float32(x) <= threshold``; the exported graph must
answer exactly like ``pyfunc.predict`` at every split threshold and its float32
and float64 neighbours (where a float64 graph answered differently before).
"""

import re

import mlflow.pyfunc
import numpy as np
import onnxruntime
import pandas as pd
import pytest
from sklearn.compose import ColumnTransformer
from sklearn.ensemble import (
    GradientBoostingRegressor,
    HistGradientBoostingClassifier,
    RandomForestRegressor,
    VotingClassifier,
)
from sklearn.impute import SimpleImputer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import Pipeline
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

from mlflow_triton import sklearn as mt_sklearn
from mlflow_triton.export import ParityError, UnsupportedModelError, _command, _parity, _trees, export_onnx
from tests.support.export_models import config_graph_mismatches, read_handoff

ROWS = 60


def _frame():
    rng = np.random.default_rng(7)
    return pd.DataFrame({"a": rng.normal(size=ROWS), "b": rng.normal(size=ROWS) * 100.0, "c": rng.normal(size=ROWS)})


def _save(model, path, frame, **options):
    mt_sklearn.save_model(model, path, input_example=frame.iloc[:3], serialization_format="cloudpickle", **options)
    return path


def _fitted(estimator, frame, regression):
    target = frame["a"] * 3 + frame["b"] / 50 if regression else (frame["a"] + frame["b"] / 100 > 0).astype(int)
    return Pipeline([("model", estimator)]).fit(frame, target)


def _threshold_rows(estimator, frame):
    """Copies of the first row with each split feature at its threshold and the float32/float64 neighbours."""
    found = _trees.thresholds(estimator)
    rows = []
    for feature, values in found.items():
        for threshold in values:
            t32 = np.float32(threshold)
            for value in (
                threshold,
                np.nextafter(threshold, np.inf),
                np.nextafter(threshold, -np.inf),
                float(t32),
                float(np.nextafter(t32, np.float32(np.inf))),
                float(np.nextafter(t32, np.float32(-np.inf))),
            ):
                row = frame.iloc[0].to_numpy(copy=True)
                row[feature] = value
                rows.append(row)
    return pd.DataFrame(rows, columns=frame.columns)


def _onnx_answers(directory, frame):
    session = onnxruntime.InferenceSession(str(directory / "1" / "model.onnx"), providers=["CPUExecutionProvider"])
    [answer] = session.run(None, {name: frame[name].to_numpy()[:, None] for name in frame.columns})
    return answer


TREE_MODELS = {
    "decision tree classifier, predict": (DecisionTreeClassifier(max_depth=3, random_state=0), False, "predict"),
    "decision tree classifier, predict_proba": (
        DecisionTreeClassifier(max_depth=3, random_state=0),
        False,
        "predict_proba",
    ),
    "decision tree regressor": (DecisionTreeRegressor(max_depth=4, random_state=0), True, "predict"),
    "random forest regressor": (RandomForestRegressor(n_estimators=5, max_depth=4, random_state=0), True, "predict"),
    "gradient boosting regressor": (
        GradientBoostingRegressor(n_estimators=10, max_depth=3, random_state=0),
        True,
        "predict",
    ),
}


@pytest.mark.parametrize("case", list(TREE_MODELS))
def test_export_onnx_answers_like_pyfunc_at_every_split_threshold_when_a_tree_reads_fp64_columns(tmp_path, case):
    estimator, regression, predict_fn = TREE_MODELS[case]
    frame = _frame()
    model = _fitted(estimator, frame, regression)
    logged = _save(model, tmp_path / "logged", frame, pyfunc_predict_fn=predict_fn)

    directory = export_onnx(str(logged), tmp_path / "out")

    probes = _threshold_rows(model[-1], frame)
    expected = mlflow.pyfunc.load_model(str(logged)).predict(probes)
    answer = _onnx_answers(directory, probes)
    if predict_fn == "predict" and not regression:
        np.testing.assert_array_equal(answer.reshape(expected.shape), expected)
    else:  # leaf values travel as float32: a wrong branch is off by far more than this
        np.testing.assert_allclose(answer.reshape(np.shape(expected)), expected, rtol=2e-6, atol=1e-7)
    assert config_graph_mismatches(directory) == []


def test_export_onnx_probes_every_split_threshold_in_parity_when_the_tree_reads_the_columns(tmp_path):
    frame = _frame()
    model = _fitted(DecisionTreeClassifier(max_depth=3, random_state=0), frame, regression=False)

    directory = export_onnx(str(_save(model, tmp_path / "logged", frame)), tmp_path / "out")

    [probed] = [
        c for c in read_handoff(directory)["parity"]["inputs_compared"] if c["what"] == _parity.THRESHOLD_PROBES
    ]
    assert probed["thresholds"] == int((model[-1].tree_.feature >= 0).sum())
    assert probed["rows"] >= 5 * probed["thresholds"]
    split = model[-1].tree_.feature >= 0
    narrowed = model[-1].tree_.threshold[split].astype(np.float32).astype(np.float64)
    assert (narrowed > model[-1].tree_.threshold[split]).any()  # some thresholds round up when narrowed


def test_export_onnx_answers_like_pyfunc_at_every_split_threshold_when_the_columns_are_fp32(tmp_path):
    frame = _frame().astype(np.float32)
    model = _fitted(DecisionTreeClassifier(max_depth=4, random_state=0), frame, regression=False)
    logged = _save(model, tmp_path / "logged", frame)

    directory = export_onnx(str(logged), tmp_path / "out")

    probes = _threshold_rows(model[-1], frame).astype(np.float32)
    np.testing.assert_array_equal(
        _onnx_answers(directory, probes).ravel(), mlflow.pyfunc.load_model(str(logged)).predict(probes)
    )
    assert any(c["what"] == _parity.THRESHOLD_PROBES for c in read_handoff(directory)["parity"]["inputs_compared"])


def test_export_onnx_raises_parity_error_at_a_split_threshold_when_the_graph_compares_in_double(tmp_path, monkeypatch):
    # Without the float32 cast (and its check), the graph compares float64 values: parity must now catch it.
    frame = _frame()
    model = _fitted(DecisionTreeClassifier(max_depth=3, random_state=0), frame, regression=False)
    logged = _save(model, tmp_path / "logged", frame)
    monkeypatch.setattr(_trees, "with_float32_trees", lambda model: model)
    monkeypatch.setattr(_trees, "check_tree_inputs", lambda onnx_model: None)

    with pytest.raises(
        ParityError,
        match=r"Parity check failed on the trees' split thresholds and their float32 / "
        r"float64 neighbours: output `output_0`.*compared exactly",
    ):
        export_onnx(str(logged), tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_export_onnx_refuses_a_tree_reading_double_when_the_float32_cast_is_missing(tmp_path, monkeypatch):
    frame = _frame()
    model = _fitted(DecisionTreeClassifier(max_depth=3, random_state=0), frame, regression=False)
    logged = _save(model, tmp_path / "logged", frame)
    monkeypatch.setattr(_trees, "with_float32_trees", lambda model: model)

    with pytest.raises(UnsupportedModelError, match=r"tree op TreeEnsembleClassifier .* reads DOUBLE, not float32"):
        export_onnx(str(logged), tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_export_onnx_probes_split_thresholds_when_a_column_transformer_passes_columns_through(tmp_path):
    frame = _frame()
    select = ColumnTransformer([("keep", "passthrough", ["c", "a"])], remainder="drop")
    model = Pipeline([("select", select), ("tree", DecisionTreeClassifier(max_depth=3, random_state=0))])
    model.fit(frame, (frame["a"] - frame["c"] > 0).astype(int))
    logged = _save(model, tmp_path / "logged", frame)

    directory = export_onnx(str(logged), tmp_path / "out")

    compared = read_handoff(directory)["parity"]["inputs_compared"]
    assert any(c["what"] == _parity.THRESHOLD_PROBES for c in compared)
    probes = _threshold_rows(model[-1], frame[["c", "a"]]).assign(b=frame["b"].iloc[0])[["a", "b", "c"]]
    np.testing.assert_array_equal(
        _onnx_answers(directory, probes).ravel(), mlflow.pyfunc.load_model(str(logged)).predict(probes)
    )


def test_export_onnx_exports_and_notes_unprobed_splits_when_an_imputer_precedes_the_tree(tmp_path):
    # The README's SimpleImputer + DecisionTreeClassifier: ONNX Runtime's Imputer runs on float32 only.
    sizes = pd.DataFrame({"width": [1.0, 2.5, 3.0, 4.0], "height": [0.5, 1.5, 2.5, 3.5]})
    trees = Pipeline([("impute", SimpleImputer()), ("tree", DecisionTreeClassifier(max_depth=2))]).fit(
        sizes, [0, 1, 0, 1]
    )
    mt_sklearn.save_model(trees, tmp_path / "logged", input_example=sizes.iloc[:2], serialization_format="cloudpickle")

    directory = export_onnx(str(tmp_path / "logged"), tmp_path / "out")

    handoff = read_handoff(directory)
    assert handoff["parity"]["passed"] is True
    assert any(note.startswith("Tree splits: the trees read transformed features") for note in handoff["not_verified"])
    probes = pd.DataFrame({"width": [np.nan, 2.75, np.nextafter(2.75, 9)], "height": [1.0, np.nan, 2.0]})
    np.testing.assert_array_equal(_onnx_answers(directory, probes).ravel(), trees.predict(probes))


def test_export_onnx_refuses_naming_the_step_when_histogram_gradient_boosting_compares_in_double(tmp_path):
    frame = _frame()
    model = _fitted(HistGradientBoostingClassifier(max_iter=5), frame, regression=False)
    logged = _save(model, tmp_path / "logged", frame)

    with pytest.raises(
        UnsupportedModelError,
        match=r"Step `model` \(HistGradientBoostingClassifier\) compares "
        r"float64 feature values with float64 split thresholds.*What to do",
    ):
        export_onnx(str(logged), tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_export_onnx_refuses_a_tree_inside_a_voting_ensemble_when_it_would_read_double(tmp_path):
    frame = _frame()
    voting = VotingClassifier(
        [("tree", DecisionTreeClassifier(max_depth=2)), ("linear", LogisticRegression())],
        voting="soft",
        flatten_transform=False,
    )
    model = _fitted(voting, frame, regression=False)
    logged = _save(model, tmp_path / "logged", frame, pyfunc_predict_fn="predict_proba")

    with pytest.raises(UnsupportedModelError, match=r"tree op TreeEnsemble\w* .* not float32.*VotingClassifier"):
        export_onnx(str(logged), tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_export_onnx_records_float32_computation_when_a_regressor_output_is_widened_to_fp64(tmp_path, capsys):
    frame = _frame()
    logged = _save(_fitted(DecisionTreeRegressor(max_depth=3), frame, regression=True), tmp_path / "logged", frame)

    status = _command.export_command(str(logged), tmp_path / "out")

    directory = tmp_path / "out" / read_handoff(next((tmp_path / "out").iterdir()))["exported_model"]
    handoff = read_handoff(directory)
    [output] = handoff["tensors"]["outputs"]
    assert (status, output["data_type"], output["computed_as"]) == (0, "TYPE_FP64", "TYPE_FP32")
    assert handoff["parity"]["tolerances"]["outputs"]["output_0"] == {
        "rtol": 1e-4,
        "atol": 1e-5,
        "computed_as": "TYPE_FP32",
    }
    assert any(
        re.match(r"Output `output_0` is logged as TYPE_FP64 but the graph computes it in TYPE_FP32", note)
        for note in handoff["not_verified"]
    )
    assert (
        "  note: output_0 is computed in TYPE_FP32 and widened to the logged TYPE_FP64 (see handoff.json)"
        in capsys.readouterr().out.splitlines()
    )
