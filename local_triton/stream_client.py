"""``python -m mlflow_triton.local.stream_client GRPC_URL MODEL STREAM_REQUEST_JSON``: stream a ``generate_stream``
body (a streaming model's ``stream_request.json``) over a gRPC stream and print each chunk on its own line as it
arrives; what ``mlflow-triton serve`` prints for a streaming model. Exit status 1 with Triton's error on stderr."""

import json
import sys
from pathlib import Path

from mlflow_triton.shared_contract import REQUEST_TENSOR

from ._stream import grpc_chunks
from .errors import InferenceError


def main(argv: list[str]) -> int:
    grpc_url, model_name, request_path = argv
    body = json.loads(Path(request_path).read_text(encoding="utf-8"))[REQUEST_TENSOR]
    try:
        for chunk in grpc_chunks(grpc_url, model_name, body):
            print(chunk, flush=True)
    except InferenceError as error:
        print(error.triton_error, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
