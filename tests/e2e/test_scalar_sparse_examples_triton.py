"""Examples that are not rows yet (#22.4, #31.3), on the real Triton 2.51: each model logged with the wrapper from
such an example answers its shipped request like ``pyfunc.predict`` on the saved example (the independent oracle).

One server per serving environment, all of its models loaded at once: the scikit-learn models (a list of records,
a dict of scalars, a single text, a sparse matrix) share one, the table-question-answering pipeline needs
Transformers. Environments are reused when a cached one already satisfies the requirements: in a full run the
sklearn and Transformers examples' environments, built by tests/e2e/test_runner.py, which pytest collects before
this file (hence its name).
"""

import pytest

from mlflow_triton import sklearn, transformers
from mlflow_triton.local import TritonInstallation, TritonServer, send_shipped_request
from mlflow_triton.local._compare import differences
from mlflow_triton.local.serving_env import ensure_env_for_requirements, requirement_lines
from tests.support import example_forms
from tests.support.oracle import expected_example_tensors

pytestmark = [pytest.mark.triton, pytest.mark.filterwarnings("ignore")]


def _sklearn_models(root):
    sklearn.save_model(
        example_forms.scalar_record_regressor(),
        root / "records",
        input_example=example_forms.RECORDS,
        triton_model_name="records",
    )
    sklearn.save_model(
        example_forms.scalar_record_regressor(),
        root / "scalar_record",
        input_example=example_forms.SCALAR_RECORD,
        triton_model_name="scalar_record",
    )
    sklearn.save_model(
        example_forms.single_text_regressor(),
        root / "single_text",
        input_example=example_forms.SINGLE_TEXT,
        triton_model_name="single_text",
    )
    sklearn.save_model(
        example_forms.sparse_regressor(),
        root / "sparse_matrix",
        input_example=example_forms.sparse_example("csr"),
        triton_model_name="sparse_matrix",
    )


def _transformers_models(root):
    transformers.save_model(
        example_forms.shared_table_question_answering_pipeline(),
        root / "table_question",
        input_example=example_forms.TABLE_QUESTION,
        triton_model_name="table_question",
    )


@pytest.mark.parametrize("log_models", [_sklearn_models, _transformers_models], ids=["sklearn", "transformers"])
def test_real_triton_answers_like_pyfunc_when_the_example_is_records_a_dict_a_text_or_a_sparse_matrix(
    tmp_path, log_models
):
    log_models(tmp_path)
    packages = sorted(path for path in tmp_path.iterdir() if (path / "MLmodel").is_file())
    repositories = [package / "model_repository" / package.name for package in packages]
    requirements = {line for r in repositories for line in requirement_lines((r / "requirements.txt").read_text())}
    installation = TritonInstallation.bundled(progress=None)
    env = ensure_env_for_requirements(
        sorted(requirements), installation.serving_constraints, progress=None, reuse_superset=True, source="the models"
    )

    with TritonServer(
        [repository.parent for repository in repositories],
        [repository.name for repository in repositories],
        installation=installation,
        serving_env=env,
    ) as server:
        answers = {repository.name: send_shipped_request(server.url, repository).outputs for repository in repositories}

    assert {
        repository.name: differences(expected_example_tensors(package, repository), answers[repository.name])
        for package, repository in zip(packages, repositories)
    } == {repository.name: [] for repository in repositories}
