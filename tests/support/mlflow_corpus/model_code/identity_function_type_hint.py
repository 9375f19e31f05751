"""A typed function as a model from code, as MLflow's ``sample_code/func_code_with_type_hint.py``."""

from mlflow.models import set_model


def predict(model_input: list[str]):
    return model_input


set_model(predict)
