"""The MLflow corpus runner's own logic (tests/support/mlflow_corpus): cases, verdicts, counts, the page.

No MLflow logging and no Triton here: the e2e sample (tests/e2e/test_mlflow_corpus_sample.py) runs real cases.
"""

import pytest

from tests.support.mlflow_corpus import run
from tests.support.mlflow_corpus.case import CORPUS_ONLY_FLAVORS, FLAVORS, Built, Case, case_table
from tests.support.mlflow_corpus.outcomes import (
    Outcome,
    apply_check_report,
    counts,
    first_line,
    headline,
    markdown,
    mlflow_serve_summary,
    user_loses,
)

MLFLOW_TEST_FILES = {
    "tests/sklearn/test_sklearn_model_export.py",
    "tests/sklearn/test_sklearn_autolog.py",
    "tests/models/test_model_input_examples.py",
    "tests/pytorch/test_pytorch_model_export.py",
    "tests/transformers/test_transformers_model_export.py",
    "tests/xgboost/test_xgboost_model_export.py",
    "tests/lightgbm/test_lightgbm_model_export.py",
    "tests/statsmodels/test_statsmodels_model_export.py",
    "tests/pyfunc/test_model_export_with_class_and_artifacts.py",
    "tests/pyfunc/test_model_export_with_loader_module_and_data_path.py",
    "tests/pyfunc/test_pyfunc_schema_enforcement.py",
    "tests/catboost/test_catboost_model_export.py",
    "tests/sentence_transformers/test_sentence_transformers_model_export.py",
    "tests/models/test_signature.py",
    "tests/onnx/test_onnx_model_export.py",
    "tests/keras/test_save.py",
    "tests/keras/test_pyfunc_model_works_with_all_input_types.py",
    "tests/spacy/test_spacy_model_export.py",
    "tests/pmdarima/test_pmdarima_model_export.py",
    "tests/prophet/test_prophet_model_export.py",
    "tests/pyfunc/test_chat_model.py",
    "tests/pyfunc/test_chat_agent.py",
    "tests/pyfunc/test_responses_agent.py",
    "tests/pyfunc/test_pyfunc_model_with_type_hints.py",
}
#: The flavors without an mlflow_triton wrapper of their own (pyfunc has one too: its cases take both routes).
PLAIN_MLFLOW_FLAVORS = (
    "xgboost",
    "lightgbm",
    "catboost",
    "statsmodels",
    "sentence_transformers",
    "onnx",
    "keras",
    "spacy",
    "pmdarima",
    "prophet",
    "pyfunc",
)


def _outcome(case_id="sklearn-a", flavor="sklearn", **fields):
    return Outcome(case_id, flavor, "tests/sklearn/test_sklearn_model_export.py::test_model_save_load", **fields)


def test_corpus_has_at_least_60_cases_over_every_flavor_when_listed():
    cases = run.all_cases()

    assert len(cases) >= 60
    assert {case.flavor for case in cases} == set(FLAVORS)


def test_corpus_has_at_least_64_cases_logged_with_plain_mlflow_when_listed():
    # issue 32: 24 cases, then at least 40 more rebuilt from MLflow's xgboost, LightGBM, CatBoost, statsmodels,
    # sentence-transformers and pyfunc tests
    plain = [case for case in run.all_cases() if case.flavor in PLAIN_MLFLOW_FLAVORS]

    assert len(plain) >= 64
    assert {case.flavor for case in plain} == set(PLAIN_MLFLOW_FLAVORS)


def test_corpus_case_ids_are_unique_and_name_their_flavor_when_listed():
    ids = [case.id for case in run.all_cases()]

    assert len(ids) == len(set(ids))
    assert all(case.id.startswith(f"{case.flavor}-") for case in run.all_cases())


def test_corpus_cases_name_a_test_of_the_mlflow_files_the_issue_names_when_listed():
    files = {case.mlflow_test.split("::")[0] for case in run.all_cases()}

    assert files == MLFLOW_TEST_FILES
    assert all(case.mlflow_test.split("::")[1].startswith("test_") for case in run.all_cases())


