"""Runtime sources copied into a generated ``1/model.py``, minus their package imports.

A generated ``model.py`` runs where mlflow-triton is not installed: each runtime module marks its package-internal
imports between ``# <mlflow-triton package imports ...>`` comments, and :func:`vendored_source` removes that block
(refusing one that holds anything but relative imports) and copies the rest verbatim under a label. Both generated
files use it: the batched model's (``logging_side/_model_py.py``) and a zero-row guard's front (``guard``).
"""

import re

_PACKAGE_IMPORTS = re.compile(
    r"^# <mlflow-triton package imports[^\n]*>\n(?P<body>.*?)^# </mlflow-triton package imports>\n",
    re.MULTILINE | re.DOTALL,
)
_RELATIVE_IMPORT = re.compile(r"^from \.[\w.]* import [\w, ]+$")


def vendored_source(label, path):
    """The source of one module as it appears in model.py."""
    text = path.read_text(encoding="utf-8")
    match = _PACKAGE_IMPORTS.search(text)
    if match:
        # A parenthesized import (as ruff wraps a long one) is read as one line.
        body = re.sub(r"\(([^)]*)\)", lambda names: " ".join(names.group(1).split()).rstrip(","), match.group("body"))
        lines = [line for line in body.splitlines() if line.strip()]
        stray = [line for line in lines if not _RELATIVE_IMPORT.match(line)]
        if stray:
            raise RuntimeError(f"{label}: only relative imports may stand in the package-imports block: {stray}")
        text = text[: match.start()] + text[match.end() :]
    return f"# ---- {label} " + "-" * max(4, 74 - len(label)) + "\n" + text
