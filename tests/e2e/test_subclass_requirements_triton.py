"""Requirements on the real Triton 2.51: a ``transformers.BertModel`` subclass loads and answers (#22.2).

Logged with ``mlflow_triton.pytorch`` it recorded mlflow, torch and cloudpickle only, and Triton failed
to unpickle it (``No module named 'transformers'``). The serving environment is built from the
repository's requirements.txt alone; a cached environment whose packages already satisfy them is
reused: in a full run the Transformers example's, built by tests/e2e/test_runner.py, which pytest
collects before this file (hence its name).
"""

import mlflow.pyfunc
import numpy as np
import pytest

from mlflow_triton import pytorch
from mlflow_triton.local import TritonInstallation, TritonServer, send_shipped_request
from mlflow_triton.local.serving_env import ensure_env_for_requirements, requirement_lines
from tests.support import tiny_models

pytestmark = [pytest.mark.triton, pytest.mark.filterwarnings("ignore")]


def test_real_triton_answers_like_pyfunc_when_the_module_subclasses_a_transformers_model(tmp_path):
    package = tmp_path / "package"
    example = tiny_models.token_ids_example()
    pytorch.save_model(
        tiny_models.tiny_bert_subclass(),
        package,
        input_example=example,
        code_paths=[str(tiny_models.CUSTOM_NET_DIR)],
        triton_model_name="my_bert",
    )
    repository = package / "model_repository" / "my_bert"
    requirements = requirement_lines((repository / "requirements.txt").read_text())
    installation = TritonInstallation.bundled(progress=None)
    env = ensure_env_for_requirements(
        requirements,
        installation.serving_constraints,
        progress=None,
        reuse_superset=True,
        source=str(repository / "requirements.txt"),
    )

    with TritonServer(repository.parent, "my_bert", installation=installation, serving_env=env) as server:
        outputs, _ = send_shipped_request(server.url, repository)

    assert any(line.startswith("transformers==") for line in requirements)
    np.testing.assert_array_equal(outputs["output_0"], mlflow.pyfunc.load_model(str(package)).predict(example))
