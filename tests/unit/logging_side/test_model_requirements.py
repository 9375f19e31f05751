"""The requirements a wrapper records name the distributions the model's classes come from (#22.2).

``class MyBertModel(transformers.BertModel)`` logged with ``mlflow_triton.pytorch`` recorded only
mlflow, torch and cloudpickle, while ``mlflow.pytorch.log_model`` (its requirement inference)
also records transformers; Triton then failed with ``No module named 'transformers'``. The
wrappers now add the distributions of the model's classes (and their base classes) to the
flavor's defaults, and warn, naming the distribution and the remedy, when requirements the caller
passes lack one.
"""

import json
import warnings

import numpy as np
import pytest
from mlflow.utils.requirements_utils import _get_pinned_requirement

import mlflow_triton.pytorch as mt_pytorch
from mlflow_triton._model_requirements import complete_requirements, distributions_needed
from mlflow_triton.errors import CustomCodeWarning
from tests.support import tiny_models

CODE_PATHS = [str(tiny_models.CUSTOM_NET_DIR)]
TRANSFORMERS = _get_pinned_requirement("transformers")


def _requirements(directory):
    return (directory / "requirements.txt").read_text().split()


def _save(tmp_path, **options):
    package = tmp_path / "package"
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        mt_pytorch.save_model(
            tiny_models.tiny_bert_subclass(),
            package,
            input_example=tiny_models.token_ids_example(),
            code_paths=CODE_PATHS,
            **options,
        )
    [repository] = (package / "model_repository").iterdir()
    messages = [str(w.message) for w in record if issubclass(w.category, CustomCodeWarning)]
    return package, repository, messages


def test_save_model_records_transformers_when_the_module_subclasses_a_transformers_model(tmp_path):
    package, repository, messages = _save(tmp_path)

    assert TRANSFORMERS in _requirements(package)
    assert TRANSFORMERS in _requirements(repository)  # the serving environment Triton gets
    assert messages == []


def test_save_model_warns_naming_the_distribution_and_the_remedy_when_pip_requirements_lack_it(tmp_path):
    package, repository, messages = _save(tmp_path, pip_requirements=["torch", "cloudpickle"])

    [message] = messages
    assert message.startswith("class MyBertModel (base class transformers.models.bert.modeling_bert.BertModel); ")
    assert "the installed distribution 'transformers', which the pip_requirements you passed do(es) not list" in message
    assert f"Add {TRANSFORMERS!r} to pip_requirements, or pass only extra_pip_requirements=[...]" in message
    assert json.loads((repository / "validation.json").read_text())["warnings"] == [message]
    assert "transformers" not in " ".join(_requirements(package))  # the caller's list is kept as given


def test_save_model_does_not_warn_when_pip_requirements_name_the_distribution(tmp_path):
    _, _, messages = _save(tmp_path, pip_requirements=["torch", "cloudpickle", "transformers"])

    assert messages == []


def test_distributions_needed_names_the_base_class_distribution_and_skips_the_standard_library():
    import collections

    class Local(collections.OrderedDict):
        pass

    assert distributions_needed([Local, json.dumps, np.log1p, np.float64(1.0)]) == {}  # numpy: serving bounds it
    assert list(distributions_needed([tiny_models.tiny_bert_subclass()])) == ["transformers", "torch"]


def test_distributions_needed_names_no_distribution_of_mlflow_itself_when_a_model_subclasses_mlflow_classes():
    from mlflow.pyfunc import ChatModel

    class Echo(ChatModel):
        def predict(self, context, messages, params):
            raise NotImplementedError

    # mlflow.pyfunc's package is installed by mlflow, mlflow-skinny and mlflow-tracing alike
    assert distributions_needed([Echo()]) == {}


def test_complete_requirements_adds_only_what_the_defaults_do_not_bring_when_the_caller_declared_nothing():
    needed = {"scipy": ["function expit"], "scikit-learn": ["class Pipeline"], "transformers": ["class X"]}

    options, messages = complete_requirements({"pip_requirements": ["scikit-learn==1.9.1"]}, needed, False)

    assert options["pip_requirements"] == ["scikit-learn==1.9.1", TRANSFORMERS]  # scikit-learn requires scipy
    assert messages == []


def test_complete_requirements_reads_the_pip_section_of_a_conda_env_when_the_caller_passed_one():
    conda_env = {"dependencies": ["python=3.11", {"pip": ["mlflow", "torch", "transformers>=4"]}]}

    options, messages = complete_requirements({"conda_env": conda_env}, {"transformers": ["class X"]}, True)

    assert messages == []
    assert options == {"conda_env": conda_env}


@pytest.mark.parametrize("pickle_module_name", ["pickle", "cloudpickle"])
def test_pytorch_requirement_sources_include_the_pickle_module_when_one_is_given(pickle_module_name):
    import importlib

    module = importlib.import_module(pickle_module_name)
    options = mt_pytorch._FRAMEWORK.native_options({"pickle_module": module})

    sources = mt_pytorch._FRAMEWORK.requirement_sources(tiny_models.shared_tiny_mlp(), options)

    assert sources[0] is module
    assert np.all([not isinstance(source, np.ndarray) for source in sources])
