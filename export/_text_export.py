"""A text model's export: tokenizer, ONNX network and post-processing.

``--backend python`` writes one model directory, ``<name>_onnx/``: Triton's
Python backend runs ``1/model.py`` (``_text_onnx_model.py``), which tokenizes
with ``1/text_pipeline.py`` (the same ``_text_pipeline.py`` the parity check
runs here), ``1/text_pipeline.json`` and ``1/tokenizer.json``, runs
``1/model.onnx`` with onnxruntime in the same process and post-processes. It
is batched (``max_batch_size``, ``dynamic_batching``; the text input
``dims: [1]`` without reshape, so Triton core itself refuses a request without
texts): the requests of one execution are padded to their own longest text
and run as one batch, whatever their lengths. A feature-extraction model
(whose pyfunc answers only the first text's token embeddings, which no batch
axis carries) is the same model unbatched.

``--backend onnxruntime`` needs the network in Triton's ONNX Runtime backend,
so it writes two: ``<name>_onnx/``, an unbatched front (``_text_model.py``)
that tokenizes, sends each request's feeds padded to a multiple of 8 with a
BLS request to ``<name>_onnx_network/`` (``model.onnx`` behind Triton's dynamic
batcher, which joins only feeds of one shape) and post-processes; its config
names the network in ``mlflow_triton_forward_to``, so ``serve`` loads both.
"""

import dataclasses
import json
import math
import pathlib
import shutil
import tempfile

import numpy as np
from tritonclient.grpc import model_config_pb2

from mlflow_triton.repository import request_files
from mlflow_triton.repository.config import render_config
from mlflow_triton.repository.guard import FORWARD_PARAMETER
from mlflow_triton.repository.layout import CONFIG_FILE, MODEL_FILE, REQUIREMENTS_FILE, VERSION_DIRECTORY
from mlflow_triton.shared_contract import CONTRACT_PARAMETER, writer_version

from . import _config, _deps, _parity, _text, _text_pipeline, _writer
from ._errors import ExportError, ParityError
from ._handoff import onnx_record
from ._parity import generation_settings

#: Instances of the --backend onnxruntime text front: each waits on its forwarded request (BLS), so this many
#: requests reach the network's batcher at once.
FRONT_INSTANCES = 16
NETWORK_SUFFIX = "_network"
PIPELINE_FILE = pathlib.Path(_text_pipeline.__file__)
FRONT_MODEL = pathlib.Path(__file__).with_name("_text_model.py")  # --backend onnxruntime: tokenizing front, BLS
ONE_MODEL = pathlib.Path(__file__).with_name("_text_onnx_model.py")  # --backend python: all in one model
#: Padding of a front's feeds for a network behind Triton's batcher (which joins only feeds of one shape); none in one
#: model, which pads each execution to its own longest text.
FRONT_PAD_MULTIPLE = 8
#: The network computes in float32: every float output is compared with float32's tolerance.
RTOL, ATOL = 1e-4, 1e-5
GENERATED_EXAMPLES = 40
EDGE_TEXTS = ("", "héllo wörld — 日本語 🙂 ñ", "  ", "hello")


def network_name(name):
    return f"{name}{NETWORK_SUFFIX}"


