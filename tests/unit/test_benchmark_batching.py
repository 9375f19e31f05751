"""benchmarks.batching: the issue's three targets judged from measured cells, the report they go into, and the
text case's pieces (its requests, MLServer's body, the answer check)."""

import json

import numpy as np
import pytest

from benchmarks.batching import CASES, answer_differences, bodies, report, targets, text_mlserver_body, texts
from mlflow_triton.repository.guard import served_directories


def _cell(rows, clients, a, batched, mlserver, guarded=None):
    figures = {"a": a, "a'": batched, "g'": batched * 0.8 if guarded is None else guarded, "d'": mlserver}
    return {
        "rows": rows,
        "clients": clients,
        "targets": {key: {"rps": rps, "p50_ms": 1.0, "errors": []} for key, rps in figures.items()},
        "batched_counts": {"requests": 100, "rows": 100, "executions": 10},
        "guarded_counts": {"requests": 100, "rows": 100, "executions": 20},
    }


CELLS = [_cell(1, 1, 100.0, 96.0, 90.0), _cell(1, 16, 150.0, 600.0, 400.0), _cell(1000, 4, 10.0, 11.0, 10.0)]
INFO = {
    "nproc": 2,
    "cpu": "cpu",
    "memory": "1 GiB",
    "os": "Linux",
    "python": "3.11",
    "load_average_start": "1.00",
    "date": "2026-12-03 06:00 UTC",
}


def _measured(case):
    return {
        "case": case,
        "cells": CELLS,
        "triton_version": "2.51.0",
        "duration": 3.0,
        "rounds": 1,
        "mlserver_adaptive_batching": {"max_batch_size": 16},
        "max_batch_size": CASES[case].max_batch_size,
    }


def _table_row(text, number):
    """The cells of the table's ``number``-th row (0: the header)."""
    table = [line for line in text.splitlines() if line.startswith("| ")]
    return [cell.strip() for cell in (table[0] if number == 0 else table[number + 1]).split("|")[1:-1]]


def test_targets_judge_each_cell_by_the_issues_thresholds_when_figures_are_given():
    assert targets(CELLS) == [
        ("a'/a >= 0.95 at 1 client (1 row(s) x 1 client(s))", True, "0.96"),
        ("a'/a >= 3 at 16 clients, 1 row", True, "4.00"),
        ("a' >= 1.2 x d' (1 row(s) x 16 client(s))", True, "1.50"),
        ("a' >= 1.2 x d' (1000 row(s) x 4 client(s))", False, "1.10"),
    ]


def test_report_lists_every_target_and_marks_the_missed_ones_when_written():
    text = report(_measured("sklearn"), INFO, "2.00", "python -m benchmarks.batching --duration 3")

    assert all(f"**{key}**" in text for key in CASES["sklearn"].targets())
    assert "max_batch_size 4096 (dynamic batching" in text
    assert "Run: `python -m benchmarks.batching --duration 3` — 2026-12-03 06:00 UTC." in text
    assert _table_row(text, 0)[2:9] == ["a req/s", "a' req/s", "g' req/s", "d' req/s", "a'/a", "a'/d'", "g'/a'"]
    assert _table_row(text, 2)[:9] == ["1", "16", "150.0", "600.0", "480.0", "400.0", "4.00", "1.50", "0.80"]
    assert _table_row(text, 2)[-3:] == ["10.0", "5.0", "0"]
    assert "- MISSED: a' >= 1.2 x d' (1000 row(s) x 4 client(s)): 1.10" in text
    assert "- met: a'/a >= 3 at 16 clients, 1 row: 4.00" in text


def test_report_of_the_text_case_counts_texts_and_judges_no_targets_when_written():
    text = report(_measured("text"), INFO, "2.00")

    assert text.startswith("## Dynamic batching, a tiny BERT text-classification pipeline: a' (batched")
    assert "max_batch_size 64 (dynamic batching" in text
    assert _table_row(text, 0)[:2] == ["texts", "clients"]
    assert "No targets for this case: its figures are recorded (issue #31.6)." in text
    assert "MISSED" not in text and "Targets (issue #25)" not in text


def test_texts_are_of_different_lengths_from_the_tokenizers_vocabulary_and_repeat_for_a_seed():
    from tests.support import tiny_models

    vocabulary = set(tiny_models.shared_tokenizer().get_vocab())

    drawn = texts(8)

    assert drawn == texts(8) != texts(8, seed=8)
    assert len({len(text.split()) for text in drawn}) == 8
    assert all(1 <= len(text.split()) <= 24 and set(text.split()) <= vocabulary for text in drawn)


def test_text_mlserver_body_names_the_unnamed_column_as_mlserver_does_and_asks_for_a_list_of_texts():
    body = {"inputs": [{"name": "input_0", "datatype": "BYTES", "shape": [2], "data": ["a", "b c"]}], "outputs": []}

    assert json.loads(text_mlserver_body(body, contract=None)) == {
        "parameters": {"content_type": "str"},
        "inputs": [{"name": "input-0", "datatype": "BYTES", "shape": [2], "data": ["a", "b c"]}],
    }


