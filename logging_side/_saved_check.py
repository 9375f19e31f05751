"""``validate_saved_model=True``: reload the copied artifact on CPU in a clean process.

A reload inside the logging process would find the caller's classes already
imported; a fresh interpreter, started in an empty directory without the
caller's ``PYTHONPATH``, proves that the package's own code and requirements are
enough. It loads the artifact with the runtime's ``load_predictor`` and runs the
same codecs Triton runs.
"""

import os
import pickle
import subprocess
import sys
import tempfile

from .errors import ValidationError

CHECK_TIMEOUT_SECONDS = 900


def predict_saved_artifact(artifact, layout, tensors):
    """Decode ``tensors``, predict with the reloaded artifact on CPU, return the output tensors."""
    payload = {
        "artifact": str(artifact),
        "contract": layout.contract.to_json(),
        "inputs": {d.name: (d.data_type, d.dims) for d in layout.inputs},
        "outputs": {d.name: (d.data_type, d.dims) for d in layout.outputs},
        "tensors": tensors,
    }
    with tempfile.TemporaryDirectory(prefix="mlflow-triton-check-") as scratch:
        request, result = os.path.join(scratch, "request.pkl"), os.path.join(scratch, "result.pkl")
        with open(request, "wb") as handle:
            pickle.dump(payload, handle)
        environment = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        try:
            completed = subprocess.run(
                [sys.executable, "-m", "mlflow_triton._saved_check", request, result],
                cwd=scratch,
                env=environment,
                capture_output=True,
                text=True,
                timeout=CHECK_TIMEOUT_SECONDS,
            )
        except subprocess.TimeoutExpired:
            raise ValidationError(
                f"validate_saved_model: reloading and predicting the saved artifact on CPU took longer than "
                f"{CHECK_TIMEOUT_SECONDS} s"
            ) from None
        if completed.returncode != 0 or not os.path.exists(result):
            detail = (completed.stderr or completed.stdout).strip().splitlines()[-15:]
            raise ValidationError(
                "validate_saved_model: the saved artifact could not be reloaded and predicted on CPU in a "
                "clean process (is custom code packaged with code_paths?):\n" + "\n".join(detail)
            )
        with open(result, "rb") as handle:
            return pickle.load(handle)


def _main(request_path, result_path):
    from mlflow_triton.runtime.codecs import StructureCodec
    from mlflow_triton.runtime.loading import load_predictor
    from mlflow_triton.shared_contract import Contract

    with open(request_path, "rb") as handle:
        payload = pickle.load(handle)
    contract = Contract.from_json(payload["contract"])
    inputs = StructureCodec(contract.inputs, payload["inputs"])
    outputs = StructureCodec(contract.outputs, payload["outputs"], prediction=True)
    predictor = load_predictor(payload["artifact"], contract.flavor, "cpu")
    encoded = outputs.to_tensors(predictor.predict(inputs.from_tensors(payload["tensors"])))
    with open(result_path, "wb") as handle:
        pickle.dump(encoded, handle)


if __name__ == "__main__":
    _main(*sys.argv[1:3])
