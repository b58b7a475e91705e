"""results.jsonl: compact rows, strict reading, the torn-tail repair and dropping errored rows."""

import json
import re

import pytest

from pos_bench.redact import Redactor
from pos_bench.runner.results import ResultsError, ResultsFile
from pos_bench.types import EpisodeResult, Usage


def test_rows_are_compact_redacted_and_read_back(tmp_path):
    results = ResultsFile(tmp_path / "results.jsonl", Redactor((("K", "sk-0123456789"),)))
    full = EpisodeResult(
        "t1", "error", error="401 sk-0123456789", report={"big": [1] * 100}, usage={"agent": Usage(3, 2, 1)}
    )
    results.append(full)
    (row,) = [json.loads(x) for x in (tmp_path / "results.jsonl").read_text().splitlines()]
    assert "report" not in row and "seconds" not in row and row["error"] == "401 [redacted $K]"
    (back,) = results.read()
    assert back.usage == {"agent": Usage(3, 2, 1)} and back.report == {}


def test_a_torn_tail_is_moved_aside_with_a_warning(tmp_path):
    path = tmp_path / "results.jsonl"
    path.write_text('{"task_id": "a", "status": "done"}\n{"task_id": "b", "sta')
    warnings = []
    results = ResultsFile(path, warn=warnings.append)
    assert [r.task_id for r in results.read()] == ["a"]
    assert (tmp_path / "results.jsonl.torn").read_text() == '{"task_id": "b", "sta'
    assert len(warnings) == 1 and "cut off" in warnings[0]


def test_errored_rows_are_dropped_and_others_kept(tmp_path):
    results = ResultsFile(tmp_path / "results.jsonl")
    for task_id, status in (("a", "done"), ("b", "error"), ("c", "done")):
        results.append(EpisodeResult(task_id, status))
    assert results.drop_errors() == 1
    assert [r.task_id for r in results.read()] == ["a", "c"]


def test_a_row_that_is_not_a_result_names_its_line(tmp_path):
    path = tmp_path / "results.jsonl"
    path.write_text('{"task_id": "a", "status": "done"}\n{"no_task": 1}\n')
    with pytest.raises(ResultsError, match="line 2 is not an episode result"):
        ResultsFile(path).read()


@pytest.mark.parametrize(
    ("edit", "named"),
    [
        ('"success": "false"', "success is 'false' (str), not bool"),
        ('"score": true', "score is True (bool), not int"),
        ('"steps": "3"', "steps is '3' (str), not int"),
        ('"status": "ok"', "status is 'ok'"),
        ('"task_id": 7', "task_id is 7 (int), not str"),
        ('"extras": []', "extras is [] (list), not dict"),
    ],
)
def test_a_typed_wrong_hand_edit_is_a_bad_line_naming_the_field(tmp_path, edit, named):
    path = tmp_path / "results.jsonl"
    row = json.dumps({"task_id": "b", "status": "done", "success": True, "score": 1.0, "steps": 3})
    key = edit.split(":")[0]
    fields = {k: v for k, v in json.loads(row).items() if f'"{k}"' != key}
    edited = json.dumps(fields)[:-1] + ", " + edit + "}"
    path.write_text('{"task_id": "a", "status": "done"}\n' + edited + "\n")
    with pytest.raises(
        ResultsError, match=r"line 2 is not an episode result \(TypeError: " + re.escape(named)
    ):
        ResultsFile(path).read()