def test_corpus_cases_of_flavors_without_a_wrapper_are_brought_in_with_add_repository_when_listed():
    routes = {(case.flavor, case.route) for case in run.all_cases() if case.flavor in PLAIN_MLFLOW_FLAVORS}

    assert routes == {
        ("xgboost", "add-repository"),
        ("lightgbm", "add-repository"),
        ("catboost", "add-repository"),
        ("statsmodels", "add-repository"),
        ("sentence_transformers", "add-repository"),
        ("onnx", "add-repository"),
        ("keras", "add-repository"),
        ("spacy", "add-repository"),
        ("pmdarima", "add-repository"),
        ("prophet", "add-repository"),
        ("pyfunc", "add-repository"),
        ("pyfunc", "wrapper"),
    }


def test_case_rejects_route_when_not_wrapper_or_add_repository():
    with pytest.raises(ValueError, match=r"route 'export' is not one of \('wrapper', 'add-repository'\)"):
        Case("xgboost-a", "xgboost", "tests/xgboost/t.py::test_a", lambda: Built(None, {}), route="export")


def test_corpus_has_at_least_40_cases_of_issue_41_when_listed():
    # issue 41: onnx, keras, spacy, pmdarima, prophet, MLflow 3's chat and agent interfaces, type hints, params
    new_files = {file for file in MLFLOW_TEST_FILES if file.startswith(("tests/onnx", "tests/keras", "tests/spacy"))}
    new_files |= {
        "tests/pmdarima/test_pmdarima_model_export.py",
        "tests/prophet/test_prophet_model_export.py",
        "tests/pyfunc/test_chat_model.py",
        "tests/pyfunc/test_chat_agent.py",
        "tests/pyfunc/test_responses_agent.py",
        "tests/pyfunc/test_pyfunc_model_with_type_hints.py",
    }
    cases = [case for case in run.all_cases() if case.mlflow_test.split("::")[0] in new_files]

    assert len(cases) >= 40
    assert {case.mlflow_test.split("::")[0] for case in cases} == new_files


def test_corpus_sample_has_one_case_per_flavor_ci_runs_and_one_of_the_protocol_when_selected():
    sample = run.select(run.all_cases(), [case_id for case_id in run.SAMPLE if case_id != run.SAMPLE_PROTOCOL])

    assert sorted(case.flavor for case in sample) == sorted(set(FLAVORS) - set(CORPUS_ONLY_FLAVORS))
    assert run.select(run.all_cases(), [run.SAMPLE_PROTOCOL])[0].route == "add-repository"
    assert run.SAMPLE[-1] == run.SAMPLE_PROTOCOL
    assert set(CORPUS_ONLY_FLAVORS) < set(FLAVORS)


def test_corpus_select_exits_with_known_ids_when_an_id_is_unknown():
    with pytest.raises(SystemExit, match=r"unknown case id\(s\) \['sklearn-nope'\]; known: .*sklearn-logreg-log"):
        run.select(run.all_cases(), ["sklearn-nope"])


def test_case_rejects_flavor_when_not_one_of_the_flavors():
    with pytest.raises(
        ValueError,
        match=r"flavor 'tensorflow' is not one of \('sklearn', 'pytorch', 'transformers', 'xgboost', 'lightgbm', "
        r"'catboost', 'statsmodels', 'sentence_transformers', 'onnx', 'keras', 'spacy', 'pmdarima', 'prophet', "
        r"'pyfunc'\)",
    ):
        Case("tensorflow-a", "tensorflow", "tests/tensorflow/test_tf.py::test_a", lambda: Built(None, {}))


def test_case_rejects_mlflow_test_when_not_file_colon_colon_test():
    with pytest.raises(ValueError, match=r"mlflow_test 'test_a' must read <file>::<test>"):
        Case("sklearn-a", "sklearn", "test_a", lambda: Built(None, {}))


