"""benchmarks.batching: issues #25's, #43's and #52's targets judged from measured cells, the report they go into,
and the cases' pieces (their requests to every target, MLServer's body, the answer check, the network's ceiling)."""

import json

import numpy as np
import pytest

from benchmarks import batching
from benchmarks.batching import (
    CASES,
    answer_differences,
    bodies,
    ceiling_at,
    network_ceiling,
    report,
    targets,
    text_mlserver_body,
    texts,
)
from mlflow_triton.repository.guard import served_directories


def _cell(rows, clients, a, batched, mlserver, export):
    figures = {"a": a, "a'": batched, "d'": mlserver, "e": export}
    counts = {"a'": 10, "e": 25}
    return {
        "rows": rows,
        "clients": clients,
        "targets": {key: {"rps": rps, "p50_ms": 1.0, "errors": []} for key, rps in figures.items()},
        "counts": {key: {"requests": 100, "rows": 100, "executions": n} for key, n in counts.items()},
        "rss_mb": {"a": 120.0, "a'": 130.0, "d'": 400.0, "e": 90.0, "tritonserver": 300.0 + clients},
    }


CELLS = [
    _cell(1, 1, 100.0, 96.0, 90.0, 200.0),
    _cell(1, 16, 150.0, 600.0, 400.0, 1000.0),
    _cell(1000, 4, 10.0, 11.0, 10.0, 40.0),
]
#: the network's rates at each batch, before and after the servers (network_ceiling's form)
CEILINGS = [
    {"tokens": 18, "rates": {1: 300.0, 2: 500.0, 4: 800.0, 16: 1200.0, 32: 1500.0}},
    {"tokens": 18, "rates": {1: 310.0, 2: 450.0, 4: 900.0, 16: 1100.0, 32: 1600.0}},
]
INFO = {
    "nproc": 2,
    "cpu": "cpu",
    "memory": "1 GiB",
    "os": "Linux",
    "python": "3.11",
    "load_average_start": "1.00",
    "date": "2026-12-03 06:00 UTC",
}


def _measured(case, ceilings=()):
    return {
        "case": case,
        "cells": CELLS,
        "triton_version": "2.51.0",
        "duration": 3.0,
        "rounds": 1,
        "mlserver_adaptive_batching": {"max_batch_size": 16},
        "max_batch_size": CASES[case].max_batch_size,
        "export_max_batch_size": CASES[case].export_max_batch_size,
        "ceilings": list(ceilings),
    }


def _table_row(text, number):
    """The cells of the first table's ``number``-th row (0: the header)."""
    lines = text.splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("| "))
    table = [line for line in lines[first:] if line.startswith("| ")][: len(CELLS) + 2]
    return [cell.strip() for cell in (table[0] if number == 0 else table[number + 1]).split("|")[1:-1]]


def test_targets_judge_the_sklearn_cells_by_the_issues_thresholds():
    assert targets("sklearn", CELLS) == [
        ("a'/a >= 0.95 (#43/#52: batching costs a lone client at most 5 %; 1 x 1 client(s))", True, "0.96"),
        ("a'/a >= 3 (#25: batching pays at 16 clients; 1 x 16 client(s))", True, "4.00"),
        ("a'/e >= 0.5 (#43/#52: batched vs the ONNX export at 16 clients; 1 x 16 client(s))", True, "0.60"),
        ("a'/d' >= 1.2 (#25/#52: batched vs MLServer adaptive; 1 x 16 client(s))", True, "1.50"),
        ("a'/d' >= 1.2 (#25/#52: batched vs MLServer adaptive; 1000 x 4 client(s))", False, "1.10"),
    ]


def test_targets_judge_the_text_cells_by_the_issues_thresholds_for_the_pyfunc_path_and_the_export():
    assert targets("text", CELLS) == [
        ("e/d' >= 1.5 (#43: the text export vs MLServer adaptive; 1 x 1 client(s))", True, "2.22"),
        ("a'/d' >= 1.2 (#43/#52: text, pyfunc path, batched vs MLServer adaptive; 1 x 16 client(s))", True, "1.50"),
        ("e/a >= 5 (#43/#52: the text export vs the unbatched repository; 1 x 16 client(s))", True, "6.67"),
        ("e/d' >= 3 (#43/#52: the text export vs MLServer adaptive; 1 x 16 client(s))", False, "2.50"),
    ]


def test_targets_judge_the_sentence_encoders_export_against_mlserver_and_its_networks_ceiling_at_that_cell():
    assert targets("embeddings", CELLS, CEILINGS) == [
        ("e/d' >= 1.5 (#43: the text export vs MLServer adaptive; 1 x 1 client(s))", True, "2.22"),
        ("e/d' >= 1.2 (#52: the sentence encoder's export vs MLServer adaptive; 1 x 16 client(s))", True, "2.50"),
        (
            "e >= 0.7 x ceiling (#52: the export vs its network alone at batches <= 16; 1 x 16 client(s))",
            True,
            "0.91 of the 1100 texts/s it runs in batches of 16",
        ),
    ]
    slow = [_cell(1, 16, 150.0, 600.0, 400.0, 700.0)]
    assert targets("embeddings", slow, CEILINGS)[-1][1:] == (False, "0.64 of the 1100 texts/s it runs in batches of 16")


