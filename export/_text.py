"""Transformers and sentence-transformers text models -> ONNX network + tokenizer + post-processing.

The logged pipeline is read, never run through MLflow at serving time: its
network goes to ONNX with ``torch.onnx.export`` (batch and sequence axes
dynamic), its fast tokenizer to ``tokenizer.json`` and what its pre- and
post-processing do to ``text_pipeline.json`` (``_text_pipeline`` runs both
with ``tokenizers`` and numpy). A task, a setting or a model this cannot
reproduce is refused here, naming it, before anything is written.
"""

import dataclasses
import json

import numpy as np

from ._errors import UnsupportedModelError
from ._pytorch import _export_failure, _quiet_exporter, converter_record

TASKS = ("text-classification", "token-classification", "feature-extraction")
SENTENCE_TASK = "sentence-embedding"
POOLING_MODES = ("mean", "cls", "max")
NETWORK_INPUTS = ("input_ids", "attention_mask", "token_type_ids")
REASONABLE_LENGTH = 1_000_000  # tokenizers without a real limit say model_max_length = 1e30


@dataclasses.dataclass
class TextModel:
    """What the export writes for a text model."""

    spec: dict  # text_pipeline.json
    tokenizer_json: str
    network: object  # onnx ModelProto
    converter: dict


def convert(source, max_batch_size, pad_multiple):
    """``TextModel`` for a logged Transformers pipeline or sentence-transformers model, or UnsupportedModelError."""
    if source.flavor == "sentence_transformers":
        model, spec = _sentence_transformer(source)
    else:
        model, spec = _pipeline(source)
    spec["max_batch_size"] = max_batch_size
    spec["pad_multiple"] = pad_multiple
    spec["input"] = _single_text_input(source)
    spec["outputs"] = [declaration.name for declaration in source.layout.outputs]
    network, converter, output_name = _export_network(model, spec)
    spec["network_output"] = output_name
    return TextModel(spec=spec, tokenizer_json=spec.pop("_tokenizer"), network=network, converter=converter)


def _single_text_input(source):
    [declaration, *others] = source.layout.inputs
    if others or declaration.data_type != "TYPE_STRING":
        raise UnsupportedModelError(
            "export-onnx takes a text model with one text input (a list of strings); this one has inputs "
            f"{[d.name for d in source.layout.inputs]}"
        )
    return declaration.name


def _pipeline(source):
    import transformers

    pipeline = source.raw_model()
    wrapper = source.predictor._model_impl
    model_config = dict(getattr(wrapper, "model_config", None) or {})
    if getattr(wrapper, "llm_inference_task", None):
        raise UnsupportedModelError(
            f"Task {wrapper.llm_inference_task!r} (an MLflow LLM inference task) cannot be exported; export-onnx "
            f"takes {', '.join(TASKS)} and sentence-transformers models"
        )
    kinds = {
        "text-classification": transformers.TextClassificationPipeline,
        "token-classification": transformers.TokenClassificationPipeline,
        "feature-extraction": transformers.FeatureExtractionPipeline,
    }
    task = next((name for name, kind in kinds.items() if type(pipeline) is kind), None)
    if task is None:
        raise UnsupportedModelError(
            f"Task {getattr(pipeline, 'task', type(pipeline).__name__)!r} ({type(pipeline).__name__}) cannot be "
            f"exported; export-onnx takes {', '.join(TASKS)} and sentence-transformers models. Keep serving the "
            "generated Python-backend repository, or export with Hugging Face Optimum"
        )
    preprocess, _, postprocess = pipeline._sanitize_parameters(**model_config)
    preprocess = {**pipeline._preprocess_params, **preprocess}
    postprocess = {**pipeline._postprocess_params, **postprocess}
    tokenizer = _fast_tokenizer(pipeline.tokenizer, task)
    config = pipeline.model.config
    spec = {
        "task": task,
        "labels": [config.id2label[i] for i in range(config.num_labels)] if task != "feature-extraction" else [],
        "lower_case": False,
        **_tokenization(task, tokenizer, preprocess, config),
    }
    if task == "text-classification":
        spec.update(_classification(postprocess, config, source))
    elif task == "token-classification":
        spec.update(_token_classification(postprocess, preprocess))
    elif postprocess.get("return_tensors"):
        raise UnsupportedModelError("feature-extraction with return_tensors=True cannot be exported")
    return _Network(pipeline.model, "logits" if task != "feature-extraction" else "last_hidden_state"), spec


