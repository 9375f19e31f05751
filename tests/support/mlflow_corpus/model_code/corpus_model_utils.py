"""The helper ``utils_model.py`` imports (stored with ``code_paths``), as MLflow's ``sample_code/utils.py``."""


def describe(model_input):
    return f"My utils function received this input: {model_input}"
