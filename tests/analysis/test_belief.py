"""The belief-accuracy table and figure, from the scripted fixture runs' recorded truth and claims."""

from pos_bench import events
from pos_bench.analysis.belief import belief_accuracy, run_beliefs
from pos_bench.analysis.plots import belief_plot
from pos_bench.analysis.runs import episode_folder, load_run
from pos_bench.truth import judge


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
