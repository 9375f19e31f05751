"""The logged model the export reads: its repository, contract, pyfunc and example.

Everything comes from a local copy: ``triton.load_model`` downloads the MLflow
model into the export's own temporary workspace, and the model is loaded from
that copy's ``1/artifact/`` (the package the generated repository serves). The
logged model itself is only read.
"""

import dataclasses
import pathlib

from mlflow.models import Model

from mlflow_triton import triton
from mlflow_triton.repository.config import declarations, read_config
from mlflow_triton.repository.guard import files_directory
from mlflow_triton.repository.layout import CONFIG_FILE, MLMODEL_FILE, TensorLayout, artifact_directory, codecs_for
from mlflow_triton.runtime.loading import load_predictor
from mlflow_triton.shared_contract import MLFLOW_PROTOCOL

from ._errors import ExportError, UnsupportedModelError

PYFUNC_FLAVOR = "python_function"


@dataclasses.dataclass(frozen=True)
class LoggedModel:
    """What the export needs of one logged model."""

    model_uri: str
    name: str  # the logged Triton model name
    layout: TensorLayout  # contract + logged tensor declarations
    artifact: pathlib.Path
    mlmodel: Model
    predictor: object  # mlflow.pyfunc.PyFuncModel
    example_tensors: dict  # the saved input example as logged-form tensors

    @property
    def flavor(self):
        return self.layout.contract.flavor

    @property
    def predict_fn(self):
        return self.mlmodel.flavors.get(PYFUNC_FLAVOR, {}).get("predict_fn", "predict")

    def raw_model(self):
        """The framework object ``pyfunc.predict`` calls (the fitted Pipeline, the torch module)."""
        return self.predictor.get_raw_model()

    def predict(self, tensors):
        """``pyfunc.predict`` on logged-form input tensors, answered as logged-form output tensors.

        The generated repository's own codecs build the model input and split the
        prediction: exactly what that repository would answer on Triton.
        """
        input_codec, output_codec = codecs_for(self.layout)
        return output_codec.to_tensors(self.predictor.predict(input_codec.from_tensors(tensors)))


def read_logged_model(model_uri, workspace):
    """Download ``model_uri`` into ``workspace`` and load what the export needs (CPU)."""
    front = triton.load_model(model_uri, dst_path=str(workspace))  # the name clients call
    repository = files_directory(front)  # a batched model's files are behind its zero-row guard's front
    config, contract = read_config(repository / CONFIG_FILE)
    inputs, outputs = declarations(config)
    layout = TensorLayout(contract=contract, inputs=inputs, outputs=outputs)
    if contract.protocol == MLFLOW_PROTOCOL:
        raise UnsupportedModelError(
            f"Model {model_uri!r} speaks MLflow's serving protocol (a JSON or CSV body in, MLflow's JSON body out), "
            "which no ONNX graph speaks: export-onnx converts repositories with typed tensors; add the source again "
            "with --protocol tensors (the default) and export that one"
        )
    artifact = artifact_directory(repository)
    mlmodel = Model.load(str(artifact / MLMODEL_FILE))
    example = mlmodel.load_input_example(str(artifact))
    if example is None:
        raise ExportError(f"Model {model_uri!r} has no saved input example; re-log it with mlflow-triton")
    input_codec, _ = codecs_for(layout)
    return LoggedModel(
        model_uri=model_uri,
        name=front.name,
        layout=layout,
        artifact=artifact,
        mlmodel=mlmodel,
        predictor=load_predictor(artifact, contract.flavor, "cpu"),
        example_tensors=input_codec.to_tensors(example),
    )
