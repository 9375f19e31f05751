"""mkdocs hook (mkdocs.yml ``hooks:``): lays the package out for the API reference before the site is built.

The reference pages (docs/api/) are generated from the docstrings by mkdocstrings, whose Python loader (griffe)
reads the source without importing it and so cannot follow pyproject's package-dir mapping either (it finds
``mlflow_triton`` in logging_side/ through the editable install, but not ``mlflow_triton.local`` in local_triton/).
This hook links the package's layout under .work/apidocs/ (.ci/package_tree.py, as .ci/typecheck does for mypy),
and mkdocs.yml's ``paths:`` points griffe there; it runs before every build, on a fresh clone too.
"""

from typing import Any

from package_tree import ROOT, link_tree, package_dirs

TREE = ROOT / ".work" / "apidocs"


def on_startup(**_: Any) -> None:
    """Once per ``mkdocs build`` or ``mkdocs serve``, before mkdocstrings sets its handler up (in its on_config,
    which drops a ``paths:`` entry that does not exist yet); new and removed modules count from the next start,
    edits at once (the links point at the checkout's files)."""
    link_tree(TREE, package_dirs())
