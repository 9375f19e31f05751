"""benchmarks.batching: the issue's three targets judged from measured cells, and the report they go into."""

from benchmarks.batching import TARGETS, report, targets


def _cell(rows, clients, a, batched, mlserver):
    figures = {"a": a, "a'": batched, "d'": mlserver}
    return {
        "rows": rows,
        "clients": clients,
        "targets": {key: {"rps": rps, "p50_ms": 1.0, "errors": []} for key, rps in figures.items()},
        "batched_counts": {"requests": 100, "rows": 100, "executions": 10},
    }


CELLS = [_cell(1, 1, 100.0, 96.0, 90.0), _cell(1, 16, 150.0, 600.0, 400.0), _cell(1000, 4, 10.0, 11.0, 10.0)]


def test_targets_judge_each_cell_by_the_issues_thresholds_when_figures_are_given():
    assert targets(CELLS) == [
        ("a'/a >= 0.95 at 1 client (1 row(s) x 1 client(s))", True, "0.96"),
        ("a'/a >= 3 at 16 clients, 1 row", True, "4.00"),
        ("a' >= 1.2 x d' (1 row(s) x 16 client(s))", True, "1.50"),
        ("a' >= 1.2 x d' (1000 row(s) x 4 client(s))", False, "1.10"),
    ]


def test_report_lists_every_target_and_marks_the_missed_ones_when_written():
    measured = {
        "cells": CELLS,
        "triton_version": "2.51.0",
        "duration": 3.0,
        "rounds": 1,
        "mlserver_adaptive_batching": {"max_batch_size": 16},
        "max_batch_size": 4096,
    }
    info = {"nproc": 2, "cpu": "cpu", "memory": "1 GiB", "os": "Linux", "python": "3.11", "load_average_start": "1.00"}

    text = report(measured, info, "2.00")

    assert all(f"**{key}**" in text for key in TARGETS)
    assert [cell.strip() for cell in text.splitlines()[11].split("|")[1:8]] == [
        "1",
        "16",
        "150.0",
        "600.0",
        "400.0",
        "4.00",
        "1.50",
    ]
    assert "- MISSED: a' >= 1.2 x d' (1000 row(s) x 4 client(s)): 1.10" in text
    assert "- met: a'/a >= 3 at 16 clients, 1 row: 4.00" in text
