"""Tiny models built in code (no model hub), shared by the framework tests.

Each ``shared_*`` builder runs once per test session (cached): tests must not
change what it returns. Tests that need to change a model (training mode,
device) take a ``fresh_*`` copy instead.

``serve_request(repository)`` / ``initialized_model_py(repository, kind,
device_id)`` drive a generated ``1/model.py`` through the fake pb_utils with
the config and shipped request.json, as Triton would.

``sqlite_tracking(tmp_path)`` points MLflow at a fresh sqlite store in
``tmp_path``: a copy of one migrated database per process, because creating
the schema takes seconds.

The custom PyTorch architecture lives in ``tests/support/custom_net/``, a
package of its own that is imported under its top-level name ``custom_net``,
exactly what ``code_paths=[CUSTOM_NET_DIR]`` provides when a clean interpreter
reloads the model.
"""

import atexit
import contextlib
import copy
import functools
import importlib.util
import itertools
import json
import os
import pathlib
import shutil
import sys
import tempfile

import numpy as np

from tests.support.environment import preserved_environment

# No model hub: set before huggingface_hub reads its settings (on first import).
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

CUSTOM_NET_DIR = pathlib.Path(__file__).resolve().parent / "custom_net"
CUSTOM_NET_MODULE = "custom_net"

MLP_SIZES = {"input_size": 4, "hidden_size": 8, "output_size": 3}
GENERATION_CONFIG = {"max_new_tokens": 4, "do_sample": False}
TEXT_EXAMPLE = ["hello world", "the model serves text"]
LABELS = ("NEGATIVE", "POSITIVE")
_WORDS = (
    "the a model serves text example input hello world triton mlflow signature tensor request answer small tiny network"
).split()
_SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]")
_MODEL_PY_IMPORTS = itertools.count()


# --- PyTorch: a custom architecture from a separate package ------------------------------------


