"""A model from code, as MLflow's ``sample_code/python_model.py``: the input, quoted in one sentence."""

from mlflow.models import set_model
from mlflow.pyfunc import PythonModel


class EchoModel(PythonModel):
    def predict(self, context, model_input):
        return f"This was the input: {model_input}"


set_model(EchoModel())
