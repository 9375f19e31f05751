"""``check`` says where the serving environment, the one ``pyfunc.predict`` answers in and the logging one differ, among
the distributions that decide the answers (validation.json's ``predicted_with``); versions read with
importlib.metadata, so the numpy 2 and MLflow-floor legs test their own."""

import importlib.metadata
import json

from mlflow_triton.command_line import as_progress
from mlflow_triton.local import check as check_module
from mlflow_triton.local._oracle_env import answer_distributions, differences, note
from mlflow_triton.local.installation import TritonInstallation
from mlflow_triton.local.serving_env import ENV_RECORD
from tests.support.fake_triton import fake_triton

NAMES = ("mlflow-skinny", "numpy", "pandas", "pyarrow")


def _here(name):
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def _model_dir(tmp_path, predicted_with=None, requirements=("mlflow-skinny==3.17.2",)):
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    (model_dir / "requirements.txt").write_text("# header\n" + "".join(f"{line}\n" for line in requirements))
    record = {"mode": "in-memory"}
    if predicted_with is not None:
        record["predicted_with"] = predicted_with
    (model_dir / "validation.json").write_text(json.dumps(record))
    return model_dir


def _env(tmp_path, installed):
    env = tmp_path / "env"
    env.mkdir()
    freeze = [f"{name}=={version}" for name, version in installed.items() if version is not None]
    (env / ENV_RECORD).write_text(json.dumps({"installed": [*freeze, "pip==25.3"]}))
    return env


def _here_all():
    return {name: _here(name) for name in NAMES}


def test_differences_are_empty_when_served_here_and_at_logging_alike(tmp_path):
    model_dir = _model_dir(tmp_path, _here_all())

    assert differences(model_dir, _env(tmp_path, _here_all())) == {}


def test_differences_name_each_distribution_served_at_another_version_or_not_at_all_when_they_differ(tmp_path):
    model_dir = _model_dir(tmp_path, _here_all())
    served = _here_all() | {"numpy": "0.0.1", "pyarrow": None}

    found = differences(model_dir, _env(tmp_path, served))

    assert found == {
        "numpy": {"served": "0.0.1", "here": _here("numpy"), "logged": _here("numpy")},
        **(
            {"pyarrow": {"served": None, "here": _here("pyarrow"), "logged": _here("pyarrow")}}
            if _here("pyarrow")
            else {}
        ),
    }


def test_differences_name_what_the_logging_environment_had_when_served_and_here_agree_without_it(tmp_path):
    # logged under numpy 2: the stub's numpy<2 serves, and a check run under numpy 1 agrees with it
    logged = "2.99.0"  # no environment running this test has it (the numpy-2 leg's own numpy would agree)
    model_dir = _model_dir(tmp_path, _here_all() | {"numpy": logged})

    found = differences(model_dir, _env(tmp_path, _here_all()))

    assert found == {"numpy": {"served": _here("numpy"), "here": _here("numpy"), "logged": logged}}


def test_differences_compare_served_and_here_only_when_validation_json_predates_predicted_with(tmp_path):
    model_dir = _model_dir(tmp_path, requirements=("numpy==0.0.1",))

    found = differences(model_dir, _env(tmp_path, _here_all() | {"numpy": "0.0.1"}))

    assert found == {"numpy": {"served": "0.0.1", "here": _here("numpy")}}


def test_answer_distributions_are_the_requirements_and_numpy_pandas_pyarrow_when_validation_json_predates_them(
    tmp_path,
):
    model_dir = _model_dir(tmp_path, requirements=("mlflow-skinny==3.17.2", "Scikit_Learn==1.9.1", "--pre", "pandas<4"))

    assert sorted(answer_distributions(model_dir)) == ["mlflow-skinny", "numpy", "pandas", "pyarrow", "scikit-learn"]


def test_note_names_versions_and_the_installation_constraint_when_the_stub_forces_numpy_1():
    line = note(
        "models:/m/1",
        {
            "numpy": {"served": "1.26.4", "here": "2.2.6", "logged": "2.2.6"},
            "pyarrow": {"served": None, "here": "25.0.1"},
        },
        ("numpy<2",),
    )

    assert line.startswith("NOTE models:/m/1: the serving environment, this one (where pyfunc.predict answers) and")
    assert (
        "numpy 1.26.4 served (the Triton installation's constraint numpy<2), 2.2.6 here, 2.2.6 at logging; "
        "pyarrow absent served, 25.0.1 here."
    ) in line
    assert "\n" not in line


def test_check_reports_and_prints_the_note_before_the_verdict_when_the_serving_environment_differs(
    tmp_path, monkeypatch
):
    model_dir = _model_dir(tmp_path, _here_all())
    env = _env(tmp_path, _here_all() | {"pandas": "0.0.1"})
    (env / "pyvenv.cfg").write_text("version = 3.11.7\n")
    monkeypatch.setattr(check_module, "ensure_serving_env", lambda *args, **kwargs: env)
    binary, backends = fake_triton(tmp_path)
    installation = TritonInstallation.custom(binary, backends, serving_constraints=("numpy<2",))
    report = check_module.ValidationReport(model="m")

    check_module._serving_environment(model_dir, None, installation, report, as_progress(None))

    pandas = _here("pandas")
    assert report.serving_env["versions_differ"] == {"pandas": {"served": "0.0.1", "here": pandas, "logged": pandas}}
    assert report.environment_note == note("m", report.serving_env["versions_differ"], ("numpy<2",))
    monkeypatch.setattr(check_module, "validate_model", lambda *args, **kwargs: report)
    said = []

    check_module.check_models(["m"], tmp_path / "work", installation, progress=None, out=said.append)

    assert said == [report.environment_note, report.line()]


def test_check_prints_no_note_when_nothing_differs(tmp_path, monkeypatch):
    # a distribution installed on neither side is no difference either
    model_dir = _model_dir(tmp_path, _here_all() | {"no-such-distribution-mlflow-triton": None})
    env = _env(tmp_path, _here_all())
    monkeypatch.setattr(check_module, "ensure_serving_env", lambda *args, **kwargs: env)
    binary, backends = fake_triton(tmp_path)
    report = check_module.ValidationReport(model="m")

    check_module._serving_environment(
        model_dir, None, TritonInstallation.custom(binary, backends), report, as_progress(None)
    )

    assert report.environment_note is None and "versions_differ" not in report.serving_env
