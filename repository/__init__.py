"""The Triton model repository format, written by the logging side and read by ``local``, ``export`` and ``deploy``.

One home for what every part must agree on: ``config`` (config.pbtxt built, written and read, on the runtime's own
readers), ``names`` (Triton-safe model and tensor names), ``request_files`` (the ready-to-send request),
``layout`` (folder and file names, the tensors a config declares), ``paths``, and ``staging`` (every directory the
package writes is built in a hidden sibling and renamed into place, removed on any failure or Ctrl-C). The rules
the runtime itself needs stay in ``mlflow_triton.shared_contract`` (standard library only), used, not copied.
"""
