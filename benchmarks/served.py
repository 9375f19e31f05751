"""Served throughput and latency: the generated repository side by side with what a user would run instead.

One fitted sklearn Pipeline (``examples.sklearn_example.fitted_pipeline``: two numeric columns and
one text column -> ``predict_proba``) is saved once with ``mlflow_triton.sklearn.save_model``.
The same MLflow model is then served five ways, all on 127.0.0.1 and all at the same time:

* **a** -- the generated repository (``model_repository/<name>/``: generated ``model.py`` with the
  runtime codecs, generated ``config.pbtxt``) on the real ``tritonserver`` (bundled 2.51);
* **b** -- ``mlflow models serve -m <package> --env-manager local`` (uvicorn, 1 worker: MLflow's
  default), fed ``{"dataframe_split": ...}`` of the same rows;
* **c** -- a minimal hand-written ``model.py`` (the floor of Python-backend overhead): it builds a
  DataFrame straight from the input tensors (text tensors decoded with ``bytes.decode``) and calls
  ``pyfunc.predict``, no mapping logic; it has the same tensors and the same ``1/artifact`` copy,
  one instance like **a**, and is loaded in the same ``tritonserver`` as **a**;
* **d** -- MLServer 1.7.1 with its MLflow runtime on the same package (``mlserver start``, its own
  virtualenv; see ``benchmarks/peers.py``), fed the same V2 JSON body as **a** with the DataFrame's
  column names as input names;
* **e** -- the ``--backend python`` ONNX export of the same package (``mlflow_triton.export``:
  onnxruntime in a small ``model.py``, dynamic batching, ``max_batch_size`` 4096) on a second
  ``tritonserver`` with its own serving environment (onnxruntime + numpy<2), fed the export's own
  shipped request scaled to the same rows (``[rows, 1]`` per column).

Triton **a** and **c** receive the identical v2 JSON body (``{"inputs": [...], "outputs": [...]}``,
JSON outputs, as in the shipped ``request.json``). Before any load, each target's answer for each
request size is compared with ``pyfunc.predict`` in this process (the export within its parity
tolerance, the others to 1e-9).

Each cell (rows x concurrent clients) is measured in rounds, alternating a, b, c, d, e, a, b, ...;
the rounds are pooled per target.
"""

from __future__ import annotations

import http.client
import json
import shutil
import time
import urllib.request
from pathlib import Path

import numpy as np

from benchmarks.load import LoadResult, run_load
from benchmarks.peers import (
    MlflowServe,
    MLServer,
    ensure_mlserver_env,
    export_body,
    export_python_backend,
    mlserver_body,
)
from mlflow_triton.repository.guard import files_directory, served_directories

TARGETS = {
    "a": "generated repository on Triton",
    "b": "mlflow models serve",
    "c": "minimal model.py on Triton (floor)",
    "d": "MLServer (MLflow runtime)",
    "e": "ONNX export (--backend python) on Triton",
}
#: (rtol, atol) of the answer check before load: the export within its parity tolerance, the others exactly.
TOLERANCES = {"e": (1e-4, 1e-5)}
EXACT = (1e-9, 1e-12)
FLOOR_MODEL = "floor"

FLOOR_MODEL_PY = '''\
"""Hand-written floor for the benchmark: pyfunc.predict, no mapping logic."""
import pathlib

import mlflow.pyfunc
import numpy as np
import pandas as pd
import triton_python_backend_utils as pb_utils

COLUMNS = {columns!r}  # input tensor -> DataFrame column
TEXT = {text!r}  # BYTES input tensors, decoded to str
OUTPUT = {output!r}
OUTPUT_DTYPE = np.dtype({output_dtype!r})


class TritonPythonModel:
    def initialize(self, args):
        artifact = pathlib.Path(args["model_repository"]) / str(args["model_version"]) / "artifact"
        self.model = mlflow.pyfunc.load_model(str(artifact))

    def execute(self, requests):
        responses = []
        for request in requests:
            data = {{}}
            for tensor, column in COLUMNS.items():
                array = pb_utils.get_input_tensor_by_name(request, tensor).as_numpy()
                data[column] = [item.decode("utf-8") for item in array] if tensor in TEXT else array
            prediction = self.model.predict(pd.DataFrame(data))
            output = pb_utils.Tensor(OUTPUT, np.ascontiguousarray(prediction, dtype=OUTPUT_DTYPE))
            responses.append(pb_utils.InferenceResponse(output_tensors=[output]))
        return responses
'''


