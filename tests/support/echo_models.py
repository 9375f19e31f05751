"""A pyfunc model that answers its input as MLflow handed it to ``predict``: what the environment did to a request
shows in the answer (tests/e2e/test_serving_env_answers_triton.py, benchmarks/serving_env_answers.py)."""

import mlflow.pyfunc


def echo_model():
    """Predicts the frame it is given, column by column. The class is defined inside this function, so cloudpickle
    stores it by value and the serving environment needs no ``tests`` package."""

    class Echo(mlflow.pyfunc.PythonModel):
        def predict(self, context, model_input, params=None):
            return model_input.copy()

    return Echo()
