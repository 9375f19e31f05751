"""Session output for the fidelity campaign: its seed before the tests, its figures after them."""

from tests.support.fidelity.seed import SEED, SUMMARIES

FIDELITY_MODULE = "test_fidelity_generated.py"


def pytest_collection_finish(session):
    if any(item.nodeid.split("::")[0].endswith(FIDELITY_MODULE) for item in session.items):
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_line(f"fidelity: FIDELITY_SEED={SEED} (set FIDELITY_SEED={SEED} to replay this run's cases)")


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
            f"errors); {report['rejected']} rejection(s) asserted; {report['wall_s']}s, loading a model "
            f"{load.get('mean_s')}s on average"
        )