def export_text(source, out_dir, name, *, max_batch_size, backend):
    """Convert, check parity, write ``out_dir/<name>`` (and, ``--backend onnxruntime``, ``out_dir/<name>_network``);
    returns ``out_dir/<name>``.

    ``export_onnx`` calls it once onnx, onnxruntime and hypothesis are imported; the tokenizer library is its own.
    """
    tokenizers = _deps.require("tokenizers", "the exported text model's tokenizer")
    one_model = backend == "python"
    behind = None if one_model else network_name(name)
    _writer.check_target(out_dir / name)
    if behind is not None:
        _writer.check_target(out_dir / behind)
    text_model = _text.convert(source, max_batch_size, pad_multiple=1 if one_model else FRONT_PAD_MULTIPLE)
    onnx_bytes = text_model.network.SerializeToString()
    batched = one_model and joins(text_model.spec)

    def fill_pipeline(directory):
        version = directory / VERSION_DIRECTORY
        version.mkdir()
        (version / MODEL_FILE).write_text((ONE_MODEL if one_model else FRONT_MODEL).read_text(encoding="utf-8"))
        (version / "text_pipeline.py").write_text(PIPELINE_FILE.read_text(encoding="utf-8"), encoding="utf-8")
        (version / _text_pipeline.SPEC_FILE).write_text(_text.spec_text(text_model.spec), encoding="utf-8")
        (version / _text_pipeline.TOKENIZER_FILE).write_text(text_model.tokenizer_json, encoding="utf-8")
        if one_model:
            config = _one_model_config(source, name, max_batch_size, batched)
        else:
            config = _front_config(source, name, behind)
        (directory / CONFIG_FILE).write_text(render_config(config), encoding="utf-8")

    with _staged_front(fill_pipeline) as front_files:
        pipeline = _text_pipeline.TextPipeline(front_files / VERSION_DIRECTORY)
        session = _parity.session(onnx_bytes)
        parity = check_text_parity(source, pipeline, session, max_batch_size)

    def fill_files(directory):
        """The files of the export as a whole: the network model's, or the one model's beside its pipeline."""
        version = directory / VERSION_DIRECTORY
        version.mkdir(exist_ok=True)
        (version / _config.ONNX_FILENAME).write_bytes(onnx_bytes)
        if not one_model:
            config = _network_config(behind, text_model, backend, max_batch_size)
            (directory / CONFIG_FILE).write_text(render_config(config), encoding="utf-8")
        (directory / REQUIREMENTS_FILE).write_text(requirements(backend, tokenizers.__version__), encoding="utf-8")
        written = _write_request(directory, source, batched)
        report = _handoff(source, name, behind, backend, max_batch_size, text_model, onnx_bytes, parity, written)
        (directory / "handoff.json").write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")

    if one_model:

        def fill_one(directory):
            fill_pipeline(directory)
            fill_files(directory)

        return _writer.write_directory(out_dir, name, fill_one)
    network = _writer.write_directory(out_dir, behind, fill_files)
    try:
        return _writer.write_directory(out_dir, name, fill_pipeline)
    except BaseException:
        shutil.rmtree(network, ignore_errors=True)  # nothing is left behind
        raise


def joins(spec):
    """Whether the model answers each text on its own row, so Triton may join requests (not feature-extraction,
    whose pyfunc answers the first text's token embeddings)."""
    return spec["task"] != "feature-extraction"


class _staged_front:
    """The front's files in a temporary directory, for the parity check to run them before anything is written."""

    def __init__(self, fill):
        self.fill = fill

    def __enter__(self):
        self.temporary = tempfile.TemporaryDirectory(prefix="mlflow-triton-text-")
        directory = pathlib.Path(self.temporary.name) / "front"
        directory.mkdir()
        self.fill(directory)
        return directory

    def __exit__(self, *exc):
        self.temporary.cleanup()


def requirements(backend, tokenizers_version):
    lines = [
        "# Serving environment of this exported text model: tokenizers and numpy for the front's 1/model.py",
        "# (no MLflow, torch or transformers); Triton 2.51's Python-backend stub needs numpy<2.",
        f"tokenizers=={tokenizers_version}",
    ]
    if backend == "python":
        lines.append(f"onnxruntime=={_deps.require('onnxruntime').__version__}")
    return "\n".join([*lines, "numpy<2", ""])


