"""The e2e session: the order of the files, and the fidelity campaign's seed before the tests and figures after them.

``make test`` runs the e2e tests over two pytest-xdist workers, a test file per worker at a time (``--dist
loadfile``: a module's shared server stays in one process), the longest files first. The campaign then runs
in a worker: the controller fixes the seed for every process through ``FIDELITY_SEED`` before the workers
start, names it once the worker has collected the campaign, and prints the figures the worker hands back
when it finishes. Without xdist the same hooks print from the one process.
"""

import os
from pathlib import Path

import pytest

from tests.support.fidelity.seed import SEED, SUMMARIES

FIDELITY_MODULE = "test_fidelity_generated.py"
SUMMARIES_KEY = "fidelity_summaries"
# The files that take longest (seconds on the 2-core machine, ``--durations``), run first: xdist hands the files to
# the workers in collection order (``make test`` passes ``--no-loadscope-reorder``; xdist's own order puts the files
# with most tests first, which left one worker alone with the corpus for minutes at the end). The rest follow by name.
LONGEST_FIRST = (
    "test_mlflow_corpus_sample.py",
    FIDELITY_MODULE,
    "test_cli.py",
    "test_runtime_fidelity.py",
    "test_llm_tasks_triton.py",
    "test_faults.py",
    "test_export_text_triton.py",
    "test_pretrained_triton.py",
    "test_streaming_triton.py",
    "test_existing_models_triton.py",
    "test_mlflow_protocol_triton.py",
    "test_mlflow_interfaces_triton.py",
    "test_output_misfits.py",
    "test_export_triton.py",
)

# Runs in the controller (or the only process) before any worker exists: workers inherit it, so the
# seed printed here is the one the campaign uses (tests/support/fidelity/seed.py reads it).
os.environ.setdefault("FIDELITY_SEED", str(SEED))


def _say_seed(config, nodeids):
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None and any(nodeid.split("::")[0].endswith(FIDELITY_MODULE) for nodeid in nodeids):
        reporter.write_line(f"fidelity: FIDELITY_SEED={SEED} (set FIDELITY_SEED={SEED} to replay this run's cases)")


def pytest_collection_modifyitems(items):
    renamed = [name for name in LONGEST_FIRST if not (Path(__file__).parent / name).is_file()]
    assert not renamed, f"tests/e2e/conftest.py: LONGEST_FIRST names files that are not in tests/e2e: {renamed}"

    rank = {name: position for position, name in enumerate(LONGEST_FIRST)}
    # stable: a file's tests, and the files not listed, keep their order
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))


def pytest_collection_finish(session):
    if not hasattr(session.config, "workerinput"):  # a worker's terminal output is not shown
        _say_seed(session.config, [item.nodeid for item in session.items])


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node, ids):
    if getattr(node, "gateway", None) is not None and node.gateway.id == "gw0":  # every worker collects all
        _say_seed(node.config, ids)


def pytest_sessionfinish(session):
    if hasattr(session.config, "workeroutput"):  # a worker: hand the campaign's figures to the controller
        session.config.workeroutput[SUMMARIES_KEY] = list(SUMMARIES)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    SUMMARIES.extend(getattr(node, "workeroutput", {}).get(SUMMARIES_KEY, []))


def pytest_terminal_summary(terminalreporter):
    for report in SUMMARIES:
        counts = report["counts"]
        load = report["phases"].get("load", {})
        terminalreporter.write_line(
            f"fidelity: FIDELITY_SEED={report['seed']}: {report['served']} case(s) (generated and pinned) served by "
            f"Triton {report['triton_version']} and answered like pyfunc.predict "
            f"({counts.get('requests: json', 0)} JSON and "
            f"{counts.get('requests: binary', 0)} binary requests besides {report['served']} shipped ones; "
            f"{counts.get('answers: prediction', 0)} predictions, "
            f"{report['served'] and sum(v for k, v in counts.items() if k.startswith('answers: HTTP'))} expected "
            f"errors); {report['rejected']} rejection(s) asserted; {report['wall_s']}s"
            + (f", loading a model {load['mean_s']}s on average" if load.get("mean_s") is not None else "")
        )
