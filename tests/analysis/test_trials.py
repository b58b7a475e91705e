"""pass@k / pass^k closed forms, flips and the noise floor, and the "within noise" verdict on fixture runs
with repeated trials (run folders written as the runner writes them)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from pos_bench.analysis.collect import collect, text
from pos_bench.analysis.runs import load_run
from pos_bench.analysis.trials import WITHIN_NOISE, pass_at_k, pass_hat_k, strips, summarize_trials
from pos_bench.report.page import render

TASKS = 60
K = 4


def test_pass_at_k_and_pass_hat_k_match_their_closed_forms():
    assert pass_at_k(5, 3, 2) == pytest.approx(0.9)
    assert pass_hat_k(5, 3, 2) == pytest.approx(0.3)
    assert pass_at_k(5, 3, 1) == pass_hat_k(5, 3, 1) == pytest.approx(0.6)
    assert pass_at_k(5, 0, 3) == 0.0 and pass_hat_k(5, 5, 5) == 1.0
    with pytest.raises(ValueError):
        pass_at_k(3, 1, 4)


def write_run(root: Path, method: str, model: str, success: list[list[bool]]) -> Path:
    folder = root / "coin" / method / model
    folder.mkdir(parents=True)
    labels = {"bench": "coin", "method": method, "model": model, "label": "full"}
    (folder / "run.json").write_text(json.dumps({"labels": labels, "config": {}}))
    rows = [
        {"task_id": f"t{t:02d}", "status": "done", "success": ok, **({"trial": k} if k else {})}
        for t, trials in enumerate(success)
        for k, ok in enumerate(trials)
    ]
    (folder / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (folder / "summary.json").write_text("{}")
    return folder


def noisy(rate: float, seed: int) -> list[list[bool]]:
    rng = random.Random(seed)
    return [[rng.random() < rate for _ in range(K)] for _ in range(TASKS)]


def test_summary_counts_flips_and_strips(tmp_path):
    outcomes = [[True, True, True, True], [True, False, True, False], [False] * 4]
    run = load_run(write_run(tmp_path, "raw", "m", outcomes))
    s = summarize_trials(run)
    assert (s.tasks, s.trials) == (3, 4)
    assert s.pass_at_1 == pytest.approx((4 + 2 + 0) / 12)
    assert s.pass_hat[1] == pytest.approx((1 + 1 / 6 + 0) / 3)
    assert s.flip_rate == pytest.approx(1 / 3)
    assert s.noise_floor > 0
    assert strips(run) == {"t00": "✓✓✓✓", "t01": "✓✗✓✗", "t02": "✗✗✗✗"}
    assert summarize_trials(load_run(run.folder, trials=1)).trials == 1  # the first K of more


def test_a_clear_difference_is_a_gain_and_a_small_one_is_within_noise(tmp_path):
    write_run(tmp_path, "raw", "clear", noisy(0.2, 1))
    write_run(tmp_path, "pos", "clear", noisy(0.9, 2))
    write_run(tmp_path, "raw", "close", noisy(0.5, 3))
    write_run(tmp_path, "pos", "close", noisy(0.55, 4))
    tables = collect([tmp_path], None)
    paired = tables.paired.set_index(["model", "method"])
    clear, close = paired.loc[("clear", "pos")], paired.loc[("close", "pos")]
    assert clear["verdict"] == "gain" and clear["diff pts"] > clear["noise floor pts"] > 0
    assert close["verdict"] == WITHIN_NOISE
    printed = text(tables)
    assert WITHIN_NOISE in printed and "gain" in printed and clear["95% paired bootstrap"] in printed
    table1 = tables.table1.set_index(["model", "method"])
    assert table1.loc[("clear", "pos"), "trials"] == K and table1.loc[("clear", "pos"), "cluster"] == "task"
    assert set(tables.trials["trials"]) == {K}


def test_the_report_shows_each_tasks_trial_strip_and_the_noise_floor(tmp_path):
    write_run(tmp_path, "raw", "m", [[True, False, True, True], [False] * 4])
    page = render([tmp_path], with_figures=False)
    assert "✓✗✓✓" in page and "✗✗✗✗" in page
    assert "noise floor pts" in page and "pass^4 %" in page


def test_a_comparison_of_k_trial_means_clears_the_single_trial_floor_over_root_k(tmp_path):
    # The comparison reads pass@1 over all K trials, which moves √K times less than one trial does; gating it by
    # the single-trial floor called a real 16-point gain a gain half as often with 3 trials as with one.
    run = load_run(write_run(tmp_path, "raw", "m", noisy(0.5, 5)))
    s = summarize_trials(run)
    assert s.mean_noise_floor == pytest.approx(s.noise_floor / K**0.5)
    write_run(tmp_path, "pos", "m", noisy(0.5, 6))
    paired = collect([tmp_path], None).paired.set_index(["model", "method"]).loc[("m", "pos")]
    floors = [
        summarize_trials(load_run(tmp_path / "coin" / m / "m")).mean_noise_floor for m in ("raw", "pos")
    ]
    assert paired["noise floor pts"] == pytest.approx(100 * max(floors))