# ----------------------------------------------------------------------------- preparation


def save_package(work_dir: Path) -> tuple[Path, Path]:
    """Save the example Pipeline with mlflow_triton; returns (MLflow package, generated model dir)."""
    from examples.sklearn_example import fitted_pipeline
    from mlflow_triton import sklearn as triton_sklearn

    package = work_dir / "classifier"
    shutil.rmtree(package, ignore_errors=True)
    pipeline, frame = fitted_pipeline()
    triton_sklearn.save_model(pipeline, package, input_example=frame.iloc[:3], pyfunc_predict_fn="predict_proba")
    (model_dir,) = (package / "model_repository").iterdir()
    return package, model_dir


def build_repository(model_dir: Path, repo_root: Path) -> str:
    """``repo_root/<generated>`` (copy) and ``repo_root/floor`` (same artifact, minimal model.py)."""
    from google.protobuf import text_format
    from tritonclient.grpc import model_config_pb2

    from mlflow_triton.repository.config import read_config
    from mlflow_triton.shared_contract.contract import TRITON_TO_NUMPY

    shutil.rmtree(repo_root, ignore_errors=True)
    repo_root.mkdir(parents=True)
    shutil.copytree(model_dir, repo_root / model_dir.name)

    config, contract = read_config(model_dir / "config.pbtxt")
    floor_config = model_config_pb2.ModelConfig()
    floor_config.CopyFrom(config)
    floor_config.name = FLOOR_MODEL
    for key in list(floor_config.parameters):  # the same config minus the contract
        del floor_config.parameters[key]
    (output,) = floor_config.output
    fields = contract.inputs.fields
    source = FLOOR_MODEL_PY.format(
        columns={f.tensor: f.name for f in fields},
        text=sorted(f.tensor for f in fields if f.content is not None),
        output=output.name,
        output_dtype=TRITON_TO_NUMPY[model_config_pb2.DataType.Name(output.data_type)],
    )
    floor = repo_root / FLOOR_MODEL
    (floor / "1").mkdir(parents=True)
    shutil.copytree(model_dir / "1" / "artifact", floor / "1" / "artifact")
    (floor / "1" / "model.py").write_text(source, encoding="utf-8")
    (floor / "config.pbtxt").write_text(text_format.MessageToString(floor_config), encoding="utf-8")
    return model_dir.name


def request_bodies(model_dir: Path, export_dir: Path, rows: int, seed: int = 7):
    """(frame, {form: body}) for ``rows`` rows: Triton v2 JSON, mlflow-serve dataframe_split, MLServer, export."""
    from examples.sklearn_example import training_frame
    from mlflow_triton.repository.config import declarations, read_config
    from mlflow_triton.repository.request_files import json_request
    from mlflow_triton.runtime.codecs import StructureCodec

    frame, _ = training_frame(rows=rows, seed=seed)
    config, contract = read_config(model_dir / "config.pbtxt")
    inputs, outputs = declarations(config)
    codec = StructureCodec(contract.inputs, {d.name: (d.data_type, d.dims) for d in inputs})
    tensors = codec.to_tensors(frame)
    triton_body = json_request(tensors, {d.name: d.data_type for d in inputs}, [d.name for d in outputs])
    mlflow_body = {
        "dataframe_split": {"columns": list(frame.columns), "data": frame.astype(object).to_numpy().tolist()}
    }
    return frame, {
        "triton": json.dumps(triton_body).encode(),
        "mlflow": json.dumps(mlflow_body).encode(),
        "mlserver": mlserver_body(triton_body, {f.tensor: f.name for f in contract.inputs.fields}),
        "export": export_body(export_dir, triton_body),
    }


