"""A model from code importing a helper in ``code_paths``, as MLflow's ``sample_code/python_model_with_utils.py``."""

from mlflow.models import set_model
from mlflow.pyfunc import PythonModel


class HelpedModel(PythonModel):
    def predict(self, context, model_input):
        from corpus_model_utils import describe

        return describe(model_input)


set_model(HelpedModel())