def import_custom_net():
    """The ``custom_net`` package, imported by its top-level name (no sys.path change)."""
    if CUSTOM_NET_MODULE in sys.modules:
        return sys.modules[CUSTOM_NET_MODULE]
    spec = importlib.util.spec_from_file_location(
        CUSTOM_NET_MODULE, CUSTOM_NET_DIR / "__init__.py", submodule_search_locations=[str(CUSTOM_NET_DIR)]
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[CUSTOM_NET_MODULE] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[CUSTOM_NET_MODULE]
        raise
    return module


@functools.cache
def shared_tiny_mlp():
    """``custom_net.TinyMLP(4, 8, 3)`` with seeded weights, in eval mode. Do not change it."""
    import torch

    custom_net = import_custom_net()
    generator_state = torch.random.get_rng_state()
    try:
        torch.manual_seed(0)
        model = custom_net.TinyMLP(**MLP_SIZES)
    finally:
        torch.random.set_rng_state(generator_state)
    return model.eval()


def fresh_tiny_mlp():
    """A private copy of ``shared_tiny_mlp()`` that a test may change."""
    return copy.deepcopy(shared_tiny_mlp())


def scripted_half_output():
    """A scripted ``Linear(4, 3)`` answering float16 for float32 input (scripted: no class code to package)."""
    import torch

    class HalfOutput(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = torch.nn.Linear(4, 3)

        def forward(self, x):
            return self.linear(x).half()

    return torch.jit.script(HalfOutput().eval())


def scripted_scaled_linear():
    """A scripted ``Linear(4, 3)`` whose ``forward(x, scale=1.0)`` multiplies its answer by ``scale``.

    MLflow's PyTorch pyfunc passes ``params`` to ``forward`` as keyword arguments, so a signature with
    a params schema (``infer_signature(x, y, params={"scale": 1.0})``) makes ``scale`` a request parameter.
    Scripted: no class code to package.
    """
    import torch

    class ScaledLinear(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = torch.nn.Linear(4, 3)

        def forward(self, x, scale: float = 1.0):
            return self.linear(x) * scale

    generator_state = torch.random.get_rng_state()
    try:
        torch.manual_seed(0)
        module = ScaledLinear()
    finally:
        torch.random.set_rng_state(generator_state)
    return torch.jit.script(module.eval())


def scripted_gate():
    """A scripted module whose ``forward(x, threshold=0.5, tag="", count=1)`` answers
    ``((x >= threshold) + code(tag)) * count``, ``code(tag)`` being the sum of ``(position + 1) * ord(character)``.

    Its answer shows the last bit of the double ``threshold`` (for ``x`` equal to it), every character of ``tag``
    (U+0000 included) and ``count``: the request parameters Triton's front ends can change (issue #31.2).
    """
    import torch

    class Gate(torch.nn.Module):
        def forward(self, x, threshold: float = 0.5, tag: str = "", count: int = 1):
            code = 0
            for position, character in enumerate(tag):
                code += (position + 1) * ord(character)
            return ((x >= threshold).to(torch.float64) + float(code)) * count

    return torch.jit.script(Gate().eval())


def gate_signature():
    """The gate's signature: a float64 ``(-1, 1)`` input and output, params ``threshold``, ``tag`` and ``count``."""
    import numpy as np
    from mlflow.models import infer_signature

    example = np.array([[0.25], [0.75]])
    return infer_signature(example, example, params={"threshold": 0.5, "tag": "", "count": 1})


def gate_example():
    """``(input, params)``: ``x`` holds 5/11 (a double Triton's JSON reader changes), the params 5/11, a tag holding
    U+0000 and 3; the gate answers ``[[(1 + 1189) * 3], [(1 + 1189) * 3]]`` for it."""
    import numpy as np

    return np.array([[5 / 11], [0.75]]), {"threshold": 5 / 11, "tag": "ab\x00cd", "count": 3}


def tiny_bert_subclass():
    """``custom_net.bert.MyBertModel`` over a 1-layer, 16-dim ``BertConfig`` (no model hub), seeded, in eval mode."""
    import importlib

    from transformers import BertConfig

    import_custom_net()
    bert = importlib.import_module(f"{CUSTOM_NET_MODULE}.bert")
    config = BertConfig(
        vocab_size=len(_SPECIAL_TOKENS) + len(_WORDS),
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=32,
    )
    return seeded(lambda: bert.MyBertModel(config))


def token_ids_example():
    """An int64 ``(2, 5)`` batch of token ids for ``tiny_bert_subclass()``."""
    return np.array([[2, 5, 6, 7, 3], [2, 8, 9, 3, 0]], dtype=np.int64)


def mlp_example(rows=2):
    """A float32 ``(rows, 4)`` input for the tiny MLP."""
    return np.linspace(-1.0, 1.0, rows * MLP_SIZES["input_size"], dtype=np.float32).reshape(rows, -1)


# --- Transformers: tiny pipelines around a WordLevel tokenizer ---------------------------------


@functools.cache
def shared_tokenizer():
    """A ``PreTrainedTokenizerFast`` over a small whitespace WordLevel vocabulary."""
    return word_level_tokenizer(_WORDS, _SPECIAL_TOKENS)


def word_level_tokenizer(words, special_tokens):
    """A ``PreTrainedTokenizerFast`` over ``special_tokens`` then ``words`` (WordLevel, whitespace, no hub):
    [PAD] [UNK] [CLS] [SEP] as pad/unk/cls(bos)/sep(eos), and [MASK] as the mask token when it is listed."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {token: index for index, token in enumerate([*special_tokens, *words])}
    backend = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    backend.decoder = decoders.WordPiece()  # joins words with spaces
    mask = {"mask_token": "[MASK]"} if "[MASK]" in special_tokens else {}
    return PreTrainedTokenizerFast(
        tokenizer_object=backend,
        unk_token="[UNK]",
        pad_token="[PAD]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        bos_token="[CLS]",
        eos_token="[SEP]",
        **mask,
    )


def seeded(build):
    """``build().eval()`` with torch's generator seeded 0, its state restored afterwards (tiny models repeat)."""
    import torch

    generator_state = torch.random.get_rng_state()
    try:
        torch.manual_seed(0)
        return build().eval()
    finally:
        torch.random.set_rng_state(generator_state)


@functools.cache
def shared_text_generation_pipeline():
    """A text-generation pipeline: GPT-2 with 1 layer, 2 heads, 16-dim embeddings. Do not change it."""
    return text_generation_pipeline(shared_tokenizer(), n_positions=32)


def text_generation_pipeline(tokenizer, n_positions):
    """A seeded GPT-2 text-generation pipeline over ``tokenizer``: 1 layer, 2 heads, 16-dim embeddings."""
    from transformers import GPT2Config, GPT2LMHeadModel, pipeline

    config = GPT2Config(
        vocab_size=len(tokenizer),
        n_positions=n_positions,
        n_layer=1,
        n_head=2,
        n_embd=16,
        bos_token_id=tokenizer.cls_token_id,
        eos_token_id=tokenizer.sep_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    model = seeded(lambda: GPT2LMHeadModel(config))
    return pipeline("text-generation", model=model, tokenizer=tokenizer)


def tiny_bert_config(tokenizer, max_positions, **extra):
    """A ``BertConfig`` of 1 layer, 2 heads and a 16-dim hidden size over ``tokenizer``'s vocabulary."""
    from transformers import BertConfig

    return BertConfig(
        vocab_size=len(tokenizer),
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=max_positions,
        pad_token_id=tokenizer.pad_token_id,
        **extra,
    )


@functools.cache
def shared_text_classification_pipeline():
    """A text-classification pipeline: BERT with 1 layer, 16-dim hidden size, 2 labels. Do not change it."""
    from transformers import BertForSequenceClassification, pipeline

    tokenizer = shared_tokenizer()
    config = tiny_bert_config(
        tokenizer,
        32,
        id2label=dict(enumerate(LABELS)),
        label2id={label: i for i, label in enumerate(LABELS)},
    )
    model = seeded(lambda: BertForSequenceClassification(config))
    return pipeline("text-classification", model=model, tokenizer=tokenizer)


def text_classification_pipeline_without_attention_mask():
    """The shared BERT classifier behind a tokenizer that returns no attention mask (``model_input_names`` without
    it): when the pipeline pads texts to one length, the model attends to the [PAD] tokens too."""
    from transformers import pipeline

    tokenizer = word_level_tokenizer(_WORDS, _SPECIAL_TOKENS)
    tokenizer.model_input_names = ["input_ids"]
    return pipeline("text-classification", model=shared_text_classification_pipeline().model, tokenizer=tokenizer)


def fresh_text_classification_pipeline():
    """A pipeline around a private copy of the shared BERT model, which a test may change."""
    from transformers import pipeline

    shared = shared_text_classification_pipeline()
    return pipeline("text-classification", model=copy.deepcopy(shared.model), tokenizer=shared.tokenizer)


# --- Driving a generated repository through the fake pb_utils ----------------------------------


def triton_model_config(repository):
    """``config.pbtxt`` as the dict Triton passes to ``initialize`` (JSON, int64 dims as strings)."""
    from google.protobuf import json_format

    from mlflow_triton.repository.config import read_config

    config, _ = read_config(pathlib.Path(repository) / "config.pbtxt")
    as_dict = json_format.MessageToDict(config, preserving_proto_field_name=True)
    as_dict["max_batch_size"] = config.max_batch_size
    return as_dict


def request_arrays(repository):
    """The input tensors of the shipped ``request.json``, as Triton hands them to model.py."""
    from tests.support.shipped_request import arrays_from_request_json

    return arrays_from_request_json(pathlib.Path(repository) / "request.json")


def initialized_model_py(repository, kind="CPU", device_id="0"):
    """Import the repository's generated ``1/model.py`` and ``initialize`` it like Triton does."""
    from tests.support import fake_pb_utils

    repository = pathlib.Path(repository)
    name = f"generated_model_py_{next(_MODEL_PY_IMPORTS)}"
    module = fake_pb_utils.load_model_py(repository / "1" / "model.py", name=name)
    instance = module.TritonPythonModel()
    instance.initialize(
        {
            "model_config": json.dumps(triton_model_config(repository)),
            "model_instance_kind": kind,
            "model_instance_device_id": device_id,
            "model_repository": str(repository),
            "model_version": "1",
            "model_name": repository.name,
        }
    )
    return instance


def initialized_on_pretend_gpu(repository, monkeypatch, cpu_setting, device_id="1"):
    """``initialize`` model.py as a KIND_GPU instance on a machine without a GPU.

    Records the MLFLOW_DEFAULT_PREDICTION_DEVICE value each load sees, then loads on
    the CPU instead (``cpu_setting``: "cpu" for PyTorch, "-1" for Transformers).
    Returns (instance, requested device settings).
    """
    import mlflow.pyfunc

    from mlflow_triton.runtime.loading import DEVICE_VARIABLE

    original_load = mlflow.pyfunc.load_model
    requested = []

    def load_on_cpu_instead(model_uri, *args, **kwargs):
        requested.append(os.environ.get(DEVICE_VARIABLE))
        os.environ[DEVICE_VARIABLE] = cpu_setting  # load_predictor restores the variable afterwards
        return original_load(model_uri, *args, **kwargs)

    monkeypatch.setattr(mlflow.pyfunc, "load_model", load_on_cpu_instead)
    monkeypatch.delenv(DEVICE_VARIABLE, raising=False)
    return initialized_model_py(repository, kind="GPU", device_id=device_id), requested


def serve_request(repository, arrays=None):
    """Answer ``arrays`` (default: the shipped request) with the generated model.py on CPU."""
    from tests.support import fake_pb_utils

    instance = initialized_model_py(repository)
    arrays = request_arrays(repository) if arrays is None else arrays
    [response] = instance.execute([fake_pb_utils.request_from_arrays(arrays)])
    return fake_pb_utils.outputs_of(response)


# --- A sqlite tracking store per test -----------------------------------------------------------


@functools.cache
def _migrated_sqlite_database():
    """An empty MLflow sqlite database with the current schema, created once per process."""
    import mlflow

    directory = tempfile.mkdtemp(prefix="mlflow-triton-tests-db-")
    atexit.register(shutil.rmtree, directory, ignore_errors=True)
    database = pathlib.Path(directory) / "template.db"
    mlflow.MlflowClient(tracking_uri=f"sqlite:///{database}").search_experiments()
    return database


@contextlib.contextmanager
def sqlite_tracking(directory):
    """Use ``sqlite:///<directory>/mlflow.db`` and a new experiment storing artifacts in ``directory``.

    Yields the experiment id; restores the previous tracking URI and active
    experiment afterwards.
    """
    import mlflow
    from mlflow.tracking import fluent

    directory = pathlib.Path(directory)
    database = directory / "mlflow.db"
    shutil.copyfile(_migrated_sqlite_database(), database)
    saved_uri, saved_experiment = mlflow.get_tracking_uri(), fluent._active_experiment_id
    with preserved_environment():
        try:
            mlflow.set_tracking_uri(f"sqlite:///{database}")
            experiment_id = mlflow.create_experiment("tests", artifact_location=(directory / "artifacts").as_uri())
            mlflow.set_experiment(experiment_id=experiment_id)
            yield experiment_id
        finally:
            mlflow.set_tracking_uri(saved_uri)
            fluent._active_experiment_id = saved_experiment