def _front_config(source, name, behind):
    config = model_config_pb2.ModelConfig(name=name, backend="python", max_batch_size=0)
    for declarations, message, target in (
        (source.layout.inputs, model_config_pb2.ModelInput, config.input),
        (source.layout.outputs, model_config_pb2.ModelOutput, config.output),
    ):
        for declaration in declarations:
            target.append(
                message(
                    name=declaration.name,
                    data_type=model_config_pb2.DataType.Value(declaration.data_type),
                    dims=list(declaration.dims),
                )
            )
    config.instance_group.append(
        model_config_pb2.ModelInstanceGroup(count=FRONT_INSTANCES, kind=model_config_pb2.ModelInstanceGroup.KIND_CPU)
    )
    config.parameters[FORWARD_PARAMETER].string_value = behind
    # The logged mapping, unused by the front itself: `check` encodes pyfunc's answer with it (the logged outputs).
    config.parameters[CONTRACT_PARAMETER].string_value = source.layout.contract.to_json()
    return config


def _one_model_config(source, name, max_batch_size, batched):
    """The one Python model's config: batched (text input ``dims: [1]``, no reshape: Triton core refuses a request
    without texts), or the logged tensors unbatched (feature-extraction); one instance, onnxruntime's threads."""
    config = _config.batched_config(name, backend="python", max_batch_size=max_batch_size)
    if not batched:
        config.max_batch_size = 0
        config.ClearField("dynamic_batching")
    for declarations, message, target in (
        (source.layout.inputs, model_config_pb2.ModelInput, config.input),
        (source.layout.outputs, model_config_pb2.ModelOutput, config.output),
    ):
        for declaration in declarations:
            dims = list(declaration.dims[1:] if batched else declaration.dims)
            entry = message(
                name=declaration.name,
                data_type=model_config_pb2.DataType.Value(declaration.data_type),
                dims=dims or [1],
            )
            if not dims and message is model_config_pb2.ModelOutput:
                entry.reshape.SetInParent()  # [texts] answered as [texts, 1]: Triton applies an output's reshape
            target.append(entry)
    # The logged mapping, batched as this config is; unused by model.py: `check` encodes pyfunc's answer with it.
    contract = source.layout.contract
    size = config.max_batch_size
    contract = dataclasses.replace(
        contract, max_batch_size=size, version=writer_version(contract.inputs, contract.outputs, size)
    )
    config.parameters[CONTRACT_PARAMETER].string_value = contract.to_json()
    return config


def _network_config(name, text_model, backend, max_batch_size):
    config = _config.batched_config(name, backend=backend, max_batch_size=max_batch_size)
    for input_name in text_model.spec["network_inputs"]:
        config.input.append(
            model_config_pb2.ModelInput(name=input_name, data_type=model_config_pb2.TYPE_INT64, dims=[-1])
        )
    graph_output = text_model.network.graph.output[0]
    rank = len(graph_output.type.tensor_type.shape.dim)
    config.output.append(
        model_config_pb2.ModelOutput(
            name=text_model.spec["network_output"], data_type=model_config_pb2.TYPE_FP32, dims=[-1] * (rank - 1)
        )
    )
    if rank == 3:  # [batch, sequence, hidden]: the hidden size is fixed
        config.output[0].dims[-1] = graph_output.type.tensor_type.shape.dim[2].dim_value
    else:  # [batch, classes]
        config.output[0].dims[0] = graph_output.type.tensor_type.shape.dim[1].dim_value
    return config


def _write_request(directory, source, batched):
    [declaration] = source.layout.inputs
    texts = source.example_tensors[declaration.name]
    return request_files.write_request(
        directory,
        {declaration.name: texts.reshape(-1, 1) if batched else texts},
        {declaration.name: declaration.data_type},
        {declaration.name: "text"},
        {d.name: d.data_type for d in source.layout.outputs},
    )


# --- parity -------------------------------------------------------------------------------------


