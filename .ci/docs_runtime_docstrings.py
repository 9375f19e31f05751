"""griffe extension (mkdocs.yml, the Python handler's ``extensions:``): the docstrings ``_options.documented`` fills.

The wrappers' docstrings hold their parameter entries as placeholders (``{destination}``, ``{triton}``, ...) that
the decorator ``mlflow_triton._options.documented`` fills when the module is imported: one template for every
wrapper (logging_side/_options.py). griffe reads the source without importing it and would show the placeholders
(and warn that ``{destination}`` is no ``name: description`` pair), so for each module-level function that
decorator marks, this extension imports the module and takes the docstring the function really has, as ``help()``
shows it. Everything else in the reference is still read from the source.
"""

import importlib
import inspect
from typing import Any

import griffe

DECORATOR = "mlflow_triton._options.documented"


class RuntimeDocstrings(griffe.Extension):
    def on_function_instance(self, *, func: griffe.Function, agent: Any, **_: Any) -> None:
        if not func.parent or not func.parent.is_module:
            return
        if not any(decorator.callable_path == DECORATOR for decorator in func.decorators):
            return
        function = getattr(importlib.import_module(func.module.path), func.name)
        func.docstring = griffe.Docstring(
            inspect.getdoc(function) or "",
            lineno=func.docstring.lineno if func.docstring else func.lineno,
            parent=func,
            parser=agent.docstring_parser,  # Google style, as mkdocs.yml sets it for the docstrings read from source
            parser_options=agent.docstring_options,
        )