def test_the_ceiling_at_a_cell_is_the_best_batch_its_clients_can_form_in_the_lower_measurement():
    assert ceiling_at(CEILINGS, 16) == (1100.0, 16)  # 32 is more than 16 clients form
    assert ceiling_at(CEILINGS, 4) == (800.0, 4)
    assert ceiling_at(CEILINGS, 1) == (300.0, 1)
    assert ceiling_at(json.loads(json.dumps(CEILINGS)), 3) == (450.0, 2)  # batching.json's string keys


def test_an_export_target_missed_says_what_it_needs_as_a_share_of_its_networks_ceiling_and_a_met_one_does_not():
    needs = "e/d' >= 3 (#43/#52: the text export vs MLServer adaptive; 1 x 16 client(s))"
    above = dict((what, (met, value)) for what, met, value in targets("text", CELLS, CEILINGS))
    within = [{"tokens": 18, "rates": {16: 1600.0}}]
    within = dict((what, (met, value)) for what, met, value in targets("text", CELLS, within))

    assert above[needs] == (False, "2.50 (needs 1200 texts/s: 109% of the 1100 its network runs)")
    assert within[needs] == (False, "2.50 (needs 1200 texts/s: 75% of the 1600 its network runs)")
    assert dict((what, value) for what, _, value in targets("text", CELLS))[needs] == "2.50"
    met = "e/a >= 5 (#43/#52: the text export vs the unbatched repository; 1 x 16 client(s))"
    assert above[met] == within[met] == (True, "6.67")


def test_report_of_a_text_export_tables_its_networks_rates_and_each_cells_share_of_its_ceiling():
    text = report(_measured("embeddings", CEILINGS), INFO, "2.00")

    assert "| before the servers | 300 " in text and "| after the servers  | 310 " in text
    assert "(18 tokens, the padding the served model gives such an execution)" in text
    header = _table_row(text, 0)
    row = dict(zip(header, _table_row(text, 2)))
    assert row["e / ceiling"] == "0.91"
    assert dict(zip(header, _table_row(text, 1)))["e / ceiling"] == "0.67"  # 200 of the 300 a lone request gets
    assert dict(zip(header, _table_row(text, 3)))["e / ceiling"] == "—"  # 1,000 texts: not the 1-text request's
    assert "Ceiling of e" not in report(_measured("embeddings"), INFO, "2.00")


def test_report_lists_every_target_its_memory_and_marks_the_missed_ones_when_written():
    text = report(_measured("sklearn"), INFO, "2.00", "python -m benchmarks.batching --duration 3")

    assert all(f"**{key}**" in text for key in CASES["sklearn"].targets())
    assert "max_batch_size 4096 (dynamic batching, requests joined; one model directory)" in text
    assert "Run: `python -m benchmarks.batching --duration 3` — 2026-12-03 06:00 UTC." in text
    header = _table_row(text, 0)
    assert header[2:6] == ["a req/s", "a' req/s", "d' req/s", "e req/s"]
    row = dict(zip(header, _table_row(text, 2)))
    assert (row["a'/a"], row["a'/d'"], row["a'/e"], row["e/a"], row["e/d'"]) == ("4.00", "1.50", "0.60", "6.67", "2.50")
    assert (row["a' requests/execution"], row["e requests/execution"]) == ("10.0", "4.0")
    assert (row["a RSS MiB"], row["a' RSS MiB"], row["d' RSS MiB"], row["e RSS MiB"]) == ("120", "130", "400", "90")
    assert row["errors"] == "0"
    assert "the tritonserver process serving a and a' held 301-316 MiB beside them." in text
    assert "- MISSED: a'/d' >= 1.2 (#25/#52: batched vs MLServer adaptive; 1000 x 4 client(s)): 1.10" in text
    assert "- met: a'/a >= 3 (#25: batching pays at 16 clients; 1 x 16 client(s)): 4.00" in text
    assert "g'" not in text and "guard" not in text


def test_report_of_the_text_case_counts_texts_when_written():
    text = report(_measured("text"), INFO, "2.00")

    assert text.startswith("## Served side by side, a tiny BERT text-classification pipeline: the batched")
    assert "max_batch_size 64 (dynamic batching" in text and "e max_batch_size 64" in text
    assert _table_row(text, 0)[:2] == ["texts", "clients"]
    assert "- MISSED: e/d' >= 3 (#43/#52: the text export vs MLServer adaptive; 1 x 16 client(s)): 2.50" in text


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
    """(case, unbatched repository, batched repository or None, ONNX export), saved and exported as the benchmark
    does."""
    from mlflow_triton.export import export_onnx

    case, root = CASES[request.param], tmp_path_factory.mktemp(request.param)
    saved = [(case.model, 0)] + ([(case.batched_model, case.max_batch_size)] if case.batched else [])
    for name, max_batch_size in saved:
        case.save(root / name, name, max_batch_size)
    export = export_onnx(
        str(root / case.model), root / "onnx", max_batch_size=case.export_max_batch_size, backend="python"
    )
    directories = [root / name / "model_repository" / name for name, _ in saved]
    return case, *directories, *[None] * (2 - len(directories)), export


