"""``make fidelity``: the long real-Triton campaign, with a report.

    python -m tests.support.fidelity.run [--cases 1000] [--rejections 100] [--seed S] [--work-dir DIR] [--nested]

Draws ``--cases`` served cases and ``--rejections`` rejected ones from the same strategies as
``tests/e2e/test_fidelity_generated.py``, with the seed ``--seed`` (default: ``FIDELITY_SEED``, else a
fresh one, printed), on one Triton server; the cases are drawn first, then served ``--workers`` at a
time (default 2). Unlike the test, a mismatch does not stop the campaign:
it is recorded with the case (a ``Case(...)`` to paste into ``@example``) and the campaign goes on;
the exit status is 1 when any case failed. Writes ``report.json`` and ``report.md`` (cases,
failures, time per phase, the slowest cases) into the work directory (default
``.work/fidelity/<seed>``) and prints the summary. ``--nested`` draws the served cases from the nested-column
strategy only (``nested_cases``: Array / Object / Array(Object) columns and malformed nested rows).
"""

import argparse
import concurrent.futures
import datetime
import itertools
import json
import os
import platform
import sys
import threading
import time
import traceback
from pathlib import Path

from hypothesis import HealthCheck, Phase, assume, given, settings
from hypothesis import seed as hypothesis_seed

from tests.property.fidelity_strategies import nested_cases, rejected_cases, served_cases

from .campaign import Campaign
from .seed import SEED


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m tests.support.fidelity.run", description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=1000, help="served cases (default 1000)")
    parser.add_argument("--rejections", type=int, default=None, help="rejected cases (default: cases / 10)")
    parser.add_argument("--seed", type=int, default=SEED, help="the Hypothesis seed (default: FIDELITY_SEED or fresh)")
    parser.add_argument("--work-dir", type=Path, default=None, help="default: .work/fidelity/<seed>")
    parser.add_argument(
        "--workers",
        type=int,
        default=2,
        help="served cases in flight at once (default 2: Triton loads one model while the next is logged and loaded)",
    )
    parser.add_argument("--nested", action="store_true", help="served cases from the nested-column strategy only")
    args = parser.parse_args(argv)
    rejections = args.rejections if args.rejections is not None else max(10, args.cases // 10)
    work_dir = (args.work_dir or Path(".work") / "fidelity" / str(args.seed)).resolve()
    work_dir.mkdir(parents=True, exist_ok=True)
    print(
        f"fidelity: FIDELITY_SEED={args.seed} (replay: make fidelity N={args.cases} FIDELITY_SEED={args.seed}); "
        f"{args.cases} served + {rejections} rejected cases; work dir {work_dir}",
        flush=True,
    )
    started = datetime.datetime.now(datetime.timezone.utc)
    failures = []
    with Campaign.open(work_dir / "campaign", progress=lambda line: print(line, flush=True)) as campaign:
        served = nested_cases() if args.nested else served_cases()
        _run(campaign, served, args.cases, args.seed, failures, serve=True, workers=args.workers)
        _run(campaign, rejected_cases(), rejections, args.seed, failures, serve=False)
        report = campaign.report(args.seed, failures)
    report.update(started=started.isoformat(timespec="seconds"), machine=_machine(), workers=args.workers)
    (work_dir / "report.json").write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    (work_dir / "report.md").write_text(markdown(report), encoding="utf-8")
    print(markdown(report), flush=True)
    print(f"fidelity: report in {work_dir / 'report.md'}", flush=True)
    return 1 if failures else 0


def _draw(campaign, strategy, count, seed, *, serve):
    """``count`` cases from ``strategy`` with ``seed``: served ones that logging must accept, or rejected ones."""
    cases = []

    @hypothesis_seed(seed)
    @settings(
        max_examples=count,
        deadline=None,
        database=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(case=strategy)
    def draw(case):
        rejection = campaign.expected_rejection(case)
        assume((rejection is None) == serve)
        cases.append((case, rejection))

    draw()
    return cases


def _run(campaign, strategy, count, seed, failures, *, serve, workers=1):
    """Run the drawn cases (served ones in ``workers`` threads); a failure is recorded and the campaign goes on."""
    what = "served" if serve else "rejected"
    cases = _draw(campaign, strategy, count, seed, serve=serve)
    started = time.monotonic()
    done = itertools.count(1)
    lock = threading.Lock()

    def one(case, rejection):
        clock = time.monotonic()
        outcome = "ok"
        try:
            if serve:
                campaign.serve(case)
            else:
                campaign.reject(case, rejection)
        except Exception as error:  # keep going: every failure is recorded with its case
            if campaign.server.poll() is not None:
                raise RuntimeError(f"tritonserver exited:\n{campaign.server.log_tail(40)}") from error
            outcome = f"FAILED: {type(error).__name__}: {str(error)[:300]}"
            with lock:
                failures.append(
                    {
                        "kind": what,
                        "case": repr(case),
                        "description": case.describe(),
                        "error": f"{type(error).__name__}: {error}",
                        "traceback": traceback.format_exc()[-3000:],
                    }
                )
        number = next(done)
        elapsed = time.monotonic() - started
        eta = elapsed / number * (len(cases) - number)
        print(
            f"[{what} {number:>4}/{len(cases)}] {time.monotonic() - clock:5.1f}s (elapsed {elapsed / 60:5.1f} min, "
            f"about {eta / 60:5.1f} min left) {case.describe()[:160]} {outcome}",
            flush=True,
        )

    pool = concurrent.futures.ThreadPoolExecutor(max_workers=workers if serve else 1)
    try:
        for future in [pool.submit(one, case, rejection) for case, rejection in cases]:
            future.result()
    finally:
        # On Ctrl-C / SIGTERM (or a dead server) the cases not started yet are dropped: the
        # executor's own exit would run every queued case before the campaign could stop.
        pool.shutdown(wait=True, cancel_futures=True)


def _machine():
    return {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()}


def markdown(report):
    """The report as Markdown: counts, failures, phases, slowest cases."""
    counts = report["counts"]
    lines = [
        f"# Fidelity campaign, FIDELITY_SEED={report['seed']}",
        "",
        f"- started {report.get('started')}, {report['wall_s'] / 60:.1f} min with {report.get('workers')} case(s) in "
        f"flight; Triton {report['triton_version']}; machine {report.get('machine')}",
        f"- served cases: {report['served']}; rejections asserted: {report['rejected']}; failures: "
        f"{len(report['failures'])}",
        f"- requests besides the shipped ones: {counts.get('requests: json', 0)} JSON, "
        f"{counts.get('requests: binary', 0)} binary; shipped: {counts.get('shipped: json', 0)} request.json, "
        f"{counts.get('shipped: binary', 0)} request.bin",
        "",
        "| what | count |",
        "| --- | --- |",
        *(f"| {name} | {value} |" for name, value in counts.items()),
        "",
        "| phase | total s | mean s | max s |",
        "| --- | --- | --- | --- |",
        *(f"| {name} | {p['total_s']} | {p['mean_s']} | {p['max_s']} |" for name, p in report["phases"].items()),
        "",
        "Slowest cases:",
        "",
        *(f"- {entry['total_s']} s {entry['phases']}: {entry['case']}" for entry in report["slowest_cases"]),
        "",
    ]
    if report["failures"]:
        lines += ["## Failures", ""]
        for failure in report["failures"]:
            lines += [
                f"### {failure['description']}",
                "",
                f"    {failure['error'][:2000]}",
                "",
                "```python",
                failure["case"],
                "```",
                "",
            ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
