"""Figure 3 data: trapping incidence and onsets, read from the episode folder, the row, or the events."""

import json
import shutil

from pos_bench.analysis.runs import episode_folder, load_run
from pos_bench.analysis.trapping import onsets, trapping


def incidence_of(folder):
    frame, distribution = trapping([load_run(folder)])
    return frame.iloc[0].to_dict(), distribution


def expected(folder):
    """Episodes and trapped episodes, from the full results in the episode folders (the rows are compact)."""
    rows = [json.loads(x) for x in (folder / "results.jsonl").open()]
    reports = [
        json.loads((episode_folder(folder, r["task_id"]) / "result.json").read_text())["report"] for r in rows
    ]
    trapped = [r for r in reports if any(h["trapped"] for h in r["belief_health_history"])]
    return len(rows), len(trapped)


def test_onsets_count_the_start_of_each_trapped_stretch():
    history = [
        {"trapped": False},
        {"trapped": True, "trapping_pattern": "static", "gap_dimension": "epistemic"},
        {"trapped": True, "trapping_pattern": "cycle", "gap_dimension": "epistemic"},
        {"trapped": False},
        {"trapped": True, "trapping_pattern": None, "gap_dimension": "achievement"},
    ]
    assert onsets(history) == [("static", "knowledge"), ("generic", "action")]


def test_incidence_and_patterns_from_the_pos_reports(fixture_runs):
    row, distribution = incidence_of(fixture_runs["toy_pos"])
    n, trapped = expected(fixture_runs["toy_pos"])
    assert (row["n"], row["trapped"]) == (n, trapped) and row["low %"] <= row["incidence %"] <= row["high %"]
    assert distribution["onsets"].sum() >= trapped
    _, loca_mix = incidence_of(fixture_runs["loca_pos"])
    assert set(loca_mix["pattern"]) <= {"static", "cycle", "drift", "generic"}
    assert set(loca_mix["dimension"]) <= {"knowledge", "action", "none"}


def test_baselines_and_no_trapping_runs_have_no_row(fixture_runs):
    frame, _ = trapping([load_run(fixture_runs["toy_raw"]), load_run(fixture_runs["toy_ablation"])])
    assert frame.empty


def test_compact_rows_read_the_episode_folder_then_the_events(fixture_runs, tmp_path):
    folder = tmp_path / "toy" / "pos" / "scripted"
    shutil.copytree(fixture_runs["toy_pos"], folder)
    _, trapped = expected(folder)
    rows = [json.loads(x) for x in (folder / "results.jsonl").open()]
    compact = "".join(json.dumps({k: v for k, v in r.items() if k != "report"}) + "\n" for r in rows)
    (folder / "results.jsonl").write_text(compact)
    assert incidence_of(folder)[0]["trapped"] == trapped  # from episodes/*/result.json
    for result in folder.glob("episodes/*/result.json"):
        result.unlink()
    assert incidence_of(folder)[0]["trapped"] == trapped  # from the memory events


def test_each_trial_of_a_task_is_read_from_its_own_folder(fixture_runs, tmp_path):
    folder = tmp_path / "toy" / "pos" / "scripted"
    shutil.copytree(fixture_runs["toy_pos"], folder)
    n, trapped = expected(folder)
    rows = [json.loads(x) for x in (folder / "results.jsonl").open()]
    results = {
        r["task_id"]: json.loads((episode_folder(folder, r["task_id"]) / "result.json").read_text())
        for r in rows
    }
    task = next(
        t for t, r in results.items() if any(h["trapped"] for h in r["report"]["belief_health_history"])
    )
    calm = results[task]
    calm["report"]["belief_health_history"] = [
        {**h, "trapped": False} for h in calm["report"]["belief_health_history"]
    ]
    again = episode_folder(folder, task).with_name(episode_folder(folder, task).name + "@t1")
    again.mkdir()
    (again / "result.json").write_text(json.dumps({**calm, "trial": 1}))
    row = next(r for r in rows if r["task_id"] == task)
    with (folder / "results.jsonl").open("a") as f:
        f.write(json.dumps({**row, "trial": 1, "report": calm["report"]}) + "\n")
    assert episode_folder(folder, task, 1) == again
    row, _ = incidence_of(folder)
    assert (row["n"], row["trapped"]) == (n + 1, trapped)  # trial 1 counted, and calm as its own folder says