def _fast_tokenizer(tokenizer, task):
    if tokenizer is None or not getattr(tokenizer, "is_fast", False):
        raise UnsupportedModelError(
            f"The {task} pipeline's tokenizer ({type(tokenizer).__name__}) is not a fast tokenizer: the exported "
            "repository tokenizes with the `tokenizers` library, which needs the tokenizer.json of a "
            "PreTrainedTokenizerFast. Log the pipeline with a fast tokenizer (use_fast=True) to export it"
        )
    return tokenizer


def _tokenization(task, tokenizer, preprocess, config):
    """Truncation as the pipeline tokenizes: token-classification always truncates to model_max_length."""
    kwargs = dict(preprocess.get("tokenizer_params") or {}) if task == "token-classification" else dict(preprocess)
    unknown = sorted(set(kwargs) - {"truncation", "max_length"})
    if task == "token-classification":
        unknown = sorted(set(preprocess) - {"tokenizer_params", "is_split_into_words", "delimiter"})
        if preprocess.get("is_split_into_words") or preprocess.get("stride"):
            unknown.append("is_split_into_words" if preprocess.get("is_split_into_words") else "stride")
    if unknown:
        raise UnsupportedModelError(
            f"The {task} pipeline's tokenizer option(s) {unknown} cannot be exported; export-onnx reproduces "
            "truncation and max_length only"
        )
    limit = tokenizer.model_max_length if 0 < tokenizer.model_max_length < REASONABLE_LENGTH else None
    truncate_to = None
    if task == "token-classification":
        truncate_to = limit
    elif kwargs.get("truncation") not in (None, False, "do_not_truncate"):
        truncate_to = kwargs.get("max_length") or limit
    positions = getattr(config, "max_position_embeddings", None) or REASONABLE_LENGTH
    network_inputs = [
        name for name in NETWORK_INPUTS if name in tokenizer.model_input_names or name == "attention_mask"
    ]
    return {
        "truncate_to": truncate_to,
        "max_positions": min(positions, truncate_to or positions),
        "pad_id": tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0,
        "network_inputs": network_inputs,
        "_tokenizer": tokenizer.backend_tokenizer.to_str(),
    }


def _classification(postprocess, config, source):
    function = postprocess.get("function_to_apply")
    if function is None:
        if config.problem_type == "regression":
            function = "none"
        elif config.problem_type == "multi_label_classification" or config.num_labels == 1:
            function = "sigmoid"
        elif config.problem_type == "single_label_classification" or config.num_labels > 1:
            function = "softmax"
        else:
            function = str(getattr(config, "function_to_apply", "none"))
    function = getattr(function, "value", function).lower()
    if function not in ("softmax", "sigmoid", "none"):
        raise UnsupportedModelError(f"function_to_apply {function!r} cannot be exported; softmax, sigmoid, none")
    legacy = postprocess.get("_legacy", True)
    top_k = postprocess.get("top_k", 1)
    outputs = [d.name for d in source.layout.outputs]
    columns = config.num_labels if top_k is None else min(top_k, config.num_labels)
    expected = 2 if legacy and top_k == 1 else columns
    if len(outputs) != expected:
        raise UnsupportedModelError(
            f"The logged text-classification outputs {outputs} do not match top_k={top_k!r} "
            f"({expected} column(s) expected); export-onnx cannot reproduce them"
        )
    return {"function_to_apply": function, "top_k": "legacy" if legacy and top_k == 1 else top_k}


def _token_classification(postprocess, preprocess):
    strategy = postprocess.get("aggregation_strategy")
    strategy = getattr(strategy, "value", strategy) or "none"
    if strategy != "none":
        raise UnsupportedModelError(
            f"token-classification with aggregation_strategy={strategy!r} cannot be exported; export-onnx "
            "reproduces aggregation_strategy='none' (one label per token)"
        )
    if preprocess.get("offset_mapping") is not None:
        raise UnsupportedModelError("token-classification with a given offset_mapping cannot be exported")
    return {"ignore_labels": list(postprocess.get("ignore_labels") or ["O"])}