def test_bodies_send_the_same_values_to_every_target_in_its_shapes_when_a_case_is_saved(saved_case):
    case, model_dir, batched_dir, export_dir = saved_case
    value = case.model_input(3)

    sent = {key: json.loads(body) for key, body in bodies(case, model_dir, batched_dir, export_dir, value).items()}

    assert set(sent) == set(case.targets()) and (case.batched or set(sent) == {"a", "d'", "e"})
    shapes = {key: {entry["shape"][1:] == [1] for entry in sent[key]["inputs"]} for key in sent}
    # the export sends columns and texts as [rows, 1] (a text export is one batched model since #52)
    assert shapes == {key: {key in ("a'", "e")} for key in sent}
    assert all(entry["shape"][0] == 3 for key in sent for entry in sent[key]["inputs"])
    data = {key: [entry["data"] for entry in sent[key]["inputs"]] for key in sent}
    assert all(values == data["a"] for values in data.values())
    if case.unit == "texts":
        assert sent["d'"]["inputs"][0]["name"] == "input-0"
        assert sent["a"]["inputs"][0]["data"] == value
    else:
        assert [entry["name"] for entry in sent["d'"]["inputs"]] == list(value.columns)


@pytest.mark.parametrize("saved_case", sorted(name for name in CASES if CASES[name].batched), indirect=True)
def test_each_batched_case_is_one_model_directory_proved_for_batching_when_saved_with_its_max_batch_size(saved_case):
    case, _, batched_dir, _ = saved_case
    validation = json.loads((batched_dir / "validation.json").read_text())

    assert validation["batching"]["max_batch_size"] == case.max_batch_size
    assert validation["batching"]["row_independence"]["proved"] is True
    assert "zero_row_guard" not in validation["batching"]
    assert served_directories(batched_dir) == (batched_dir,)
    assert sorted(path.name for path in batched_dir.parent.iterdir()) == [case.batched_model]


@pytest.mark.parametrize("saved_case", sorted(name for name in CASES if CASES[name].text_export), indirect=True)
def test_network_ceiling_times_the_exports_graph_on_the_tokenized_text_at_each_batch_up_to_its_max_batch_size(
    saved_case, monkeypatch
):
    from mlflow_triton.export._text_pipeline import TextPipeline

    case, *_, export_dir = saved_case
    text = case.model_input(1)
    pipeline = TextPipeline(served_directories(export_dir)[0] / "1")
    lower = pipeline.spec["lower_case"]

    found, batches = network_ceiling(export_dir, text, seconds=0.01), batching.CEILING_BATCHES
    monkeypatch.setattr(batching, "CEILING_BATCHES", (1, case.export_max_batch_size + 1))
    capped = network_ceiling(export_dir, text, seconds=0.01)

    assert found["tokens"] == len(pipeline.tokenizer.encode(text[0].lower() if lower else text[0]).ids)
    assert set(found["rates"]) == {batch for batch in batches if batch <= case.export_max_batch_size}
    assert all(rate > 0 for rate in found["rates"].values())
    assert set(capped["rates"]) == {1}


def test_mlserver_settings_name_the_package_by_its_absolute_path_when_given_a_relative_one(tmp_path, monkeypatch):
    from benchmarks.peers import MLServer

    monkeypatch.chdir(tmp_path)
    server = MLServer(tmp_path / "env", "work/package", "model", tmp_path / "settings", tmp_path / "mlserver.log")

    server.command()

    settings = json.loads((tmp_path / "settings" / "model" / "model-settings.json").read_text())
    assert settings["parameters"]["uri"] == str(tmp_path / "work" / "package")


def test_a_case_measured_without_batching_is_judged_on_the_export_alone_and_reports_no_batched_column():
    unbatched = [
        {
            **cell,
            "targets": {key: cell["targets"][key] for key in ("a", "d'", "e")},
            "counts": {"e": cell["counts"]["e"]},
        }
        for cell in CELLS
    ]
    measured = {**_measured("embeddings"), "cells": unbatched}

    text = report(measured, INFO, "2.00")

    assert [what.split(" (")[0] for what, *_ in targets("embeddings", unbatched)] == ["e/d' >= 1.5", "e/d' >= 1.2"]
    assert "a'" not in text
    assert _table_row(text, 0)[2:7] == ["a req/s", "d' req/s", "e req/s", "e/a", "e/d'"]