def check_text_parity(source, pipeline, session, max_batch_size, examples=GENERATED_EXAMPLES):
    """Compare the front's pipeline over onnxruntime with ``pyfunc.predict``; the parity section or ParityError."""
    comparison = _TextComparison(source, pipeline, session)
    example = [_as_str(item) for item in source.example_tensors[pipeline.spec["input"]].ravel()]
    words = _vocabulary_words(pipeline)
    longest = " ".join((words * (pipeline.spec["max_positions"] + 2))[: pipeline.spec["max_positions"] + 2])
    fixed = [
        ("the saved input example", example),
        ("each example text on its own", None),
        (f"the example repeated past max_batch_size ({max_batch_size + 1} texts, two network runs)", None),
        ("an empty text, unicode, whitespace, a known word (each its own request)", None),
        ("a text longer than the model's maximum, alone and beside a short one", None),
        ("a batch of mixed lengths", None),
        ("requests of different lengths joined in one execution (one batch, padded to the longest)", None),
    ]
    comparison.compare(example, fixed[0][0])
    for text in example:
        comparison.compare([text], fixed[1][0])
    comparison.compare((example * (max_batch_size + 1))[: max_batch_size + 1], fixed[2][0])
    for text in EDGE_TEXTS:
        comparison.compare([text], fixed[3][0])
    comparison.compare([longest], fixed[4][0])
    comparison.compare([words[0] if words else "a", longest], fixed[4][0])
    mixed = [" ".join(words[: 1 + (i * 3) % max(1, len(words))]) for i in range(6)]
    comparison.compare(mixed, fixed[5][0])
    if joins(pipeline.spec):
        requests = [[text] for text in mixed] + [example, [mixed[0], mixed[-1]]]
        comparison.compare_joined(requests, fixed[6][0])
        comparison.compare_joined([*requests[:2], [EDGE_TEXTS[0]], [longest], requests[-1]], fixed[6][0])
    generated = _generated(comparison, words, examples)
    return {
        "passed": True,
        "reference": "mlflow.pyfunc predict of the logged model (its 1/artifact), through the generated "
        "repository's codecs, one request at a time; the export's own text_pipeline.py over onnxruntime",
        "tolerances": {
            "floats": {"rtol": RTOL, "atol": ATOL},
            "rule": "|export - pyfunc| <= atol + rtol * |pyfunc| for every float (the network computes in float32; "
            "floats inside JSON outputs too); text, labels and JSON structure exactly; a request pyfunc.predict "
            "refuses must be refused by the export (400), and only those",
        },
        "inputs_compared": [{"what": what, "requests": comparison.counts.get(what, 0)} for what, _ in fixed]
        + [generated],
        "refused_by_both": comparison.refused,
        "largest_differences": comparison.largest,
    }


