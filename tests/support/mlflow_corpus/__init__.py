"""MLflow's own flavor tests as the project's yardstick (``make corpus``, ``docs/mlflow-corpus.md``).

Each case rebuilds, in a few lines of its own, a model that one of MLflow's flavor tests logs (the test is named
in ``Case.mlflow_test`` as ``<file>::<test>``) -- tiny random models and a local tokenizer where MLflow's tests
download a hub model -- and gives the keyword arguments MLflow's test logs it with.

* :mod:`.case` -- ``Case`` (id, MLflow test, builder) and ``Built`` (the model and its ``log_model`` arguments);
* :mod:`.cases_sklearn`, :mod:`.cases_pytorch`, :mod:`.cases_transformers` -- the cases of the wrappers' flavors,
  one builder each; :mod:`.cases_xgboost`, :mod:`.cases_lightgbm`, :mod:`.cases_catboost`, :mod:`.cases_statsmodels`,
  :mod:`.cases_sentence_transformers`, :mod:`.cases_pyfunc` -- models logged with plain MLflow and brought in with
  ``add_repository`` (custom pyfunc models also with ``mlflow_triton.pyfunc``); :mod:`.cases_nested` -- custom
  pyfunc models with MLflow's nested column types (Array, Object, Map); ``model_code/`` -- the files the
  pyfunc cases log as code;
* :mod:`.outcomes` -- what happened to a case (built / logged / refused / checked) and the Markdown table;
* :mod:`.run` -- the runner: log each case with the ``mlflow_triton`` wrapper into a local sqlite store, prove the
  logged ones with the real ``mlflow-triton check`` CLI, try each refused one with plain MLflow and MLflow's own
  scoring server, write ``report.json`` and the Markdown page.
"""
