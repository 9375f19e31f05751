"""The import package ``mlflow_triton`` laid out as the wheel lays it out, as a tree of symbolic links.

pyproject's package-dir maps the top-level folders onto one package (logging_side/ -> mlflow_triton,
runtime/ -> mlflow_triton.runtime, ...). The editable install finds those folders through an import hook, which
tools that read the source without importing it cannot follow: mypy (.ci/typecheck) and griffe, the loader of the
documentation's API reference (.ci/docs_hooks.py). Both read a tree this module links under .work/.
"""

import shutil
from pathlib import Path

try:
    import tomllib
except ImportError:  # Python 3.10: mypy depends on tomli there
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]


def package_dirs() -> dict[str, str]:
    """``{"mlflow_triton": "logging_side", "mlflow_triton.runtime": "runtime", ...}`` from pyproject."""
    with open(ROOT / "pyproject.toml", "rb") as file:
        setuptools = tomllib.load(file)["tool"]["setuptools"]
    return {name: setuptools["package-dir"].get(name, name.replace(".", "/")) for name in setuptools["packages"]}


def link_tree(tree: Path, mapping: dict[str, str]) -> None:
    """``<tree>/mlflow_triton/...``: one symbolic link per Python file of each mapped folder, rebuilt on every call
    (new and removed modules count)."""
    shutil.rmtree(tree, ignore_errors=True)
    for package, folder in mapping.items():
        target = tree.joinpath(*package.split("."))
        target.mkdir(parents=True, exist_ok=True)
        for source in sorted((ROOT / folder).glob("*.py")) + sorted((ROOT / folder).glob("*.typed")):
            (target / source.name).symlink_to(source)
