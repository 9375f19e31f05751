"""``TritonPythonModel``: the entry point Triton's Python backend calls.

``initialize`` reads the contract and tensor declarations from the model
config Triton passes in, then loads ``1/artifact/`` on the instance's device.
``execute`` answers each request on its own: a request that cannot be decoded,
predicted or encoded gets a ``TritonError`` naming the tensor or column, and
the others in the same batch are answered normally.
"""

import json
import pathlib

import triton_python_backend_utils as pb_utils

# <mlflow-triton package imports: removed when composing model.py>
from ..shared_contract.contract import MlflowTritonError, contract_from_model_config
from .codecs import StructureCodec, tensor_types_from_model_config
from .loading import device_for_instance, load_predictor
# </mlflow-triton package imports>

ARTIFACT_DIRECTORY = "artifact"


class TritonPythonModel:
    def initialize(self, args):
        model_config = json.loads(args["model_config"])
        contract = contract_from_model_config(model_config)
        self.inputs = StructureCodec(contract.inputs, tensor_types_from_model_config(model_config, "input"))
        self.outputs = StructureCodec(contract.outputs, tensor_types_from_model_config(model_config, "output"))
        self.device = device_for_instance(args.get("model_instance_kind"), args.get("model_instance_device_id"))
        artifact = pathlib.Path(args["model_repository"]) / str(args["model_version"]) / ARTIFACT_DIRECTORY
        self.predictor = load_predictor(artifact, contract.flavor, self.device)

    def execute(self, requests):
        return [self._answer(request) for request in requests]

    def _answer(self, request):
        try:
            arrays = {}
            for spec in self.inputs.specs:
                tensor = pb_utils.get_input_tensor_by_name(request, spec.tensor)
                if tensor is not None:
                    arrays[spec.tensor] = tensor.as_numpy()
            model_input = self.inputs.from_tensors(arrays)
            try:
                prediction = self.predictor.predict(model_input)
            except Exception as error:
                raise PredictionError(f"Prediction failed: {type(error).__name__}: {error}") from error
            outputs = self.outputs.to_tensors(prediction)
        except Exception as error:
            return pb_utils.InferenceResponse(output_tensors=[], error=pb_utils.TritonError(str(error)))
        return pb_utils.InferenceResponse(
            output_tensors=[pb_utils.Tensor(name, array) for name, array in outputs.items()]
        )

    def finalize(self):
        self.predictor = None


class PredictionError(MlflowTritonError, RuntimeError):
    """The model's own ``predict`` raised; the message keeps its type and text."""
