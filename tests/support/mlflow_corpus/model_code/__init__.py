"""Files the pyfunc cases log as they are (models from code, a loader module, a code_paths helper).

They stand in for the files of MLflow's ``tests/pyfunc/sample_code/`` and the loader module of
``tests/pyfunc/test_model_export_with_loader_module_and_data_path.py``, doing what those do. MLflow stores each
file as code and imports it by its own name when the model is loaded (Triton's Python backend included), so each
is a top-level module: nothing here imports from this repository.
"""
