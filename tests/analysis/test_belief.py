"""The belief-accuracy table and figure, from the scripted fixture runs' recorded truth and claims."""

import json

from pos_bench import events
from pos_bench.analysis.belief import belief_accuracy, run_beliefs
from pos_bench.analysis.plots import belief_plot
from pos_bench.analysis.runs import episode_folder, load_run
from pos_bench.benchmarks.household import Household, household_truth
from pos_bench.transcript import episode_dir
from pos_bench.truth import Claim, judge


def scored_facts(run):
    """True and scored facts over the run, counted straight from each episode's events."""
    true = scored = 0
    for task in run.finished["task_id"]:
        stream = list(events.read(episode_folder(run.folder, task) / "events.jsonl"))
        truths, held = events.truths(stream), events.claims(stream) or {}
        for step, claims in held.items():
            verdicts = [j.verdict for j in judge(claims, truths[step])]
            true += verdicts.count("true")
            scored += verdicts.count("true") + verdicts.count("false")
    return true, scored


def test_pos_rows_pool_the_facts_of_every_episode_with_intervals(fixture_runs):
    checked = set()
    for key in ("toy_pos", "rca_pos", "loca_pos"):
        run = load_run(fixture_runs[key])
        table, per_step = belief_accuracy([run])
        row = table.iloc[0]
        true, scored = scored_facts(run)
        assert row["n"] == len(run.finished) and row["facts scored"] == scored
        assert row["updates"] > 0  # every PoS update is audited against the truth
        if key == "toy_pos":  # the fixture's PoS is diagnosed Static once the world stands still
            assert row["trapped steps"] > 0
        if scored:
            checked.add(key)
            assert abs(row["precision"] - true / scored) < 1e-12
            low, high = (float(x) for x in row["precision 95%"].strip("[]").split(","))
            assert low <= row["precision"] <= high
            assert set(per_step["run"]) == {run.name} and per_step["scored"].sum() == scored
    assert "toy_pos" in checked  # the fixture's PoS places the mug where the toy can tell


def test_a_method_without_state_has_a_row_that_says_so(fixture_runs):
    table, per_step = belief_accuracy([load_run(fixture_runs["toy_raw"])])
    assert table.iloc[0]["state"] == "keeps no state" and table.iloc[0]["n"] == 0 and per_step.empty


def test_tool_benchmarks_score_claims_against_their_truth(fixture_runs):
    for key in ("rca_pos", "loca_pos"):
        beliefs = run_beliefs(load_run(fixture_runs[key]))
        assert beliefs and all(b.accuracy is not None and b.accuracy.steps for b in beliefs)


def test_the_figure_is_drawn_from_the_steps(fixture_runs, tmp_path):
    _, per_step = belief_accuracy([load_run(fixture_runs["toy_pos"])])
    assert belief_plot(per_step, tmp_path / "belief.png").stat().st_size > 1000


def hand_run(root, method: str, claims_per_task: dict[str, list[Claim]]):
    """A run folder written by hand: one ALFWorld-like household per task, the truth after the reset and one
    step, and the claims the memory holds after each."""
    folder = root / "alfworld" / method / "smollm2"
    folder.mkdir(parents=True)
    labels = {"bench": "alfworld", "method": method, "model": "smollm2", "label": "smoke"}
    (folder / "run.json").write_text(json.dumps({"labels": labels, "tasks": len(claims_per_task)}))
    world = household_truth(
        Household(locations={"mug 1": ("cabinet 1",)}, receptacles=("cabinet 1", "desk 1")),
        "put a mug in cabinet.",
    )
    rows = []
    for task, claims in claims_per_task.items():
        stream = [events.Truth.of(-1, world), events.Claims(-1, tuple(claims))]
        stream += [events.Truth.of(0, world, world), events.Claims(0, tuple(claims))]
        episode = episode_dir(folder, task)
        episode.mkdir(parents=True)
        (episode / "events.jsonl").write_text("".join(json.dumps(events.row(e)) + "\n" for e in stream))
        rows.append(
            {"task_id": task, "status": "done", "success": False, "score": 0.0, "steps": 1, "turns": 1}
        )
    (folder / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return load_run(folder)


def test_claims_about_invented_entities_weigh_in_precision_and_are_never_left_out(tmp_path):
    filler = [Claim("desk4", "id: 1234567890"), Claim("1234567890", "1234567890", "1234567890")]
    run = hand_run(
        tmp_path,
        "pos",
        {"t0": filler, "t1": [Claim("mug 1", "in cabinet 1"), Claim("mug 1"), Claim("desk4")]},
    )
    row = belief_accuracy([run])[0].iloc[0]
    # t0: 2 false claims at 2 steps; t1: 2 true and 1 false at 2 steps
    assert (row["n"], row["facts scored"], row["precision"]) == (2, 10, 4 / 10)
    low, high = (float(x) for x in row["precision 95%"].strip("[]").split(","))
    assert 0.0 <= low <= 0.4 <= high <= 1.0
    assert row["invented / ep"] == 1.5  # t0: desk 4 and 1234567890; t1: desk 4
    assert (row["recall n"], row["recall"]) == (2, 0.5)  # the goal needs where the mug is: stated by t1 only


def test_precision_is_left_empty_only_when_no_claim_reads_as_a_fact(tmp_path):
    run = hand_run(tmp_path, "passport", {"t0": [Claim("the world did not change", "furthermore")]})
    row = belief_accuracy([run])[0].iloc[0]
    assert row["state"] == "claims" and row["facts scored"] == 0 and row["precision 95%"] == "–"