def _wait_model_ready(server, name: str, timeout: float = 180.0) -> None:
    """Wait for a second model of ``server`` (TritonServer waits for its own model only)."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with opener.open(f"{server.url}/v2/models/{name}/ready", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            pass
        request = urllib.request.Request(
            f"{server.url}/v2/repository/index", data=b"{}", headers={"Content-Type": "application/json"}
        )
        try:
            with opener.open(request, timeout=2) as response:
                for entry in json.loads(response.read()):
                    if entry.get("name") == name and entry.get("state") == "UNAVAILABLE":
                        raise RuntimeError(
                            f"Triton could not load {name!r}: {entry.get('reason')}\n{server.log_tail(30)}"
                        )
        except (OSError, ValueError):
            pass
        time.sleep(0.25)
    raise RuntimeError(f"Triton model {name!r} not ready after {timeout:.0f}s\n{server.log_tail(30)}")


def _post(port: int, path: str, body: bytes) -> dict:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    try:
        conn.request("POST", path, body=body, headers={"Content-Type": "application/json"})
        response = conn.getresponse()
        payload = response.read()
    finally:
        conn.close()
    if response.status != 200:
        raise RuntimeError(f"POST {path} -> HTTP {response.status}: {payload[:500]!r}")
    return json.loads(payload)


def _check_answer(key: str, form: str, answer: dict, expected: np.ndarray) -> None:
    if form == "mlflow":
        got = np.asarray(answer["predictions"], dtype=float)
    else:
        (output,) = answer["outputs"]
        got = np.asarray(output["data"], dtype=float).reshape(output["shape"])
    rtol, atol = TOLERANCES.get(key, EXACT)
    if got.shape != expected.shape or not np.allclose(got, expected, rtol=rtol, atol=atol):
        raise AssertionError(f"target {key} ({TARGETS[key]}) answered differently from pyfunc.predict")


# ----------------------------------------------------------------------------- measurement


def measure(
    work_dir: Path, *, rows=(1, 1000), clients=(1, 4), duration=10.0, rounds=2, warmup=3, progress=print
) -> dict:
    """Run the whole served comparison; returns ``{"cells": [...], "triton_version": ...}``."""
    import mlflow.pyfunc

    from mlflow_triton.local import TritonInstallation, TritonServer, ensure_serving_env

    work_dir = Path(work_dir)
    work_dir.mkdir(parents=True, exist_ok=True)
    progress("[served] saving the sklearn Pipeline with mlflow_triton.sklearn.save_model ...")
    package, model_dir = save_package(work_dir)
    repo_root = work_dir / "repository"
    name = build_repository(model_dir, repo_root)
    progress("[served] exporting it with mlflow_triton.export.export_onnx(backend='python') ...")
    export_dir = export_python_backend(package, work_dir / "onnx-repository")
    batched = files_directory(export_dir)  # the guard's batched model: its statistics count the batches
    installation = TritonInstallation.bundled(progress=progress)
    env = ensure_serving_env(model_dir / "requirements.txt", installation.serving_constraints, progress=progress)
    export_env = ensure_serving_env(batched / "requirements.txt", installation.serving_constraints, progress=progress)
    mlserver_env = ensure_mlserver_env(package, progress=progress)

    pyfunc_model = mlflow.pyfunc.load_model(str(package))
    requests = {}
    for n in rows:
        frame, bodies = request_bodies(model_dir, export_dir, n)
        requests[n] = {"expected": np.asarray(pyfunc_model.predict(frame), dtype=float), **bodies}

    progress(
        "[served] starting tritonserver (generated + floor models), mlflow models serve, MLServer and "
        "tritonserver (ONNX export) ..."
    )
    with (
        TritonServer(
            repo_root,
            name,
            installation=installation,
            serving_env=env,
            log_path=work_dir / "tritonserver.log",
            extra_args=(f"--load-model={FLOOR_MODEL}",),
        ) as server,
        MlflowServe(package, work_dir / "mlflow-serve.log") as mlflow_serve,
        MLServer(mlserver_env, package, name, work_dir / "mlserver", work_dir / "mlserver.log") as mlserver,
        TritonServer(
            export_dir.parent,
            [directory.name for directory in served_directories(export_dir)],  # the guard's front and batched model
            installation=installation,
            serving_env=export_env,
            log_path=work_dir / "tritonserver-onnx.log",
        ) as onnx_server,
    ):
        _wait_model_ready(server, FLOOR_MODEL)
        endpoints = {
            "a": (server.http_port, f"/v2/models/{name}/infer", "triton"),
            "b": (mlflow_serve.port, "/invocations", "mlflow"),
            "c": (server.http_port, f"/v2/models/{FLOOR_MODEL}/infer", "triton"),
            "d": (mlserver.port, f"/v2/models/{name}/infer", "mlserver"),
            "e": (onnx_server.http_port, f"/v2/models/{export_dir.name}/infer", "export"),
        }
        for req in requests.values():
            for key, (port, path, form) in endpoints.items():
                _check_answer(key, form, _post(port, path, req[form]), req["expected"])
        progress(f"[served] all five targets answer like pyfunc.predict (rows {', '.join(map(str, rows))})")

        cells = []
        for n in rows:
            for c in clients:
                per_target = {key: [] for key in endpoints}
                batching = {"inference_count": 0, "execution_count": 0}  # of e, warm-up requests included
                for r in range(rounds):
                    for key, (port, path, form) in endpoints.items():
                        before = _execution_stats(port, batched.name) if key == "e" else None
                        result = run_load(
                            port,
                            path,
                            requests[n][form],
                            concurrency=c,
                            duration=duration,
                            warmup=warmup,
                            work_dir=work_dir / "load",
                        )
                        if before is not None:
                            after = _execution_stats(port, batched.name)
                            for count in batching:
                                batching[count] += after[count] - before[count]
                        per_target[key].append(result)
                        progress(
                            f"[served] rows={n:<5} clients={c} round {r + 1}/{rounds} {key}: "
                            f"{result.rps:8.1f} req/s  p50 {result.percentile_ms(50):7.2f} ms"
                            + (f"  ERRORS: {result.errors[:2]}" if result.errors else "")
                        )
                pooled = {key: LoadResult.pooled(results) for key, results in per_target.items()}
                cells.append(
                    {
                        "rows": n,
                        "clients": c,
                        "targets": {key: summarize(p) for key, p in pooled.items()},
                        "export_batching": batching,
                    }
                )
        triton_version = server.version()
    return {
        "cells": cells,
        "triton_version": triton_version,
        "duration": duration,
        "rounds": rounds,
        "targets": TARGETS,
        "mlserver_version": _mlserver_version(mlserver_env),
        "export_max_batch_size": json.loads((batched / "handoff.json").read_text())["max_batch_size"],
    }


def _execution_stats(port: int, model: str) -> dict:
    """Triton's counts for ``model``: inferences (rows of batch) and executions (model runs).

    Fewer executions than inferences means requests were batched (for 1-row requests, inferences =
    requests).
    """
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("GET", f"/v2/models/{model}/stats")
        [stats] = json.loads(conn.getresponse().read())["model_stats"]
    finally:
        conn.close()
    return {key: int(stats[key]) for key in ("inference_count", "execution_count")}


def _mlserver_version(env: Path) -> str:
    record = json.loads((env / "mlflow-triton-env.json").read_text())
    return next(
        (line.split("==", 1)[1] for line in record.get("installed", []) if line.startswith("mlserver==")), "unknown"
    )


def summarize(result: LoadResult) -> dict:
    return {
        "rps": result.rps,
        "p50_ms": result.percentile_ms(50),
        "p99_ms": result.percentile_ms(99),
        "requests": result.requests,
        "errors": result.errors[:5],
    }
