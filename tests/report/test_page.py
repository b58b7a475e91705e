"""The report file itself: one self-contained file, escaped tables, embedded data that decodes to the runs,
and the command line."""

import base64
import gzip
import json
import re
import shutil
import subprocess
import sys

from pos_bench import events
from pos_bench.analysis import cores
from pos_bench.benchmarks.household import Household, household_truth
from pos_bench.report.episodes import Strings, beside_truth, turns
from pos_bench.report.page import MAX_MB, render
from pos_bench.truth import Claim, Fact
from tests.analysis.fixture_runs import XSS
from tests.conftest import REPO


def block(html: str, name: str) -> dict:
    b64 = re.search(
        rf'<script type="application/gzip-base64" id="{name}">(.*?)</script>', html, re.DOTALL
    ).group(1)
    return json.loads(gzip.decompress(base64.b64decode(b64)))


def embedded(html: str) -> dict:
    """The index, each episode given its packed steps (`turns`, `strings`) from its own block."""
    data = block(html, "report-data")
    for run in data["runs"]:
        for ep in run["episodes"]:
            if ep["block"] is not None:
                ep.update(block(html, f"ep-{ep['block']}"))
    return data


def test_report_is_self_contained_and_its_data_is_the_runs(fixture_runs):
    root = fixture_runs["toy_pos"].parents[2]
    html = render([root], spec=None, with_figures=False)
    assert not re.search(r'(src|href)="(https?:)?//', html), "nothing may load from the network"
    data = embedded(html)
    names = [r["name"] for r in data["runs"]]
    assert "toy/pos/scripted" in names and "toy/pos/scripted_killed" in names
    pos = data["runs"][names.index("toy/pos/scripted")]
    rows = [json.loads(x) for x in (fixture_runs["toy_pos"] / "results.jsonl").open()]
    assert len(pos["episodes"]) == len(rows)
    first = pos["episodes"][0]
    assert sum(1 for t in first["turns"] if "step" in t) == first["steps"]
    statuses = [t["memory"]["status"] for t in first["turns"] if "memory" in t]
    assert statuses[:3] == ["validated", "repaired", "rejected"]
    texts = [s for run in data["runs"] for ep in run["episodes"] for s in ep["strings"]]
    assert any(XSS in s for s in texts) and XSS not in html  # only inside the packed data


def test_error_text_in_a_table_cell_is_escaped(fixture_runs, tmp_path):
    folder = tmp_path / "toy" / "raw" / "scripted"
    shutil.copytree(fixture_runs["toy_raw"], folder)
    rows = [json.loads(x) for x in (folder / "results.jsonl").open()]
    rows[0].update(status="error", error='<img src=x onerror="alert(1)">boom')
    (folder / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    html = render([folder], spec=None, with_figures=False)
    assert '<img src=x onerror="alert(1)">' not in html
    assert "&lt;img src=x onerror=&#34;alert(1)&#34;&gt;boom" in html


def test_command_line_writes_one_file_for_a_finished_and_an_interrupted_run(fixture_runs, tmp_path):
    out = tmp_path / "report.html"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pos_bench.report",
            str(fixture_runs["toy_pos"]),
            str(fixture_runs["toy_partial"]),
            "-o",
            str(out),
            "--spec",
            str(tmp_path),
        ],
        cwd=REPO,
        check=True,
        capture_output=True,
        text=True,
    )
    html = out.read_text()
    assert "interrupted" in html and "data:image/png;base64," in html
    assert [r["name"] for r in embedded(html)["runs"]] == ["toy/pos/scripted", "toy/pos/scripted_killed"]


def test_episodes_of_a_run_no_process_writes_are_interrupted_never_running(fixture_runs, tmp_path):
    from pos_bench.runner.results import writer_lock

    folder = tmp_path / "toy" / "pos" / "scripted_killed"
    shutil.copytree(fixture_runs["toy_partial"], folder)

    def statuses() -> list[str]:
        html = render([folder], spec=None, with_figures=False)
        (run,) = embedded(html)["runs"]
        rows = re.findall(r'<td class="(\w+)">\1</td>', html)
        assert sorted(rows) == sorted(e["status"] for e in run["episodes"])  # the table and the data agree
        return [e["status"] for e in run["episodes"]]

    stopped = statuses()
    assert stopped.count("interrupted") == 6 and stopped.count("done") == 6 and "running" not in stopped
    with writer_lock(folder):  # a live writer: the same episodes are still being played
        live = statuses()
    assert live.count("running") == 6 and "interrupted" not in live


