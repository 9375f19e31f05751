"""The lean ``requirements.txt`` of a generated repository: mlflow-skinny, the flavor's and the user's lines, and the
distributions that decide the answers pinned to the versions the example was predicted with.

The real-server proof that this set is enough lives in ``tests/e2e`` (every serving environment there is
built from a generated ``requirements.txt``); here: what the file says, for each kind of line.
"""

import importlib.metadata
import json

import mlflow
import pytest

from mlflow_triton import pytorch as mt_pytorch
from mlflow_triton import sklearn as mt_sklearn
from mlflow_triton._serving_requirements import (
    RUNTIME_PACKAGES,
    answer_pins,
    beside_no_stub,
    format_distributions,
    mlflow_bounds,
    not_pinned,
    serving_requirements,
)
from tests.support import tiny_models
from tests.support.answer_pins import expected_answer_pins

BOUNDS = {"numpy": "numpy<3", "pandas": "pandas<4"}
PINS = {"numpy": "numpy==1.26.4", "pandas": "pandas==3.0.6", "pyarrow": "pyarrow==25.0.1"}
PINNED = list(PINS.values())


@pytest.mark.parametrize(
    ("native", "lean"),
    [
        (
            ["mlflow==3.17.2", "scikit-learn==1.9.1", "skops==0.16.0"],
            ["mlflow-skinny==3.17.2", "scikit-learn==1.9.1", "skops==0.16.0", *PINNED],
        ),
        (
            ["mlflow==3.14.0", "torch==2.13.0+cpu", "cloudpickle==3.1.3"],
            ["mlflow-skinny==3.14.0", "torch==2.13.0+cpu", "cloudpickle==3.1.3", *PINNED],
        ),
        # a user's own bounds and markers are kept on mlflow-skinny
        (
            ["mlflow>=3.14,<4", "transformers==5.24.0"],
            ["mlflow-skinny<4,>=3.14", "transformers==5.24.0", *PINNED],
        ),
        (
            ['mlflow==3.17.2; python_version >= "3.10"'],
            ['mlflow-skinny==3.17.2; python_version >= "3.10"', *PINNED],
        ),
        # a line naming numpy, pandas or pyarrow is the user's choice: nothing is added for it
        (
            ["mlflow==3.17.2", "numpy==1.26.4", "Pandas<3", "pyarrow>=20"],
            ["mlflow-skinny==3.17.2", "numpy==1.26.4", "Pandas<3", "pyarrow>=20"],
        ),
    ],
)
def test_serving_requirements_name_mlflow_skinny_when_the_package_names_mlflow(native, lean):
    assert serving_requirements(native, "3.17.2", PINS) == lean


@pytest.mark.parametrize(
    "kept",
    [
        "mlflow[gateway]==3.17.2",  # an extra the user asked for: the full distribution stays
        "mlflow @ https://example.invalid/mlflow-3.17.2-py3-none-any.whl",
    ],
)
def test_serving_requirements_keep_an_mlflow_line_as_written_when_it_asks_for_more_than_mlflow(kept):
    assert serving_requirements([kept, "torch==2.13.0"], "3.17.2", PINS) == [kept, "torch==2.13.0", *PINNED]


def test_serving_requirements_add_mlflow_skinny_when_no_line_names_mlflow():
    assert serving_requirements(["mlflow-tracing==3.17.2", "custom-dep==1.0"], "3.17.2", PINS) == [
        "mlflow-skinny==3.17.2",
        "mlflow-tracing==3.17.2",
        "custom-dep==1.0",
        *PINNED,
    ]


def test_serving_requirements_keep_pip_options_and_drop_comments_and_duplicates_when_present():
    native = [
        "# a comment",
        "",
        "mlflow==3.17.2",
        "--extra-index-url https://example.invalid/simple",
        "skops==0.16.0",
        "skops==0.16.0",
        "  ",
    ]

    assert serving_requirements(native, "3.17.2", PINS) == [
        "mlflow-skinny==3.17.2",
        "--extra-index-url https://example.invalid/simple",
        "skops==0.16.0",
        *PINNED,
    ]