LABELS = np.array([b"NEGATIVE", b"POSITIVE"], dtype=object)
SCORES = np.array([0.25, 0.75])


@pytest.mark.parametrize(
    ("outputs", "found"),
    [
        ([("label", [2], ["NEGATIVE", "POSITIVE"]), ("score", [2], [0.25, 0.75])], []),
        ([("label", [2, 1], ["NEGATIVE", "POSITIVE"]), ("score", [2, 1], [0.25, 0.75 + 1e-12])], []),
        ([("label", [2], ["NEGATIVE", "NEGATIVE"]), ("score", [2], [0.25, 0.75])], ["label: texts differ"]),
        ([("label", [2], ["NEGATIVE", "POSITIVE"]), ("score", [2], [0.25, 0.7501])], ["score: values differ"]),
        ([("label", [1], ["NEGATIVE"]), ("score", [2], [0.25, 0.75])], ["label: 1 values, expected 2"]),
        ([("output-0", [2], ["NEGATIVE", "POSITIVE"])], ["outputs ['output-0'], expected ['label', 'score']"]),
    ],
    ids=["same", "batched-shapes", "other-label", "other-score", "fewer-values", "other-names"],
)
def test_answer_differences_names_each_output_that_differs_whatever_its_shape(outputs, found):
    answer = {"outputs": [{"name": name, "shape": shape, "data": data} for name, shape, data in outputs]}

    assert answer_differences(answer, {"label": LABELS, "score": SCORES}) == found


def test_answer_differences_pairs_a_single_output_by_position_when_the_peer_names_it_otherwise():
    answer = {"outputs": [{"name": "output-0", "shape": [1, 2], "data": [0.25, 0.75]}]}

    assert answer_differences(answer, {"output_0": SCORES.reshape(1, 2)}) == []


@pytest.fixture(scope="module", params=sorted(CASES))
def saved_case(request, tmp_path_factory):
    """(case, unbatched repository, batched repository, guarded front), saved as the benchmark saves them."""
    case, root = CASES[request.param], tmp_path_factory.mktemp(request.param)
    saved = ((case.model, 0, True), (case.batched_model, case.max_batch_size, False))
    for name, max_batch_size, zero_row_guard in (*saved, (case.guarded_model, case.max_batch_size, True)):
        case.save(root / name, name, max_batch_size, zero_row_guard)
    return case, *(
        root / name / "model_repository" / name for name in (case.model, case.batched_model, case.guarded_model)
    )


def test_bodies_send_the_same_values_to_a_in_rows_to_a_prime_in_rows_by_one_and_to_mlserver_when_a_case_is_saved(
    saved_case,
):
    case, model_dir, batched_dir, _ = saved_case
    value = case.model_input(3)

    sent = {key: json.loads(body) for key, body in bodies(case, model_dir, batched_dir, value).items()}

    shapes = {key: {entry["shape"][1:] == [1] for entry in sent[key]["inputs"]} for key in sent}
    assert shapes == {"a": {False}, "a'": {True}, "g'": {True}, "d'": {False}}
    assert sent["g'"] == sent["a'"]
    assert all(entry["shape"][0] == 3 for key in sent for entry in sent[key]["inputs"])
    assert [entry["data"] for entry in sent["a"]["inputs"]] == [entry["data"] for entry in sent["a'"]["inputs"]]
    assert [entry["data"] for entry in sent["a"]["inputs"]] == [entry["data"] for entry in sent["d'"]["inputs"]]
    if case.name == "text":
        assert sent["d'"]["inputs"][0]["name"] == "input-0"
        assert sent["a"]["inputs"][0]["data"] == value
    else:
        assert [entry["name"] for entry in sent["d'"]["inputs"]] == list(value.columns)


def test_each_case_is_proved_for_batching_when_saved_with_its_max_batch_size(saved_case):
    case, _, batched_dir, guarded_front = saved_case
    validation = json.loads((batched_dir / "validation.json").read_text())

    assert validation["batching"]["max_batch_size"] == case.max_batch_size
    assert validation["batching"]["row_independence"]["proved"] is True
    assert validation["batching"]["zero_row_guard"] is False
    assert [d.name for d in served_directories(guarded_front)] == [case.guarded_model, f"{case.guarded_model}_batched"]


def test_mlserver_settings_name_the_package_by_its_absolute_path_when_given_a_relative_one(tmp_path, monkeypatch):
    from benchmarks.peers import MLServer

    monkeypatch.chdir(tmp_path)
    server = MLServer(tmp_path / "env", "work/package", "model", tmp_path / "settings", tmp_path / "mlserver.log")

    server.command()

    settings = json.loads((tmp_path / "settings" / "model" / "model-settings.json").read_text())
    assert settings["parameters"]["uri"] == str(tmp_path / "work" / "package")
