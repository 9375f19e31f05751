"""``add-repository`` writes only repositories Triton loads, and proving them leaves the user's store as it was.

Four sources logged with plain MLflow in a fresh sqlite store, each as issue #53 found it: a scikit-learn classifier
saved in MLflow's default skops format with ``pip_requirements`` that omit skops, a PyTorch module pickled with
cloudpickle (MLflow's default ``pickle_module``) with requirements that omit cloudpickle, a ``PythonModel`` that cannot
predict without its ``scale`` param and has no input example (its input is an ``inputs`` + ``params`` body given with
``--input``), and a ``ResponsesAgent``. Each is added with ``mlflow-triton add-repository`` and the four are proved by
one ``mlflow-triton check``: all PASS, no trace lands in the store and nothing appears in the current directory (the
store was created there, so its Default experiment keeps its artifacts in ``./mlruns``, where MLflow writes traces).
"""

import json
import re
import textwrap

import mlflow
import mlflow.pyfunc
import mlflow.pytorch
import mlflow.sklearn
import numpy as np
import pandas as pd
import pytest
import torch
from mlflow.models import infer_signature
from sklearn.linear_model import LogisticRegression

from tests.e2e.test_cli import UserStore
from tests.e2e.test_cli import mlflow_triton as console
from tests.support.mlflow_server import using_tracking

pytestmark = pytest.mark.triton

X = pd.DataFrame({"length": [1.0, 2.0, 3.0, 4.0], "width": [0.5, 0.1, 0.9, 0.3]})
SCALED_CODE = textwrap.dedent(
    """\
    import mlflow


    class Scaled(mlflow.pyfunc.PythonModel):
        def predict(self, context, model_input, params=None):
            return model_input[["length"]] * params["scale"]


    mlflow.models.set_model(Scaled())
    """
)
AGENT_CODE = textwrap.dedent(
    """\
    import mlflow
    from mlflow.pyfunc import ResponsesAgent
    from mlflow.types.responses import ResponsesAgentRequest, ResponsesAgentResponse


    class Echo(ResponsesAgent):
        def predict(self, request: ResponsesAgentRequest) -> ResponsesAgentResponse:
            text = " ".join(str(item.content) for item in request.input).upper()
            return ResponsesAgentResponse(output=[self.create_text_output_item(text=text, id="answer")])


    mlflow.models.set_model(Echo())
    """
)


def traces(client):
    experiments = [experiment.experiment_id for experiment in client.search_experiments()]
    return len(client.search_traces(locations=experiments, flush=True))


@pytest.fixture(scope="module")
def sources(tmp_path_factory):
    """The user's store, created in the user's current directory, and the four sources registered in it."""
    root = tmp_path_factory.mktemp("add-loads")
    cwd = root / "cwd"
    cwd.mkdir()
    tracking_uri = f"sqlite:///{root / 'mlflow.db'}"
    (root / "scaled.py").write_text(SCALED_CODE)
    (root / "agent.py").write_text(AGENT_CODE)
    with pytest.MonkeyPatch.context() as patch, using_tracking(tracking_uri):
        patch.chdir(cwd)  # the Default experiment's artifacts: ./mlruns of the user's directory
        client = mlflow.MlflowClient()
        client.search_experiments()  # creates the store (and its Default experiment) here
        mlflow.set_experiment(experiment_id=mlflow.create_experiment("sources", (root / "artifacts").as_uri()))
        with mlflow.start_run():
            mlflow.sklearn.log_model(
                LogisticRegression().fit(X, [0, 0, 1, 1]),
                name="skops",
                input_example=X.head(2),
                pip_requirements=["scikit-learn", "numpy", "pandas"],  # no skops: model.skops needs it
                registered_model_name="skops",
            )
            network = torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.ReLU())
            mlflow.pytorch.log_model(
                network,
                name="network",
                input_example=np.ones((2, 2), dtype=np.float32),
                pip_requirements=[f"torch=={torch.__version__.split('+')[0]}"],  # no cloudpickle
                registered_model_name="network",
            )
            mlflow.pyfunc.log_model(
                name="scaled",
                python_model=str(root / "scaled.py"),
                signature=infer_signature(X, X[["length"]], params={"scale": 1.0}),
                registered_model_name="scaled",
            )
            mlflow.pyfunc.log_model(
                name="agent",
                python_model=str(root / "agent.py"),
                input_example={"input": [{"role": "user", "content": "hi"}]},
                registered_model_name="agent",
            )
        before = traces(client)
    assert list(cwd.iterdir()) == []
    return UserStore(tracking_uri, cwd), before


def test_check_passes_every_added_source_and_the_store_and_directory_stay_as_they_were(sources, tmp_path):
    store, traces_before = sources
    body = tmp_path / "body.json"
    body.write_text(json.dumps({"inputs": X.head(2).to_dict("records"), "params": {"scale": 3.0}}))
    said = {}
    for name in ("skops", "network", "scaled", "agent"):
        extra = ["--input", str(body)] if name == "scaled" else []
        added = console("add-repository", f"models:/{name}/1", *extra, store=store)
        assert added.returncode == 0, added.stdout + added.stderr[-4000:]
        said[name] = added.stdout.splitlines()
    uris = [f"models:/{name}/2" for name in said]

    checked = console("check", *uris, "--work-dir", str(tmp_path / "work"), store=store)

    assert checked.returncode == 0, checked.stdout + checked.stderr[-6000:]
    assert re.findall(r"^(PASS|FAIL) (\S+): ", checked.stdout, re.M) == [("PASS", uri) for uri in uris]
    assert said["skops"][2].startswith("serving requirements: added 'skops==")
    assert [line.split(";")[0] for line in (said["network"][-2], said["agent"][-2])] == [
        "repository: typed tensors (one tensor per field of the signature: requests as in request.json)",
        "repository: MLflow's protocol (the body `mlflow models serve` takes, in the BYTES tensor 'request')",
    ]
    with using_tracking(store.tracking_uri):
        assert traces(mlflow.MlflowClient()) == traces_before
    assert list(store.directory.iterdir()) == []