class _TextComparison:
    def __init__(self, source, pipeline, session):
        self.source, self.pipeline, self.session = source, pipeline, session
        self.output = pipeline.spec["network_output"]
        self.largest = {name: 0.0 for name in pipeline.spec["outputs"]}
        self.counts, self.refused = {}, 0

    def run(self, feeds):
        return self.session.run([self.output], feeds)[0]

    def compare(self, texts, what):
        self.counts[what] = self.counts.get(what, 0) + 1
        try:
            actual = self.pipeline.answer(list(texts), self.run)
        except _text_pipeline.TextRequestError as error:
            actual = error
        self._compare_answer(texts, actual, what)

    def _compare_answer(self, texts, actual, what):
        name = self.pipeline.spec["input"]
        tensors = {name: np.array([text.encode("utf-8") for text in texts], dtype=object)}
        try:
            expected = self.source.predict(tensors)
        except Exception as error:  # noqa: BLE001 - pyfunc refuses these texts: the export must too
            expected = error
        if isinstance(expected, Exception) or isinstance(actual, Exception):
            if isinstance(expected, Exception) and isinstance(actual, Exception):
                self.refused += 1
                return
            raise ParityError(
                f"On {what} {_shown(texts)}: pyfunc.predict "
                + (f"raised {type(expected).__name__}: {expected}" if isinstance(expected, Exception) else "answered")
                + " but the export "
                + (f"refused it: {actual}" if isinstance(actual, Exception) else "answered")
                + "; nothing was written"
            )
        for output, want in expected.items():
            got = actual[output]
            self._check(output, np.asarray(want), np.asarray(got), texts, what)

    def compare_joined(self, requests, what):
        """``pipeline.answer_joined`` of ``requests`` (lists of texts), each answer against ``pyfunc.predict`` of that
        request alone: a joined execution answers every request as alone, and refuses only those pyfunc refuses."""
        self.counts[what] = self.counts.get(what, 0) + 1
        answers = self.pipeline.answer_joined([list(texts) for texts in requests], self.run)
        for texts, actual in zip(requests, answers):
            self._compare_answer(texts, actual, f"{what} (one of {len(requests)} requests)")

    def _check(self, output, want, got, texts, what):
        if want.shape != got.shape:
            raise ParityError(
                f"Output `{output}` on {what} {_shown(texts)}: shape {list(got.shape)}, pyfunc.predict "
                f"{list(want.shape)}; nothing was written"
            )
        if want.dtype.kind == "f":
            _close(output, want.astype(np.float64).ravel(), got.astype(np.float64).ravel(), texts, what, self)
            return
        for index, (one, other) in enumerate(zip(want.ravel(), got.ravel())):
            one, other = _as_str(one), _as_str(other)
            if one == other:
                continue
            try:
                parsed_one, parsed_other = json.loads(one), json.loads(other)
            except ValueError:
                parsed_one = parsed_other = None
            if isinstance(parsed_one, dict) and _json_close(parsed_one, parsed_other, output, self):
                continue
            raise ParityError(
                f"Output `{output}` element {index} on {what} {_shown(texts)}: export {other!r}, pyfunc.predict "
                f"{one!r}; nothing was written"
            )


def _close(output, want, got, texts, what, comparison):
    gap = np.abs(got - want)
    limit = ATOL + RTOL * np.abs(want)
    if gap.size:
        comparison.largest[output] = max(comparison.largest[output], float(gap.max()))
    if np.any(gap > limit):
        worst = int(np.argmax(gap - limit))
        raise ParityError(
            f"Output `{output}` on {what} {_shown(texts)}: element {worst} is {got[worst]!r}, pyfunc.predict "
            f"{want[worst]!r} (difference {gap[worst]:.3g} > atol {ATOL:g} + rtol {RTOL:g} * |pyfunc|); nothing was "
            "written"
        )


def _json_close(want, got, output, comparison):
    if not isinstance(got, dict) or list(want) != list(got):
        return False
    for key, value in want.items():
        other = got[key]
        if isinstance(value, float) and isinstance(other, float):
            gap = abs(value - other)
            comparison.largest[output] = max(comparison.largest[output], gap)
            if not math.isclose(other, value, rel_tol=RTOL, abs_tol=ATOL):
                return False
        elif value != other:
            return False
    return True


def _generated(comparison, words, examples):
    hypothesis = _deps.require("hypothesis")
    from hypothesis import given
    from hypothesis import strategies as st

    word_texts = st.lists(st.sampled_from(words or ["a"]), min_size=0, max_size=12).map(" ".join)
    texts = st.one_of(word_texts, st.text(max_size=40))
    before = comparison.counts.get("generated", 0)

    @generation_settings(examples)
    @given(st.lists(texts, min_size=1, max_size=6))
    def compare_generated(batch):
        comparison.compare(batch, "generated")

    try:
        compare_generated()
    except hypothesis.errors.HypothesisException as error:  # pragma: no cover - a Hypothesis setup problem
        raise ExportError(f"The generated parity check could not run: {error}; nothing was written") from None
    return {
        "what": "Hypothesis-generated requests of 1-6 texts (derandomized): words of the tokenizer's vocabulary "
        "joined by spaces (0-12 words), or any Unicode text up to 40 characters",
        "examples": examples,
        "requests": comparison.counts.get("generated", 0) - before,
    }