def test_episode_view_puts_the_truth_beside_the_claims_with_false_ones_marked(fixture_runs):
    html = render([fixture_runs["toy_pos"]], spec=None, with_figures=False)
    data = embedded(html)
    shown = [(t, ep["strings"]) for ep in data["runs"][0]["episodes"] for t in ep["turns"] if t.get("claims")]
    assert shown and all("truth" in t for t, _ in shown)
    verdicts = {c[1] for t, _ in shown for c in t["claims"]}
    assert {"true", "false"} <= verdicts  # the fixture places the mug in cabinet 1, right in some tasks only
    wrong, strings = next((c, texts) for t, texts in shown for c in t["claims"] if c[1] == "false")
    assert "cabinet 1" in strings[wrong[0]] and "(truth: " in strings[wrong[2]]
    first, strings = shown[0]
    truth_text = strings[first["truth"]["facts"]]
    assert "mug 1 · location = " in truth_text
    assert "Belief accuracy against the ground truth" in html


def test_each_truth_lists_its_facts_in_the_order_of_facts():
    facts = (
        Fact("desk 1", "location", "room"),
        Fact("desk", "open", "true"),
        Fact("desk", "location", "room"),
        Fact("Desk", "location", "room"),
    )
    moved = (*facts[:3], Fact("Desk", "location", "hall"))
    strings = Strings()
    episode = [events.Reset(observation={"text": "hi"}), events.Truth(step=-1, facts=facts)]
    for step, world in enumerate((facts, facts, moved)):
        episode += [events.Step(turn=step, action="go"), events.Truth(step=step, facts=world)]
    shown = [strings.items[t["truth"]["facts"]].splitlines() for t in turns(episode, strings)]
    assert [len(lines) for lines in shown] == [4, 4, 4]
    assert shown[0] == shown[1] == [f"{f.subject} · {f.attribute} = {f.value}" for f in sorted(facts)]
    assert shown[2] == [f"{f.subject} · {f.attribute} = {f.value}" for f in sorted(moved)] != shown[1]


def test_a_claim_about_an_invented_entity_is_marked_false_with_no_such_entity_in_the_truth():
    truth = household_truth(
        Household(locations={"mug 1": ("cabinet 1",)}, receptacles=("cabinet 1",)), "put a mug in cabinet."
    )
    claims = [Claim("mug 1"), Claim("desk4", "id: 1234567890"), Claim("room", "here")]
    strings = Strings()
    rows = beside_truth(claims, truth, strings)
    assert [row[1] for row in rows] == ["true", "false", "unscored"]
    assert strings.items[rows[0][2]] == "mug 1 · exists = true"
    assert strings.items[rows[1][2]] == "desk 4 · exists = true (truth: no such entity)"
    assert strings.items[rows[2][2]] == ""


def test_a_run_killed_with_sigkill_reads_interrupted_and_a_live_one_running(tmp_path, tmp_path_factory):
    import os
    import signal
    import time

    from pos_bench.analysis.runs import load_run, runs_index

    cmd = [
        sys.executable,
        "-m",
        "pos_bench",
        "bench=toy",
        "bench.n_tasks=6",
        "bench.max_turns=6",
        "method=raw",
        "model=scripted",
        "model.delay=0.2",
        f"results_root={tmp_path}",
        "runner.progress=false",
        "runner.n_jobs=2",
        "runner.backend=loky",
    ]
    scratch = tmp_path_factory.mktemp("tmp")  # the run's budget folder, which a SIGKILL leaves behind
    proc = subprocess.Popen(
        cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
        env={**os.environ, "TMPDIR": str(scratch)},
    )  # fmt: skip

    def unfinished(folder) -> list:
        return [p for p in (folder / "episodes").glob("*") if not (p / "result.json").exists()]

    folder = None
    deadline = time.time() + 120
    while time.time() < deadline:
        found = list((tmp_path / "toy" / "raw" / "scripted").glob("*/results.jsonl"))
        if found and found[0].read_text().count("\n") >= 1 and unfinished(found[0].parent):
            folder = found[0].parent
            break
        time.sleep(0.05)
    assert folder is not None, "the run never had a finished and an unfinished episode at once"
    try:
        live = [
            e["status"]
            for e in embedded(render([folder], spec=None, with_figures=False))["runs"][0]["episodes"]
        ]
        assert "running" in live and "interrupted" not in live  # its writer (the driver) is alive
    finally:
        os.kill(proc.pid, signal.SIGKILL)  # the driver only: its workers notice and exit
        proc.wait()
    time.sleep(1.0)  # the workers' watchers end them within 0.2 s
    html = render([folder], spec=None, with_figures=False)
    statuses = [e["status"] for e in embedded(html)["runs"][0]["episodes"]]
    assert "interrupted" in statuses and "running" not in statuses
    # every episode folder without a row is interrupted: those without result.json, and one whose worker wrote
    # result.json just before the driver died, before the driver could append its row (it is played again)
    recorded = (folder / "results.jsonl").read_text().count("\n")
    assert statuses.count("done") == recorded
    assert statuses.count("interrupted") == len(list((folder / "episodes").iterdir())) - recorded
    assert statuses.count("interrupted") >= len(unfinished(folder))
    row = runs_index([load_run(folder)]).iloc[0]
    assert row["running"] == 0 and row["interrupted"] == statuses.count("interrupted")
    assert row["left"] == 6 - recorded  # run.json says how many episodes the run plays
    assert "interrupted" in row["flags"] and "in progress" not in row["flags"]


