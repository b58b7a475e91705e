"""`runner.trials=K`: each task played K times, rows keyed by (task, trial), the trial sent as the seed and kept
in the cache key, so trials are independent calls that a replay reproduces; resume and raising K play only
the missing (task, trial) pairs. Against the real `openai` SDK and the loopback stub's seeded draw."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pos_bench.runner import run
from pos_bench.transcript import episode_dir
from tests.models.stub_openai_server import PATIENT, StubOpenAI, call_by_seeded_draw, seeded_heads

KEY = "sk-trials-key"
N_TASKS = 20


@pytest.fixture
def stub(monkeypatch):
    monkeypatch.setenv("STUB_TRIALS_KEY", KEY)
    with StubOpenAI(answer=call_by_seeded_draw) as server:
        yield server


def openai_node(url: str) -> dict:
    return {
        "_target_": "pos_bench.models.openai.OpenAIModel",
        "model": "stub-model",
        "base_url": f"{url}/v1",
        "api_key_env": "STUB_TRIALS_KEY",
        "timeout": PATIENT,
        "max_concurrency": 4,
    }


def config(
    tmp_path: Path, model: dict, *, trials: int, cache_mode: str = "off", n_tasks: int = N_TASKS
) -> dict:
    return {
        "bench": {"_target_": "tests.runner.coin.CoinBenchmark", "n_tasks": n_tasks},
        "method": {"_target_": "baselines.raw.RawHistory", "_partial_": True},
        "model": model,
        "roles": {},
        "runner": {"n_jobs": 4, "backend": "threading", "progress": False, "trials": trials},
        "cache": {"mode": cache_mode, "path": str(tmp_path / "cache" / "responses.sqlite")},
        "retry": {"max_attempts": 2, "initial_wait": 0.01, "max_wait": 0.02, "jitter": 0.0},
    }


def play(cfg: dict, run_dir: Path):
    return run(cfg, run_dir, {"bench": "coin", "method": "raw", "model": "remote", "label": "full"})


def rows(run_dir: Path) -> dict[tuple[str, int], dict]:
    lines = [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]
    keyed = {(r["task_id"], r.get("trial", 0)): r for r in lines}
    assert len(keyed) == len(lines), "a (task, trial) appears twice"
    return keyed


def asked(stub: StubOpenAI, since: int = 0) -> list[tuple[str, int]]:
    """The (task, seed) of every request the stub received after the first `since`."""
    out = []
    for body in stub.requests[since:]:
        text = " ".join(m["content"] for m in body["messages"])
        name = text.split("for task ", 1)[1].split(" ", 1)[0].rstrip(".")
        out.append((name, int(body.get("seed", 0))))
    return out


def test_five_trials_count_the_seeded_draws_of_every_task(stub, tmp_path):
    summary = play(config(tmp_path, openai_node(stub.url), trials=5), tmp_path / "run")
    got = rows(tmp_path / "run")
    assert len(got) == 5 * N_TASKS and all(r["status"] == "done" for r in got.values())
    tasks = [f"coin-{i:02d}" for i in range(N_TASKS)]
    by_hand = {t: sum(seeded_heads(t, k) for k in range(5)) for t in tasks}
    counted = {t: sum(got[(t, k)]["success"] for k in range(5)) for t in tasks}
    assert counted == by_hand
    assert 0 < sum(by_hand.values()) < 5 * N_TASKS, "the draws must not all agree, or the test proves nothing"
    assert any(0 < c < 5 for c in by_hand.values())
    assert sorted(asked(stub)) == sorted((t, k) for t in tasks for k in range(5))
    assert all(body.get("seed") != 0 for body in stub.requests)  # trial 0 sends none: its request is today's
    assert summary.episodes == 5 * N_TASKS
    assert summary.success_rate == pytest.approx(sum(by_hand.values()) / (5 * N_TASKS))
    assert (episode_dir(tmp_path / "run", "coin-03", 0) / "events.jsonl").is_file()
    assert (episode_dir(tmp_path / "run", "coin-03", 4) / "events.jsonl").is_file()
    assert episode_dir(tmp_path / "run", "coin-03", 4).name.endswith("@t4")


def test_a_replay_reproduces_every_trial(stub, tmp_path, monkeypatch):
    recorded = tmp_path / "recorded"
    play(config(tmp_path, openai_node(stub.url), trials=3, cache_mode="read_write", n_tasks=8), recorded)
    monkeypatch.delenv("STUB_TRIALS_KEY")
    replay = {"_target_": "pos_bench.models.replay.Replayed", "run": str(recorded)}
    before = len(stub.requests)
    play(config(tmp_path, replay, trials=3, cache_mode="replay", n_tasks=8), tmp_path / "replayed")
    assert len(stub.requests) == before, "a replay reached the provider"

    def outcome(run_dir):
        return {k: (r["status"], r["success"], r["turns"]) for k, r in rows(run_dir).items()}

    assert outcome(tmp_path / "replayed") == outcome(recorded)
    assert len(outcome(recorded)) == 24
    trials_differ = any(
        outcome(recorded)[(t, 0)] != outcome(recorded)[(t, k)] for (t, k) in outcome(recorded)
    )
    assert trials_differ, "the trials of a task must be independent calls, not one cached reply"


def test_resume_plays_only_the_missing_pairs_and_raising_k_only_the_new_trial(stub, tmp_path):
    run_dir = tmp_path / "run"
    cfg = config(tmp_path, openai_node(stub.url), trials=3, n_tasks=6)
    play(cfg, run_dir)
    first = rows(run_dir)
    lines = (run_dir / "results.jsonl").read_text().splitlines(keepends=True)
    removed = [json.loads(line) for line in lines[2:5]]
    (run_dir / "results.jsonl").write_text("".join(lines[:2] + lines[5:]))

    since = len(stub.requests)
    play(cfg, run_dir)
    assert sorted(asked(stub, since)) == sorted((r["task_id"], r.get("trial", 0)) for r in removed)
    assert rows(run_dir) == first  # the replayed pairs drew the same seeded calls

    since = len(stub.requests)
    play({**cfg, "runner": {**cfg["runner"], "trials": 4}}, run_dir)
    assert sorted(asked(stub, since)) == [(f"coin-{i:02d}", 3) for i in range(6)]
    assert len(rows(run_dir)) == 24
    assert len(list((tmp_path).glob("run/episodes/*@t3"))) == 6
