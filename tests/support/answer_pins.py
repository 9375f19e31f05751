"""The lines a generated requirements.txt should pin in this interpreter, worked out independently of the package:
numpy, pandas and pyarrow at their installed versions (importlib.metadata), pyarrow only where installed. Under a
numpy 2, numpy and whatever requires numpy 2 (pandas 3.1) keep the bound the installed MLflow declares: no Triton stub
installs beside them. The unit legs run under numpy 1 and 2, pandas 2 and 3."""

import importlib.metadata

from packaging.requirements import Requirement


def expected_answer_pins():
    numpy_2 = int(importlib.metadata.version("numpy").split(".")[0]) >= 2
    lines = []
    for name in ("numpy", "pandas", "pyarrow"):
        try:
            version = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
        if numpy_2 and (name == "numpy" or _needs_numpy_2(name)):
            lines.append(_mlflow_bound(name))
        else:
            lines.append(f"{name}=={version}")
    return lines


def _needs_numpy_2(name):
    for text in importlib.metadata.requires(name) or []:
        requirement = Requirement(text)
        if requirement.name == "numpy" and (requirement.marker is None or requirement.marker.evaluate({"extra": ""})):
            return not requirement.specifier.contains("1.26.4")
    return False


def _mlflow_bound(name):
    declared = [Requirement(text) for text in importlib.metadata.requires("mlflow") if ";" not in text]
    return next((f"{name}{r.specifier}" for r in declared if r.name == name), name)