def _sentence_transformer(source):
    from sentence_transformers.base.modules.transformer import Transformer

    model = source.raw_model()
    modules = list(model)
    names = [type(module).__name__ for module in modules]
    if (
        not modules
        or not isinstance(modules[0], Transformer)
        or any(name not in ("Pooling", "Normalize") for name in names[1:])
    ):
        raise UnsupportedModelError(
            f"sentence-transformers model with modules {names} cannot be exported; export-onnx takes Transformer, "
            "Pooling and an optional Normalize"
        )
    pooling_modules = [module for module in modules if type(module).__name__ == "Pooling"]
    if len(pooling_modules) != 1:
        raise UnsupportedModelError(f"sentence-transformers model with modules {names}: export-onnx needs one Pooling")
    mode = pooling_modules[0].get_config_dict().get("pooling_mode")
    if mode not in POOLING_MODES:
        raise UnsupportedModelError(
            f"sentence-transformers pooling mode {mode!r} cannot be exported; supported: {', '.join(POOLING_MODES)}"
        )
    if getattr(model, "prompts", None) and any(model.prompts.values()) or getattr(model, "default_prompt_name", None):
        raise UnsupportedModelError("sentence-transformers model with prompts cannot be exported")
    transformer = modules[0]
    tokenizer = _fast_tokenizer(transformer.tokenizer, SENTENCE_TASK)
    config = transformer.auto_model.config
    spec = {
        "task": SENTENCE_TASK,
        "labels": [],
        "lower_case": bool(getattr(transformer, "do_lower_case", False)),
        **_tokenization(SENTENCE_TASK, tokenizer, {"truncation": True, "max_length": model.max_seq_length}, config),
        "pooling": mode,
        "normalize": "Normalize" in names,
        "output_dtype": str(np.dtype(_output_dtype(source))),
    }
    return _Network(transformer.auto_model, "last_hidden_state"), spec


def _output_dtype(source):
    from mlflow_triton.shared_contract import TRITON_TO_NUMPY

    [declaration] = source.layout.outputs
    return TRITON_TO_NUMPY[declaration.data_type]


class _Network:
    """The network as a module of (input_ids, attention_mask[, token_type_ids]) -> one output tensor."""

    def __init__(self, model, output):
        self.model, self.output = model, output


def _export_network(network, spec):
    import torch

    from . import _deps

    onnxscript = _deps.require("onnxscript")
    names = spec["network_inputs"]
    model, output = network.model, network.output
    if model.training:
        raise UnsupportedModelError("The model is in training mode; log it after model.eval()")

    class WithTokenTypes(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.model = model

        def forward(self, input_ids, attention_mask, token_type_ids):
            return getattr(self.model(input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids), output)

    class WithoutTokenTypes(WithTokenTypes):
        def forward(self, input_ids, attention_mask):
            return getattr(self.model(input_ids, attention_mask=attention_mask), output)

    Wrapped = WithTokenTypes if "token_type_ids" in names else WithoutTokenTypes

    # A padded example row: tracing with an all-ones mask lets transformers drop the mask from the graph.
    ids = torch.full((2, 3), spec["pad_id"], dtype=torch.int64)
    ids[:, 0] = 1 if spec["pad_id"] != 1 else 2
    examples = {
        "input_ids": ids,
        "attention_mask": torch.tensor([[1, 1, 1], [1, 1, 0]]),
        "token_type_ids": torch.zeros((2, 3), dtype=torch.int64),
    }
    batch, sequence = torch.export.Dim("batch", min=1), torch.export.Dim("sequence", min=1)
    try:
        with _quiet_exporter(), torch.no_grad():
            program = torch.onnx.export(
                Wrapped(),
                tuple(examples[name] for name in names),
                dynamo=True,
                input_names=names,
                output_names=[output],
                dynamic_shapes=tuple({0: batch, 1: sequence} for _ in names),
                verbose=False,
                report=False,
            )
    except Exception as error:
        raise UnsupportedModelError(_export_failure(model, error, torch.__version__)) from error
    converter = converter_record(
        torch,
        onnxscript,
        network=type(model).__name__,
        dynamic_axes={name: ["batch", "sequence"] for name in names},
    )
    return program.model_proto, converter, output


def spec_text(spec):
    return json.dumps(spec, indent=1, ensure_ascii=False) + "\n"
