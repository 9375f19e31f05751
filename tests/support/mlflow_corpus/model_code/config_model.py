"""A model from code reading its ``model_config``, as MLflow's ``sample_code/python_model_with_config.py``.

``development_config`` is read only where the model is not logged with a ``model_config`` of its own.
"""

import os

from mlflow.models import ModelConfig, set_model
from mlflow.pyfunc import PythonModel

base_config = ModelConfig(development_config=os.path.join(os.path.dirname(os.path.abspath(__file__)), "config.yml"))


class ConfiguredModel(PythonModel):
    def predict(self, context, model_input):
        timeout = base_config.get("timeout")
        return f"Predict called with input {model_input}, timeout {timeout}"


set_model(ConfiguredModel())
