"""Damaged run files read by the report, the tables and the export: one line naming the file (and the line),
exit 2, never a traceback and never a quietly empty record."""

import shutil
import subprocess
import sys

import pytest

from tests.analysis.fixture_runs import toy_run
from tests.conftest import REPO

READERS = {
    "report": lambda run, out: [
        "-m",
        "pos_bench.report",
        str(run),
        "-o",
        str(out / "r.html"),
        "--no-figures",
    ],
    "tables": lambda run, out: ["scripts/tables.py", str(run)],
    "export": lambda run, out: ["-m", "pos_bench.export", str(run), str(out / "x"), "--format", "inspect"],
}


@pytest.fixture(scope="module")
def played(tmp_path_factory):
    return toy_run(tmp_path_factory.mktemp("runs"), "raw", 2, skill=1.0)


def damage(run_dir, what):
    if what == "results.jsonl not utf-8":
        path = run_dir / "results.jsonl"
        lines = path.read_bytes().splitlines(keepends=True)
        path.write_bytes(lines[0] + b'{"task_id": "\xff\xfe"}\n' + b"".join(lines[1:]))
        return path, "line 2"
    if what == "events.jsonl not utf-8":
        (path, *_) = sorted(run_dir.glob("episodes/*/events.jsonl"))
        path.write_bytes(path.read_bytes() + b'{"kind": "\xc3("}\n')
        return path, "line"
    path = run_dir / "run.json"
    path.write_text({"run.json a list": "[1, 2]", "run.json not json": "{oops"}[what])
    return path, ""


@pytest.mark.parametrize("reader", READERS)
@pytest.mark.parametrize(
    "what", ["results.jsonl not utf-8", "events.jsonl not utf-8", "run.json a list", "run.json not json"]
)
def test_a_damaged_file_is_one_line_naming_it_and_exit_2(reader, what, played, tmp_path):
    run_dir = tmp_path / "copy"
    shutil.copytree(played, run_dir)
    path, line = damage(next(p.parent for p in run_dir.rglob("run.json")), what)
    if reader == "tables" and what == "events.jsonl not utf-8":
        pytest.skip("the tables read results rows, not transcripts")
    out = subprocess.run(
        [sys.executable, *READERS[reader](run_dir, tmp_path)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert out.returncode == 2, (out.returncode, out.stdout[-500:], out.stderr[-2000:])
    assert "Traceback" not in out.stderr
    (message,) = [x for x in out.stderr.strip().splitlines() if x.startswith("error:")]
    assert str(path) in message and line in message
