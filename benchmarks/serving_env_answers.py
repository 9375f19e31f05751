"""Which installed distributions change MLflow's answer: the same requests scored in several environments.

A serving environment built from a generated ``requirements.txt`` is leaner than the one the model was logged in
(``mlflow-skinny`` instead of ``mlflow``, and none of what the logging environment happens to hold besides). Where a
distribution left out changes what ``pyfunc.predict`` returns, or how MLflow reads a request, Triton answers
differently from ``mlflow models serve`` in the logging environment -- with HTTP 200. This measures it instead of
guessing: two echo models (string, ``Array(string)`` and ``Object`` columns; double, long, boolean and
``Array(double)`` columns) are saved with the wrappers, and hostile ``dataframe_split`` requests (nulls in strings
and arrays, NaN, numbers where text is declared, empty arrays, ...) are answered by MLflow's own scoring function
(``mlflow.pyfunc.scoring_server.invocations``, what ``mlflow models serve`` runs: parsing, schema enforcement,
``predict``, serialization) in

* ``logging``: this interpreter (the environment the models were logged in);
* ``served``: an environment built from the generated ``requirements.txt`` under the bundled Triton's constraints,
  as ``mlflow-triton check`` builds it;
* ``served - <name>``: the same less one pinned distribution that loading does not need (``pyarrow``): what that
  distribution changes.

Every answer (status and body) of every environment is compared with the logging one; the table printed says which
requests differ where. ``served`` equal to ``logging`` on every request means no other distribution of the logging
environment changes these answers::

    .venv/bin/python -m benchmarks.serving_env_answers [--work-dir .work/serving-env-answers]

Environments are built into the serving-environment cache (minutes the first time). The measured figures are in
docs/repository.md (requirements.txt).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

#: Distributions pinned in requirements.txt that loading the models does not need: each is left out once.
OPTIONAL_PINS = ("pyarrow",)

#: ``{model: example}`` (column -> values); the signatures MLflow infers from them.
EXAMPLES = {
    "text": {
        "tags": [["x", "y"], ["z"]],
        "name": ["a", "b"],
        "rec": [{"k": "v", "l": ["p"]}, {"k": "w", "l": ["q", "r"]}],
    },
    "numbers": {"x": [0.5, 1.5], "n": [1, 2], "flag": [True, False], "vec": [[0.5, 1.0], [2.0]]},
}

#: ``(model, label, rows)``: the hostile requests, each row a list in the example's column order.
CASES = [
    ("text", "null last in an array", [[["abc", None], "a", {"k": "v", "l": ["p"]}]]),
    ("text", "null first in an array", [[[None, "abcdef"], "a", {"k": "v", "l": ["p"]}]]),
    ("text", "array of one null", [[[None], "a", {"k": "v", "l": ["p"]}]]),
    ("text", "empty array", [[[], "a", {"k": "v", "l": ["p"]}]]),
    ("text", "null array", [[None, "a", {"k": "v", "l": ["p"]}]]),
    ("text", "'nan' and '' in an array", [[["", "nan", "None"], "a", {"k": "v", "l": ["p"]}]]),
    ("text", "number in an array of text", [[[1, "a"], "a", {"k": "v", "l": ["p"]}]]),
    ("text", "non-ASCII beside null", [[["é€", None], "a", {"k": "v", "l": ["p"]}]]),
    ("text", "null string", [[["x"], None, {"k": "v", "l": ["p"]}]]),
    (
        "text",
        "null string beside text",
        [[["x"], None, {"k": "v", "l": ["p"]}], [["y"], "abc", {"k": "w", "l": ["q"]}]],
    ),
    ("text", "number in a string column", [[["x"], 5, {"k": "v", "l": ["p"]}]]),
    ("text", "'NaN' string", [[["x"], "NaN", {"k": "v", "l": ["p"]}]]),
    ("text", "null object", [[["x"], "a", None]]),
    ("text", "null in an object's array", [[["x"], "a", {"k": "v", "l": ["abc", None]}]]),
    ("text", "empty array in an object", [[["x"], "a", {"k": "v", "l": []}]]),
    ("text", "null in an object", [[["x"], "a", {"k": None, "l": ["p"]}]]),
    ("text", "number in an object's text", [[["x"], "a", {"k": 3, "l": ["p"]}]]),
    (
        "text",
        "nulls in every column",
        [[["abc", None], None, {"k": None, "l": ["p"]}], [[None, "abcdef"], "b", {"k": "w", "l": ["q"]}]],
    ),
    ("numbers", "null double", [[None, 1, True, [0.5]]]),
    ("numbers", "NaN double", [["NaN", 1, True, [0.5]]]),
    ("numbers", "null long", [[0.5, None, True, [0.5]]]),
    ("numbers", "null boolean", [[0.5, 1, None, [0.5]]]),
    ("numbers", "null in an array of doubles", [[0.5, 1, True, [1.0, None]]]),
    ("numbers", "text in a double column", [["1.5", 1, True, [0.5]]]),
    ("numbers", "float in a long column", [[0.5, 1.5, True, [0.5]]]),
    ("numbers", "mixed rows", [[None, 1, True, [None]], [2.5, None, False, []]]),
]


def answer(model_dir: str, cases: list) -> list[dict]:
    """Each case's ``{"status", "body"}`` as MLflow's scoring function answers it, in this interpreter."""
    import mlflow.pyfunc
    from mlflow.pyfunc import scoring_server

    model = mlflow.pyfunc.load_model(model_dir)
    schema = model.metadata.get_input_schema()
    columns = [spec.name for spec in schema.inputs]
    answers = []
    for rows in cases:
        body = json.dumps({"dataframe_split": {"columns": columns, "data": rows}})
        try:
            result = scoring_server.invocations(body, "application/json", model, schema)
            answers.append({"status": result.status, "body": _error_kind(result.status, result.response)})
        except Exception as error:  # a failure inside MLflow's own function: its type is the answer
            answers.append({"status": "raised", "body": type(error).__name__})
    return answers


def _error_kind(status, response):
    """A 200 body as it is; an error body without its message (it may quote a path or a line number)."""
    if status == 200:
        return response
    try:
        return json.loads(response).get("error_code", "error")
    except ValueError:
        return "error"


def _save_models(work_dir: Path) -> dict[str, Path]:
    import pandas as pd

    from mlflow_triton import pyfunc
    from tests.support.echo_models import echo_model

    packages = {}
    for name, columns in EXAMPLES.items():
        package = work_dir / name
        if not package.exists():
            pyfunc.save_model(echo_model(), package, input_example=pd.DataFrame(columns), triton_model_name=name)
        packages[name] = package
    return packages


def _answers_in(python: str, packages: dict[str, Path]) -> dict[tuple[str, str], dict]:
    answers = {}
    for name, package in packages.items():
        cases = [(label, rows) for model, label, rows in CASES if model == name]
        script = (
            "import json, sys; from benchmarks.serving_env_answers import answer; "
            "print(json.dumps(answer(sys.argv[1], json.loads(sys.argv[2]))))"
        )
        out = subprocess.run(
            [python, "-c", script, str(package), json.dumps([rows for _, rows in cases])],
            capture_output=True,
            text=True,
            check=True,
            cwd=Path(__file__).resolve().parents[1],
        )
        for (label, _), result in zip(cases, json.loads(out.stdout.strip().splitlines()[-1])):
            answers[(name, label)] = result
    return answers


def _environments(packages: dict[str, Path]) -> dict[str, str]:
    """``{label: python}``: the logging interpreter, the served environment and the served one less each optional
    pin."""
    from mlflow_triton.local.installation import BUNDLED_SERVING_CONSTRAINTS
    from mlflow_triton.local.serving_env import ensure_env_for_requirements, requirement_lines

    lines = sorted(
        {line for package in packages.values() for line in requirement_lines(_requirements(package).read_text())}
    )
    environments = {"logging": sys.executable}
    variants = {"served": lines}
    for name in OPTIONAL_PINS:
        less = [line for line in lines if not line.lower().startswith(f"{name}==")]
        if less != lines:
            variants[f"served - {name}"] = less
    for label, variant in variants.items():
        env = ensure_env_for_requirements(variant, BUNDLED_SERVING_CONSTRAINTS, progress=None, source=label)
        environments[label] = str(env / "bin" / "python")
    return environments


def _requirements(package: Path) -> Path:
    return next((package / "model_repository").glob("*/requirements.txt"))


def _installed(python: str, names) -> dict[str, str | None]:
    script = (
        "import importlib.metadata as m, json, sys\n"
        "def v(n):\n try: return m.version(n)\n except m.PackageNotFoundError: return None\n"
        "print(json.dumps({n: v(n) for n in sys.argv[1:]}))"
    )
    out = subprocess.run([python, "-c", script, *names], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work-dir", default=".work/serving-env-answers")
    args = parser.parse_args(argv)
    work_dir = Path(args.work_dir).resolve()
    work_dir.mkdir(parents=True, exist_ok=True)
    packages = _save_models(work_dir)
    environments = _environments(packages)
    answers = {label: _answers_in(python, packages) for label, python in environments.items()}
    print("| environment | numpy | pandas | pyarrow | requests answered like `logging` |")
    print("| --- | --- | --- | --- | --- |")
    for label, python in environments.items():
        versions = _installed(python, ("numpy", "pandas", "pyarrow"))
        same = sum(answers[label][key] == answers["logging"][key] for key in answers["logging"])
        shown = [versions[name] or "absent" for name in ("numpy", "pandas", "pyarrow")]
        print(f"| {label} | {' | '.join(shown)} | {same} of {len(answers['logging'])} |")
    print()
    for key, logged in answers["logging"].items():
        differing = [label for label in environments if answers[label][key] != logged]
        if differing:
            print(f"{key[0]} / {key[1]}: logging {_short(logged)}")
            for label in differing:
                print(f"    {label}: {_short(answers[label][key])}")
    return 0


def _short(result: dict) -> str:
    body = result["body"]
    if isinstance(body, str) and body.startswith("{"):
        body = json.dumps(json.loads(body)["predictions"])
    return f"{result['status']} {body}"


if __name__ == "__main__":
    sys.exit(main())
