"""A function as a model from code, as MLflow's ``sample_code/func_code.py``: the input, unchanged."""

from mlflow.models import set_model


def predict(model_input):
    return model_input


set_model(predict)