def test_a_compaction_opens_its_turn_with_its_tokens_and_summary(tmp_path):
    from pos_bench.runner import run
    from tests.baselines.compaction.test_method import SCHEMA_REPLY, config

    folder = tmp_path / "toy" / "compaction" / "scripted"
    overrides = ("bench=toy", "method=compaction", "model=scripted", SCHEMA_REPLY, "bench.limit=1")
    run(config(*overrides, "cache.mode=off", "runner.progress=false"), folder, {"label": "test"})
    data = embedded(render([tmp_path], spec=None, with_figures=False))
    episode = data["runs"][0]["episodes"][0]
    turns = episode["turns"]
    opened = [t for t in turns if any(note[0] == "compaction" for note in t["notes"])]
    assert opened and all(
        t["calls"][0]["role"] == "compactor" or t["calls"][0]["role"] == "agent" for t in opened
    )
    text = episode["strings"][next(n[1] for n in opened[0]["notes"] if n[0] == "compaction")]
    assert "CompactionSummary" in text and "tokens" in text and "summary:" in text


def test_each_episode_is_its_own_block_and_the_blocks_stop_at_the_bound(fixture_runs):
    root = fixture_runs["toy_pos"].parents[2]
    whole = render([root], spec=None, with_figures=False)
    index = block(whole, "report-data")
    episodes = [ep for run in index["runs"] for ep in run["episodes"]]
    assert "turns" not in episodes[0] and "strings" not in index  # opening the page inflates the index alone
    blocks = [ep["block"] for ep in episodes]
    assert None not in blocks and sorted(blocks) == list(range(len(episodes)))
    sizes = [len(re.search(rf'id="ep-{b}">(.*?)</script>', whole, re.DOTALL).group(1)) for b in blocks]
    bound = sum(sorted(sizes)[: len(sizes) // 2]) / 1e6  # room for about half of them
    cut = render([root], spec=None, with_figures=False, max_mb=bound)
    kept = [
        ep for run in block(cut, "report-data")["runs"] for ep in run["episodes"] if ep["block"] is not None
    ]
    packed = re.findall(r'id="ep-\d+">(.*?)</script>', cut, re.DOTALL)
    assert 0 < len(kept) < len(episodes) and sum(len(b) for b in packed) <= bound * 1e6
    assert f"The steps of {len(episodes) - len(kept)} episodes are not embedded" in cut


def test_blocks_packed_by_worker_processes_make_the_same_page(fixture_runs, monkeypatch):
    root = fixture_runs["toy_pos"].parents[2]
    alone = [render([root], spec=None, with_figures=False, max_mb=mb) for mb in (MAX_MB, 0.01)]
    monkeypatch.setattr(cores, "SPREAD_BYTES", 0)  # the fixture's transcripts are small: pack in workers
    shared = [render([root], spec=None, with_figures=False, max_mb=mb) for mb in (MAX_MB, 0.01)]
    assert shared == alone
    assert "episodes are not embedded" in shared[1] and "episodes are not embedded" not in shared[0]