@pytest.mark.parametrize(
    ("versions", "pins"),
    [
        (
            {"numpy": "1.26.4", "pandas": "3.0.6", "pyarrow": "25.0.1"},
            {"numpy": "numpy==1.26.4", "pandas": "pandas==3.0.6", "pyarrow": "pyarrow==25.0.1"},
        ),
        # not installed where the example was predicted: not installed where it is served either
        (
            {"numpy": "1.26.4", "pandas": "2.3.3", "pyarrow": None},
            {"numpy": "numpy==1.26.4", "pandas": "pandas==2.3.3"},
        ),
    ],
)
def test_answer_pins_are_the_predicting_versions_when_installed(versions, pins):
    assert answer_pins(versions, BOUNDS) == pins


@pytest.mark.parametrize(
    ("unpinnable", "pins"),
    [
        # numpy 2 cannot install beside Triton's numpy-1 stubs: MLflow's bound, the server's constraint picks a 1.x
        ({"numpy"}, {"numpy": "numpy<3", "pandas": "pandas==3.0.6", "pyarrow": "pyarrow==25.0.1"}),
        # nor can a pandas that requires numpy 2 (3.1): MLflow's bound; pyarrow has none, so its bare name
        ({"numpy", "pandas", "pyarrow"}, {"numpy": "numpy<3", "pandas": "pandas<4", "pyarrow": "pyarrow"}),
    ],
)
def test_answer_pins_keep_mlflow_bounds_when_a_version_installs_beside_no_triton_stub(unpinnable, pins):
    versions = {"numpy": "2.2.6", "pandas": "3.0.6", "pyarrow": "25.0.1"}

    assert answer_pins(versions, BOUNDS, unpinnable) == pins


REQUIRES = {
    "pandas": ['numpy>=2.0.2; python_version < "3.14"', 'numpy>=2.3.3; python_version >= "3.14"', "tzdata"],
    "pyarrow": ["pytest; extra == 'test'"],
    "old-pandas": ["numpy>=1.23.2", "numpy>=2.1; extra == 'fast'"],
}


@pytest.mark.parametrize(
    ("versions", "unpinnable"),
    [
        ({"numpy": "2.2.6", "pandas": "3.1.1", "pyarrow": "25.0.1", "old-pandas": "3.0.6"}, {"numpy", "pandas"}),
        ({"numpy": "2.2.6", "pyarrow": "25.0.1", "old-pandas": "3.0.6"}, {"numpy"}),
        # under numpy 1 everything installed already installs beside numpy 1
        ({"numpy": "1.26.4", "pandas": "3.1.1", "pyarrow": "25.0.1"}, set()),
        ({"numpy": None, "pandas": "3.1.1"}, set()),
    ],
)
def test_beside_no_stub_names_numpy_2_and_what_requires_it_when_logged_under_numpy_2(versions, unpinnable):
    assert beside_no_stub(versions, requires=REQUIRES.get) == unpinnable


def test_serving_requirements_name_numpy_and_pandas_bare_and_no_pyarrow_when_nothing_is_pinned():
    assert serving_requirements(["mlflow==3.17.2"], "3.17.2", {}) == ["mlflow-skinny==3.17.2", "numpy", "pandas"]


@pytest.mark.parametrize(
    ("lines", "versions", "reasons"),
    [
        (["mlflow-skinny==3.17.2", "numpy==1.26.4", "pandas==3.0.6"], {"numpy": "1.26.4", "pandas": "3.0.6"}, {}),
        # torch's local version label: pinned all the same
        (["torch==2.13.0"], {"torch": "2.13.0+cpu"}, {}),
        (["numpy<3", "pandas==3.0.6"], {"numpy": "2.2.6", "pandas": "3.0.6"}, {"numpy": "numpy<2 picks a version"}),
        (
            ["pandas<3", "cloudpickle"],
            {"pandas": "2.3.3", "cloudpickle": "3.1.3"},
            {"pandas": "'pandas<3'", "cloudpickle": "'cloudpickle'"},
        ),
        (["numpy==1.26.4"], {"numpy": "1.26.4", "pyarrow": None}, {}),
    ],
)
def test_not_pinned_says_why_when_a_line_does_not_pin_the_predicting_version(lines, versions, reasons):
    found = not_pinned(lines, versions, {"numpy"} if versions.get("numpy", "1").startswith("2") else set())

    assert sorted(found) == sorted(reasons)
    assert all(words in found[name] for name, words in reasons.items()), found


