"""Short real runs: the embedded model playing real benchmark data through the whole stack (runner, loop,
method, recorded model, cache off). Slow-ish (tens of seconds each); marked so they can be skipped."""

import json

import pytest

from pos_bench.runner import run

pytestmark = [pytest.mark.embedded]

SMOLLM2 = {"_target_": "pos_bench.models.local.LocalModel"}


def config(bench, method, **runner):
    return {
        "bench": bench,
        "method": {"_partial_": True, **method},
        "model": SMOLLM2,
        "runner": {"backend": "threading", "progress": False, **runner},
        "roles": {},
        "cache": {"mode": "off"},
    }


def events(run_dir):
    (episode,) = (run_dir / "episodes").iterdir()
    return [json.loads(x) for x in (episode / "events.jsonl").read_text().splitlines()]


@pytest.mark.engine
def test_raw_plays_a_real_alfworld_game_on_the_embedded_model(tmp_path, shared):
    bench = {
        "_target_": "pos_bench.benchmarks.alfworld.benchmark.AlfWorldBenchmark",
        "data_dir": str(shared / "benchmarks" / "alfworld"),
        "limit": 1,
        "max_turns": 2,
    }
    summary = run(config(bench, {"_target_": "baselines.raw.RawHistory"}), tmp_path, {"label": "smoke"})
    assert (summary.episodes, summary.errors) == (1, 0) and summary.usage["agent"].calls >= 2
    log = events(tmp_path)
    steps = [e for e in log if e["kind"] == "step"]
    assert len(steps) == 2 and all(
        e["action"] in e_prev
        for e, e_prev in zip(steps, [log[0]["observation"]["actions"], steps[0]["observation"]["actions"]])
    )
    run_info = json.loads((tmp_path / "run.json").read_text())["model"]
    assert run_info["smoke"] is True and len(run_info["weights_sha256"]) == 64


def test_pos_runs_its_roles_on_the_embedded_model(tmp_path):
    bench = {"_target_": "pos_bench.benchmarks.toy.ToyBenchmark", "n_tasks": 1, "max_turns": 1}
    summary = run(config(bench, {"_target_": "pos_bench.pos.method.Pos"}), tmp_path, {"label": "smoke"})
    assert summary.errors == 0, (tmp_path / "results.jsonl").read_text()
    roles = {e["role"] for e in events(tmp_path) if e["kind"] == "call"}
    assert {"agent", "belief", "sentinel_consistency", "sentinel_progress"} <= roles
    memory = [e for e in events(tmp_path) if e["kind"] == "memory"]
    assert memory and memory[0]["record"]["status"] in ("validated", "repaired", "rejected")


def test_clindiag_raw_with_embedded_provider_and_judge(tmp_path, shared):
    bench = {
        "_target_": "pos_bench.benchmarks.clindiag.benchmark.ClinDiagBenchmark",
        "data_dir": str(shared / "benchmarks" / "clindiag"),
        "limit": 1,
        "max_turns": 2,
        "provider": "llm",
        "judge": "llm",
        "provider_model": SMOLLM2["_target_"],
        "judge_model": SMOLLM2["_target_"],
    }
    cfg = {
        **config(bench, {"_target_": "baselines.raw.RawHistory"}),
        "roles": {
            "benchmark_provider": SMOLLM2,
            "benchmark_judge": SMOLLM2,
        },
    }
    summary = run(cfg, tmp_path, {"label": "smoke"})
    assert summary.labels["judge"] == summary.labels["provider"] == SMOLLM2["_target_"]
    assert (summary.episodes, summary.errors) == (1, 0), (tmp_path / "results.jsonl").read_text()
    log = events(tmp_path)
    calls = [e["role"] for e in log if e["kind"] == "call"]
    asked = [
        e
        for e in log
        if e["kind"] == "step"
        and e["action"]["name"].startswith(("ask_", "order_"))
        and str(e["action"]["arguments"].get("question", "")).strip()
    ]
    submitted = [
        e
        for e in log
        if e["kind"] == "step"
        and e["action"]["name"] == "submit_diagnosis"
        and str(e["action"]["arguments"].get("final_diagnosis", "")).strip()
    ]
    assert calls.count("agent") >= 1
    assert calls.count("benchmark_provider") == len(asked)
    assert calls.count("benchmark_judge") >= (1 if submitted else 0)
