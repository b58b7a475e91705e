"""End to end (issue 40): a scripted doctor whose answer the rules judge cannot decide; the run's summary, its
printed table and the HTML report count the undecided answers, which score as not correct."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from pos_bench.report.page import render

REPO = Path(__file__).resolve().parents[3]


def run_clindiag(results: Path, final_diagnosis: str, data: Path) -> str:
    reply = json.dumps(
        {
            "thought": "done",
            "action": {
                "name": "submit_diagnosis",
                "arguments": {
                    "final_diagnosis": final_diagnosis,
                    "differential_diagnosis": "",
                    "diagnostic_reasoning": "scripted",
                },
            },
        }
    )
    command = [
        sys.executable,
        "-m",
        "pos_bench",
        "bench=clindiag",
        "method=raw",
        "model=scripted",
        "bench.limit=2",
        f"+model.default='{reply}'",
        f"results_root={results}",
        f"bench.data_dir={data}",
    ]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=600, check=True)
    return done.stdout


def test_undecided_answers_reach_the_summary_the_table_and_the_report(tmp_path, shared):
    # Cyrillic look-alike letters: the judge refuses to read them as the reference, and cannot call them wrong
    out = run_clindiag(tmp_path, "Sаrcоidоsis", shared / "benchmarks" / "clindiag")
    summary = json.loads(next(tmp_path.rglob("summary.json")).read_text())
    assert summary["extras"]["undecided"] == 1.0
    assert summary["extras"]["diagnosis_correct"] == 0.0
    header, row = [
        line.split() for line in out.splitlines() if line.split()[:1] in (["bench"], ["clindiag"])
    ][:2]
    assert row[header.index("undecided")] == "1.0"
    tables = render([tmp_path], with_figures=False).split("<table")
    table = next(t for t in tables if "<th>undecided</th>" in t).split("</table>")[0]
    rows = [re.findall(r"<t[hd]>(.*?)</t[hd]>", row) for row in table.split("<tr>")[1:]]
    assert rows[1][rows[0].index("undecided")] == "2"


def test_a_plainly_wrong_answer_is_rejected_not_undecided(tmp_path, shared):
    run_clindiag(tmp_path, "Not a disease at all; common cold", shared / "benchmarks" / "clindiag")
    summary = json.loads(next(tmp_path.rglob("summary.json")).read_text())
    assert summary["extras"]["undecided"] == 0.0