def test_case_table_adapts_builds_unless_raw_when_registered():
    case = case_table("sklearn", "tests/sklearn/f.py", lambda built: Built(built.model, {**built.log_kwargs, "x": 1}))

    @case("adapted", "test_a")
    def adapted():
        return Built("m", {})

    @case("raw", "test_b", raw=True)
    def raw():
        return Built("m", {})

    built = {registered.id: registered.build().log_kwargs for registered in case.cases}
    assert built == {"sklearn-adapted": {"x": 1}, "sklearn-raw": {}}
    assert case.cases[0].mlflow_test == "tests/sklearn/f.py::test_a"


@pytest.mark.parametrize(
    ("fields", "verdict"),
    [
        ({"build_error": "KeyError: 'summarization'"}, "not built"),
        ({"refusal": "Column `x`: datetime"}, "refused"),
        ({"model_uri": "models:/m-1"}, "not checked"),
        ({"model_uri": "models:/m-1", "check_passed": True}, "PASS"),
        ({"model_uri": "models:/m-1", "check_passed": False}, "FAIL"),
    ],
)
def test_outcome_verdict_follows_the_furthest_step_when_classified(fields, verdict):
    assert _outcome(**fields).verdict == verdict


def test_apply_check_report_records_pass_and_fail_by_model_uri_when_check_reported():
    outcomes = [_outcome("sklearn-a", model_uri="models:/m-1"), _outcome("sklearn-b", model_uri="models:/m-2")]
    report = [
        {"model": "models:/m-2", "model_uri": "models:/m-2", "passed": False, "reason": "outputs differ: y"},
        {"model": "models:/m-1", "model_uri": "models:/m-1", "passed": True, "reason": "answered like pyfunc"},
    ]

    apply_check_report(outcomes, report)

    assert [(o.verdict, o.check_reason) for o in outcomes] == [
        ("PASS", "answered like pyfunc"),
        ("FAIL", "outputs differ: y"),
    ]


def test_apply_check_report_leaves_case_not_checked_when_check_has_no_entry():
    outcomes = [_outcome(model_uri="models:/m-1")]

    apply_check_report(outcomes, [])

    assert outcomes[0].verdict == "not checked"


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        (("MlflowException: untrusted types\nmore", None), {"logged": False, "status": None}),
        ((None, 200, '{"predictions": [1]}'), {"logged": True, "status": 200}),
        ((None, 400, '{"error_code": "BAD_REQUEST"}'), {"logged": True, "status": 400}),
        ((None, None, "MlflowException: no pyfunc flavor"), {"logged": True, "status": None}),
    ],
)
def test_mlflow_serve_summary_says_what_mlflow_did_when_the_wrapper_refused(arguments, expected):
    summary = mlflow_serve_summary(*arguments)

    assert {key: summary[key] for key in expected} == expected
    assert "\n" not in summary["text"]


def test_user_loses_only_refused_cases_mlflow_answers_with_200_when_counted():
    served = mlflow_serve_summary(None, 200, "{}")
    failed = mlflow_serve_summary(None, 400, "{}")

    assert user_loses(_outcome(refusal="no", mlflow_serve=served))
    assert not user_loses(_outcome(refusal="no", mlflow_serve=failed))
    assert not user_loses(_outcome(model_uri="models:/m-1", check_passed=True, mlflow_serve=served))


def test_counts_add_up_each_verdict_when_outcomes_mix():
    outcomes = [
        _outcome(build_error="KeyError"),
        _outcome(refusal="no", mlflow_serve=mlflow_serve_summary(None, 200, "{}")),
        _outcome(refusal="no", mlflow_serve=mlflow_serve_summary("MlflowException: no", None)),
        _outcome(model_uri="models:/m-1", check_passed=True),
        _outcome(model_uri="models:/m-2", check_passed=False),
        _outcome(model_uri="models:/m-3"),
    ]

    assert counts(outcomes) == {
        "cases": 6,
        "built": 5,
        "logged": 3,
        "refused": 2,
        "PASS": 1,
        "FAIL": 1,
        "not checked": 1,
        "refused, MLflow serves": 1,
    }


def test_headline_reads_counts_in_one_sentence_when_all_were_checked():
    numbers = counts([_outcome(model_uri="models:/m-1", check_passed=True), _outcome(build_error="KeyError")])

    assert headline(numbers) == "2 cases: 1 built, 1 logged (1 PASS, 0 FAIL), 0 refused (0 of which MLflow serves)"


