"""Runs exported as inspect_ai eval logs and read back with inspect_ai's own reader: one sample per episode, the
same successes and tokens per role as results.jsonl, the method's calls as model events with their roles."""

from __future__ import annotations

import importlib.util
import json
from collections import Counter
from pathlib import Path

import pytest

pytest.importorskip("inspect_ai", reason="the `inspect` extra (inspect-ai) is not installed")

from inspect_ai.event import InfoEvent, ModelEvent
from inspect_ai.log import read_eval_log

from pos_bench.analysis.runs import read_jsonl
from pos_bench.export.inspect_log import write_inspect_log
from pos_bench.transcript import episode_dir


def exported(folder: Path, tmp_path: Path):
    return read_eval_log(str(write_inspect_log(folder, tmp_path / "run.eval")), resolve_attachments=True)


def role_totals(rows) -> dict[str, tuple[int, int]]:
    totals: Counter = Counter()
    for row in rows:
        for role, usage in row["usage"].items():
            totals[(role, "in")] += usage["input_tokens"]
            totals[(role, "out")] += usage["output_tokens"]
    return {role: (totals[(role, "in")], totals[(role, "out")]) for role, _ in totals}


def assert_matches_results(log, folder: Path) -> None:
    rows = read_jsonl(folder / "results.jsonl")
    assert len(log.samples) == len(rows) and log.results.total_samples == len(rows)
    assert sorted(s.id for s in log.samples) == sorted(r["task_id"] for r in rows)
    by_task = {r["task_id"]: r for r in rows}
    for s in log.samples:
        assert s.scores["success"].value == by_task[s.id]["success"]
        assert s.scores["score"].value == by_task[s.id]["score"]
    successes = sum(r["success"] for r in rows)
    assert log.results.scores[0].metrics["accuracy"].value == pytest.approx(successes / len(rows))
    usage = {role: (u.input_tokens, u.output_tokens) for role, u in log.stats.role_usage.items()}
    assert usage == role_totals(rows)
    assert sum(u.total_tokens for u in log.stats.model_usage.values()) == sum(
        a + b for a, b in usage.values()
    )


def test_a_pos_toy_run_reads_back_with_every_episode_role_and_memory_record(fixture_runs, tmp_path):
    folder = fixture_runs["toy_pos"]
    log = exported(folder, tmp_path)
    assert_matches_results(log, folder)
    assert log.status == "success" and log.eval.task == "toy" and log.eval.model == "scripted/scripted"
    meta = log.eval.metadata
    assert meta["labels"]["method"] == "pos" and "stand-in" in meta["flags"] and meta["fingerprint"]
    assert meta["config"]["method"]["_target_"] == "pos_bench.pos.method.Pos"

    first = next(s for s in log.samples if s.id == "toy/000")
    events = read_jsonl(episode_dir(folder, "toy/000") / "events.jsonl")
    reset = events[0]["observation"]
    assert first.input == reset["text"] and first.target == reset["goal"]
    calls = [e for e in events if e["kind"] == "call"]
    models = [e for e in first.events if isinstance(e, ModelEvent)]
    assert [m.role for m in models] == [c["role"] for c in calls]
    assert {"agent", "belief", "sentinel_consistency", "sentinel_progress"} <= {m.role for m in models}
    assert models[0].input[-1].text == calls[0]["prompt"]["messages"][-1]["content"]
    assert models[0].output.completion == calls[0]["reply"]
    memory = [e for e in first.events if isinstance(e, InfoEvent) and e.source == "memory"]
    assert [m.data["record"]["status"] for m in memory] == [
        e["record"]["status"] for e in events if e["kind"] == "memory"
    ]
    assert {"validated", "rejected"} <= {m.data["record"]["status"] for m in memory}
    steps = [e for e in events if e["kind"] == "step"]
    assert first.scores["success"].answer == steps[-1]["action"]
    replies = [m for m in first.messages if m.role == "assistant"]
    assert len(replies) == sum(c["role"] == "agent" for c in calls) and first.messages[0].role == "system"
    assert first.metadata["report"]["belief_health_history"] and first.metadata["steps"] == len(steps)


def test_errors_and_hostile_replies_survive_as_text(fixture_runs, tmp_path):
    folder = fixture_runs["toy_raw"]
    log = exported(folder, tmp_path)
    assert_matches_results(log, folder)
    failed = [s for s in log.samples if s.error]
    recorded = [r for r in read_jsonl(folder / "results.jsonl") if r["status"] == "error"]
    assert [s.id for s in failed] == [r["task_id"] for r in recorded] and failed
    assert "scripted provider outage" in failed[0].error.message and failed[0].error.traceback
    assert any("<script>" in m.text for s in log.samples for m in s.messages)


def test_an_interrupted_run_keeps_its_unfinished_episodes_unscored(fixture_runs, tmp_path):
    log = exported(fixture_runs["toy_partial"], tmp_path)
    running = [s for s in log.samples if s.metadata["status"] == "interrupted"]
    assert log.status == "started" and len(running) == 6 and len(log.samples) == 12
    assert all(s.scores is None and s.role_usage for s in running)
    assert log.results.completed_samples == 6


@pytest.mark.engine
def test_a_pos_alfworld_smoke_run_reads_back(shared, tmp_path, monkeypatch):
    from pos_bench.benchmarks.alfworld.data import TARBALL
    from tests.analysis.fixture_runs import POS, _config

    for package in ("alfworld", "textworld"):
        if importlib.util.find_spec(package) is None:
            pytest.skip(f"{package} is not installed")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    from pos_bench.runner import run

    bench = {
        "_target_": "pos_bench.benchmarks.alfworld.benchmark.AlfWorldBenchmark",
        "data_dir": str(shared / "benchmarks" / "alfworld" / TARBALL),
        "limit": 2,
        "max_turns": 6,
    }
    model = {"_target_": "tests.analysis.fixture_runs.household_model", "pos": True, "skill": 1.0}
    folder = tmp_path / "results" / "alfworld" / "pos" / "scripted"
    run(_config(bench, POS, model), folder, {"bench": "alfworld", "method": "pos", "model": "scripted"})
    log = exported(folder, tmp_path)
    assert_matches_results(log, folder)
    assert log.eval.task == "alfworld" and "stand-in" not in log.eval.metadata["flags"]
    assert all(s.input.startswith("-= Welcome to TextWorld") for s in log.samples)
    assert all(json.dumps(s.metadata["report"]) != "{}" for s in log.samples)


def test_a_compaction_run_exports_each_compaction_as_inspects_own_event(tmp_path):
    from inspect_ai.event import CompactionEvent

    from pos_bench.runner import run
    from tests.baselines.compaction.test_method import SCHEMA_REPLY, config

    folder = tmp_path / "toy" / "compaction" / "scripted"
    overrides = ("bench=toy", "method=compaction", "model=scripted", SCHEMA_REPLY, "bench.limit=1")
    run(config(*overrides, "cache.mode=off", "runner.progress=false"), folder, {"label": "test"})
    log = exported(folder, tmp_path)
    events = read_jsonl(episode_dir(folder, "toy/000") / "events.jsonl")
    recorded = [e for e in events if e["kind"] == "compaction"]
    shown = [e for e in log.samples[0].events if isinstance(e, CompactionEvent)]
    assert recorded and len(shown) == len(recorded)
    assert [(e.type, e.tokens_before, e.tokens_after) for e in shown] == [
        (e["type"], e["tokens_before"], e["tokens_after"]) for e in recorded
    ]
    assert shown[0].metadata["summary"] == recorded[0]["summary"] and shown[0].role == "agent"
