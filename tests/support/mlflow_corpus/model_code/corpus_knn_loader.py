"""A ``loader_module``: ``_load_pyfunc(data_path)`` unpickles the model saved at ``data_path``.

MLflow's ``tests/pyfunc/test_model_export_with_loader_module_and_data_path.py`` is its own loader module: its
``_load_pyfunc`` opens the pickled scikit-learn model the test saves as ``data_path``.
"""

import pickle


def _load_pyfunc(path):
    with open(path, "rb") as f:
        return pickle.load(f, encoding="latin1")
