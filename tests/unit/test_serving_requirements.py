"""The lean ``requirements.txt`` of a generated repository: mlflow-skinny, the flavor's and the user's lines.

The real-server proof that this set is enough lives in ``tests/e2e`` (every serving environment there is
built from a generated ``requirements.txt``); here: what the file says, for each kind of line.
"""

import mlflow
import pytest

from mlflow_triton import pytorch as mt_pytorch
from mlflow_triton import sklearn as mt_sklearn
from mlflow_triton._serving_requirements import RUNTIME_PACKAGES, mlflow_bounds, serving_requirements
from tests.support import tiny_models

BOUNDS = {"numpy": "numpy<3", "pandas": "pandas<4"}


@pytest.mark.parametrize(
    ("native", "lean"),
    [
        (
            ["mlflow==3.17.2", "scikit-learn==1.9.1", "skops==0.16.0"],
            ["mlflow-skinny==3.17.2", "scikit-learn==1.9.1", "skops==0.16.0", "numpy<3", "pandas<4"],
        ),
        (
            ["mlflow==3.14.0", "torch==2.13.0+cpu", "cloudpickle==3.1.3"],
            ["mlflow-skinny==3.14.0", "torch==2.13.0+cpu", "cloudpickle==3.1.3", "numpy<3", "pandas<4"],
        ),
        # a user's own bounds and markers are kept on mlflow-skinny
        (
            ["mlflow>=3.14,<4", "transformers==5.24.0"],
            ["mlflow-skinny<4,>=3.14", "transformers==5.24.0", "numpy<3", "pandas<4"],
        ),
        (
            ['mlflow==3.17.2; python_version >= "3.10"'],
            ['mlflow-skinny==3.17.2; python_version >= "3.10"', "numpy<3", "pandas<4"],
        ),
        # a line naming numpy or pandas is the user's choice: nothing is added for it
        (["mlflow==3.17.2", "numpy==1.26.4", "Pandas<3"], ["mlflow-skinny==3.17.2", "numpy==1.26.4", "Pandas<3"]),
    ],
)
def test_serving_requirements_name_mlflow_skinny_when_the_package_names_mlflow(native, lean):
    assert serving_requirements(native, "3.17.2", BOUNDS) == lean


@pytest.mark.parametrize(
    "kept",
    [
        "mlflow[gateway]==3.17.2",  # an extra the user asked for: the full distribution stays
        "mlflow @ https://example.invalid/mlflow-3.17.2-py3-none-any.whl",
    ],
)
def test_serving_requirements_keep_an_mlflow_line_as_written_when_it_asks_for_more_than_mlflow(kept):
    assert serving_requirements([kept, "torch==2.13.0"], "3.17.2", BOUNDS) == [
        kept,
        "torch==2.13.0",
        "numpy<3",
        "pandas<4",
    ]


def test_serving_requirements_add_mlflow_skinny_when_no_line_names_mlflow():
    assert serving_requirements(["mlflow-tracing==3.17.2", "custom-dep==1.0"], "3.17.2", BOUNDS) == [
        "mlflow-skinny==3.17.2",
        "mlflow-tracing==3.17.2",
        "custom-dep==1.0",
        "numpy<3",
        "pandas<4",
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

    assert serving_requirements(native, "3.17.2", {}) == [
        "mlflow-skinny==3.17.2",
        "--extra-index-url https://example.invalid/simple",
        "skops==0.16.0",
        "numpy",
        "pandas",
    ]


def test_mlflow_bounds_are_the_installed_mlflow_requirements_on_numpy_and_pandas_when_mlflow_is_installed():
    from importlib.metadata import requires

    from packaging.requirements import Requirement

    declared = {Requirement(text).name: Requirement(text) for text in requires("mlflow") if ";" not in text}

    assert mlflow_bounds() == {name: f"{name}{declared[name].specifier}" for name in RUNTIME_PACKAGES}


def test_mlflow_bounds_are_empty_when_the_distribution_is_not_installed():
    assert mlflow_bounds("no-such-distribution-mlflow-triton") == {}


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
        *mlflow_bounds().values(),
    ]