def test_mlflow_bounds_are_the_installed_mlflow_requirements_on_numpy_and_pandas_when_mlflow_is_installed():
    from importlib.metadata import requires

    from packaging.requirements import Requirement

    declared = {Requirement(text).name: Requirement(text) for text in requires("mlflow") if ";" not in text}

    assert mlflow_bounds() == {name: f"{name}{declared[name].specifier}" for name in RUNTIME_PACKAGES}


def test_mlflow_bounds_are_empty_when_the_distribution_is_not_installed():
    assert mlflow_bounds("no-such-distribution-mlflow-triton") == {}


@pytest.mark.parametrize(
    ("flavors", "needed"),
    [
        ({"sklearn": {"serialization_format": "skops"}}, ["skops"]),
        ({"sklearn": {"serialization_format": "cloudpickle"}}, ["cloudpickle"]),
        ({"sklearn": {"serialization_format": "pickle"}}, []),
        ({"python_function": {"pickle_module_name": "mlflow.pytorch.pickle_module"}}, ["cloudpickle"]),
        ({"python_function": {"pickle_module_name": "pickle"}}, []),
        ({"python_function": {"python_model": "python_model.pkl"}}, ["cloudpickle"]),
        ({"python_function": {"model_code_path": "agent.py"}}, []),
    ],
    ids=[
        "sklearn skops",
        "sklearn cloudpickle",
        "sklearn pickle",
        "pytorch default",
        "pytorch pickle",
        "PythonModel",
        "model from code",
    ],
)
def test_format_distributions_name_what_the_saved_format_loads_with_when_read_from_the_mlmodel(flavors, needed):
    assert list(format_distributions(flavors)) == needed


def _serving_lines(package):
    text = (package / "model_repository").glob("*/requirements.txt").__next__().read_text(encoding="utf-8")
    return [line for line in text.splitlines() if line and not line.startswith("#")]


def test_save_model_keeps_extra_pip_requirements_in_the_serving_file_when_given(
    tmp_path, fitted_pipeline, example_frame
):
    mt_sklearn.save_model(
        fitted_pipeline, tmp_path / "package", input_example=example_frame, extra_pip_requirements=["custom-dep==1.0"]
    )

    lines = _serving_lines(tmp_path / "package")
    assert lines[0] == f"mlflow-skinny=={mlflow.__version__}"
    assert "custom-dep==1.0" in lines
    assert not [line for line in lines if line.startswith("mlflow==")]
    native = (tmp_path / "package" / "requirements.txt").read_text(encoding="utf-8").splitlines()
    assert f"mlflow=={mlflow.__version__}" in native and "custom-dep==1.0" in native


def test_save_model_writes_the_user_pip_requirements_with_mlflow_skinny_when_given(tmp_path):
    model, example = tiny_models.fresh_tiny_mlp(), tiny_models.mlp_example()

    mt_pytorch.save_model(
        model,
        tmp_path / "package",
        input_example=example,
        pip_requirements=["torch==2.13.0", "cloudpickle", "mlflow==3.17.2"],
    )

    assert _serving_lines(tmp_path / "package") == [
        "torch==2.13.0",
        "cloudpickle",
        "mlflow-skinny==3.17.2",
        *expected_answer_pins(),
    ]


def test_save_model_records_the_predicting_versions_in_validation_json_when_saved(
    tmp_path, fitted_pipeline, example_frame
):
    mt_sklearn.save_model(fitted_pipeline, tmp_path / "package", input_example=example_frame)

    repository = next((tmp_path / "package" / "model_repository").iterdir())
    lines = _serving_lines(tmp_path / "package")
    record = json.loads((repository / "validation.json").read_text(encoding="utf-8"))
    assert lines[-len(expected_answer_pins()) :] == expected_answer_pins()
    names = [line.split("==")[0] for line in lines if "==" in line] + ["numpy", "pandas", "pyarrow"]
    assert record["predicted_with"] == {name: _installed(name) for name in dict.fromkeys(names)}
    unpinned = {line.split("<")[0].split(">")[0] for line in expected_answer_pins() if "==" not in line}
    assert set(record.get("not_pinned", {})) == unpinned


def _installed(name):
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None