def test_first_line_cuts_long_text_with_an_ellipsis_when_over_the_limit():
    assert first_line("\n  abcdef\nsecond", limit=4) == "abc…"
    assert first_line(None) == ""


def test_markdown_has_a_row_per_case_with_escaped_pipes_when_generated():
    outcomes = [
        _outcome("sklearn-a", model_uri="models:/m-1", check_passed=False, check_reason="outputs differ: a|b"),
        _outcome(
            "pytorch-b",
            "pytorch",
            refusal="Column `x`\nsecond line",
            mlflow_serve=mlflow_serve_summary(None, 200, '{"predictions": [1]}'),
        ),
    ]
    meta = {"date": "2026-12-01 18:00 UTC", "versions": {"mlflow": "3.17.2"}, "triton_version": "2.51.0"}

    page = markdown(outcomes, meta)

    assert (
        "| `sklearn-a` | `test_model_save_load` in `tests/sklearn/test_sklearn_model_export.py` | logged | **FAIL**: "
        "outputs differ: a\\|b |  |" in page
    )
    assert "| `pytorch-b` |" in page and "refused: Column `x` |" in page and "answers HTTP 200" in page
    assert "Run 2026-12-01 18:00 UTC" in page and "mlflow 3.17.2" in page and "Triton 2.51.0" in page
    assert page.index("## sklearn") < page.index("## pytorch")
    # MLflow's tests are not tests of this repository (tests/unit/project/test_docs_test_references.py)
    assert "::" not in page


def test_outcome_round_trips_through_its_dict_when_reported():
    outcome = _outcome(model_uri="models:/m-1", check_passed=True, seconds={"log": 1.5})

    assert Outcome.from_dict(outcome.to_dict()) == outcome
    assert outcome.to_dict()["verdict"] == "PASS"


def test_as_mlflow_user_trusts_the_types_skops_reports_when_a_knn_is_saved_with_skops():
    from tests.support.mlflow_corpus import cases_sklearn

    built = cases_sklearn.as_mlflow_user(cases_sklearn.knn_skops_format())

    assert "sklearn.neighbors._kd_tree.KDTree" in built.log_kwargs["skops_trusted_types"]


def test_as_mlflow_user_chooses_cloudpickle_when_the_test_defines_the_class():
    from tests.support.mlflow_corpus import cases_sklearn

    built = cases_sklearn.as_mlflow_user(cases_sklearn.tabular_column_output())

    assert built.log_kwargs["serialization_format"] == "cloudpickle"


def test_as_mlflow_user_keeps_the_case_when_it_names_another_format():
    from tests.support.mlflow_corpus import cases_sklearn

    built = cases_sklearn.knn_pickle_format()

    assert cases_sklearn.as_mlflow_user(built) is built


def test_markdown_shows_the_wrappers_warning_when_a_case_logged_with_one():
    outcome = _outcome(model_uri="models:/m-1", check_passed=True, warnings=["class A is defined in module 'x'\nmore"])

    assert "| logged, with a warning: class A is defined in module 'x' | PASS |" in markdown([outcome], {})