def _vocabulary_words(pipeline):
    """Plain words of the tokenizer's vocabulary (no special or sub-word tokens), for texts the model knows."""
    vocabulary = pipeline.tokenizer.get_vocab()
    return sorted(word for word in vocabulary if word.isalpha() and word.isascii() and len(word) > 1)[:200]


def _as_str(value):
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


def _shown(texts, limit=3):
    shown = [text if len(text) <= 60 else text[:57] + "..." for text in texts[:limit]]
    return repr(shown) + (f" (+{len(texts) - limit} more)" if len(texts) > limit else "")


# --- handoff.json -------------------------------------------------------------------------------


def _handoff(source, name, behind, backend, max_batch_size, text_model, onnx_bytes, parity, written):

    import mlflow_triton

    ort = _deps.require("onnxruntime")
    model = text_model.network
    spec = text_model.spec
    return {
        "exported_model": name,
        "network_model": behind,
        "backend": backend,
        "max_batch_size": max_batch_size,
        "task": spec["task"],
        "source": {
            "model_uri": _oracle_uri(source.model_uri),
            "triton_model_name": source.name,
            "flavor": source.flavor,
            "mlflow_version": source.mlmodel.mlflow_version,
        },
        "what_runs_where": _what_runs_where(name, behind, max_batch_size, spec),
        "pipeline": {key: value for key, value in spec.items() if key not in ("outputs",)},
        "converter": text_model.converter,
        "onnx": onnx_record(model, onnx_bytes),
        "onnxruntime_version": ort.__version__,
        "parity": parity,
        "request_files": written,
        "not_verified": _not_verified(backend, ort.__version__),
        "mlflow_triton_version": mlflow_triton.__version__,
    }


def _what_runs_where(name, behind, max_batch_size, spec):
    tokenizer = f"1/text_pipeline.py (tokenizers {spec_version('tokenizers')}, numpy)"
    if behind is None:
        how = (
            f"dynamic batching up to {max_batch_size} texts: the texts of every request of an execution tokenized at "
            "once, padded to the longest of them"
            if joins(spec)
            else "unbatched (feature-extraction answers each request's first text): the request's texts tokenized"
        )
        return {
            name: f"Triton Python backend, one instance: 1/model.py + {tokenizer} + 1/model.onnx (onnxruntime, "
            f"in process); {how}, one network run, post-processing"
        }
    return {
        name: f"Triton Python backend, unbatched, {FRONT_INSTANCES} instances: 1/model.py + {tokenizer}: the "
        f"request's texts tokenized at once, padded to the longest (a multiple of {spec['pad_multiple']}), one BLS "
        f"request per {max_batch_size} texts, post-processing",
        behind: f"Triton's ONNX Runtime backend, dynamic batching up to {max_batch_size} rows",
    }


def _oracle_uri(model_uri):
    """The model URI as given, or a local model directory's absolute path (`check` loads it from anywhere)."""
    path = pathlib.Path(model_uri).expanduser()
    return str(path.resolve()) if "://" not in model_uri and path.is_dir() else model_uri


def spec_version(module_name):
    return getattr(_deps.require(module_name, "the exported text model"), "__version__", "unknown")


def _not_verified(backend, ort_version):
    notes = [
        "Floats: the network computes in float32; outputs logged as FP64 carry float32 rounding (compared within "
        f"atol {ATOL:g} + rtol {RTOL:g} * |pyfunc|)",
        "Texts beyond the generated ones (other scripts, very long batches) and GPU execution were not compared",
        "Throughput and latency: not measured by the export",
    ]
    if backend == "onnxruntime":
        notes.insert(
            0,
            "Triton's ONNX Runtime backend did not run the network: the Triton bundled with mlflow-triton's tooling "
            "has only the Python backend. Serve both directories with a Triton that has the onnxruntime backend and "
            f"send request.json before relying on it (that backend embeds its own onnxruntime, not {ort_version})",
        )
    return notes