def test_model_code_files_import_only_mlflow_the_standard_library_and_each_other_when_parsed():
    # MLflow stores them as code and imports them by their own names where the model loads (Triton's Python
    # backend included), where this repository is not installed
    import ast

    from tests.support.mlflow_corpus.cases_pyfunc import MODEL_CODE

    imported = set()
    for file in MODEL_CODE.glob("*.py"):
        for node in ast.walk(ast.parse(file.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                imported |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom):
                imported.add((node.module or "").split(".")[0])

    assert imported == {"mlflow", "os", "pickle", "json", "uuid", "corpus_model_utils"}


def test_markdown_counts_each_flavor_and_all_when_outcomes_span_flavors():
    outcomes = [
        _outcome("sklearn-a", model_uri="models:/m-1", check_passed=True),
        _outcome("keras-b", "keras", build_error="ModuleNotFoundError: No module named 'keras'"),
        _outcome("keras-c", "keras", refusal="no", mlflow_serve=mlflow_serve_summary(None, 200, "{}")),
    ]

    page = markdown(outcomes, {})

    assert "| flavor | cases | built | logged | refused | PASS | FAIL | refused, MLflow serves |" in page
    assert "| `sklearn` | 1 | 1 | 1 | 0 | 1 | 0 | 0 |" in page
    assert "| `keras` | 2 | 1 | 0 | 1 | 0 | 0 | 1 |" in page
    assert "| **all** | **3** | **2** | **1** | **1** | **1** | **0** | **1** |" in page
    assert page.index("| `sklearn` |") < page.index("| `keras` |")
    assert "| `pytorch` |" not in page


def test_compare_sample_asks_both_servers_only_for_sampled_cases_that_passed_when_run(monkeypatch, tmp_path):
    from tests.support.mlflow_corpus import both_servers

    asked = []
    monkeypatch.setattr(both_servers, "both_answers", lambda uri, _dir: asked.append(uri) or {"how": "same answer"})
    sampled = both_servers.COMPARED[0]
    outcomes = [
        _outcome(sampled, model_uri="models:/m-1", check_passed=True),
        _outcome(both_servers.COMPARED[1], model_uri="models:/m-2", check_passed=False, check_reason="differs"),
        _outcome("sklearn-other", model_uri="models:/m-3", check_passed=True),
    ]

    both_servers.compare_sample(outcomes, tmp_path)

    assert asked == ["models:/m-1"]
    assert [outcome.both_servers for outcome in outcomes] == [{"how": "same answer"}, None, None]
    assert "| PASS; both servers: same answer |" in markdown(outcomes[:1], {})


def test_same_body_compares_mlflow_bodies_by_value_when_answers_differ_in_spelling():
    from tests.support.mlflow_corpus.both_servers import same_body

    assert same_body('{"predictions": [0.1, 2]}', '{"predictions":[0.1000000000000001,2]}')["equal"]
    assert not same_body('{"predictions": [1]}', '{"predictions": [2]}')["equal"]


def test_same_body_judges_by_type_what_mlflows_second_answer_gives_otherwise():
    from tests.support.mlflow_corpus.both_servers import same_body

    want, again = '{"p": [{"yhat": 1.0, "lower": 0.5}]}', '{"p": [{"yhat": 1.0, "lower": 0.4}]}'
    assert same_body(want, '{"p": [{"yhat": 1.0, "lower": 0.45}]}', again)["equal"]
    assert not same_body(want, '{"p": [{"yhat": 1.5, "lower": 0.45}]}', again)["equal"]


def test_log_passes_add_kwargs_to_add_repository_when_the_flavor_cannot_save_the_example(monkeypatch):
    # MLflow 3.17's Keras flavor fails on input_example: the case logs without one, add_repository gets it
    import types

    import mlflow_triton

    calls = []
    monkeypatch.setattr(run, "_log_plain", lambda case, built: types.SimpleNamespace(model_uri="runs:/r/model"))
    monkeypatch.setattr(mlflow_triton, "add_repository", lambda uri, **options: calls.append((uri, options)))
    case = Case("keras-a", "keras", "tests/keras/t.py::test_a", lambda: None, route="add-repository")

    run._log(case, Built("model", {}, {"input_example": [[1.0]]}))
    run._log(case, Built("model", {}, {}), protocol="mlflow")  # make corpus --protocol mlflow

    assert calls == [("runs:/r/model", {"input_example": [[1.0]]}), ("runs:/r/model", {"protocol": "mlflow"})]


def test_log_case_lists_a_case_as_not_built_naming_the_corpus_environment_when_its_flavor_is_missing(tmp_path):
    def build():
        raise ModuleNotFoundError("No module named 'keras'")

    case = Case("keras-a", "keras", "tests/keras/t.py::test_a", build, route="add-repository")
    outcome = _outcome("keras-a", "keras")

    run.log_case(case, outcome, tmp_path)

    assert outcome.verdict == "not built"
    assert outcome.build_error == (
        "ModuleNotFoundError: No module named 'keras' (`make corpus` runs in .venv-corpus, which installs it)"
    )
