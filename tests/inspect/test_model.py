"""`model=inspect`: `python -m pos_bench` on a model served by inspect's provider API (here inspect's
`openai-api` provider on the loopback stub): usage per role with cached tokens, replay with no call, the
endpoint pre-flight, the retry policy and the failure ledger."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pos_bench.runner import run
from pos_bench.runner.endpoints import endpoint_problems
from tests.inspect.runs import pos_bench, pos_bench_rows
from tests.inspect.stub import INSPECT_NAME, MODEL, TimedStub

SHORT = ("bench=toy", "bench.limit=2", "bench.max_turns=2")


def test_a_run_through_inspect_has_usage_per_role_and_replays_without_a_call(stub: TimedStub, tmp_path: Path):
    stub.report_cached = True
    inspect_model = (
        "method=pos",
        "model=inspect",
        f"model.name={INSPECT_NAME}",
        f"cache.path={tmp_path}/c.sqlite",
    )
    played = pos_bench(*SHORT, *inspect_model, results=tmp_path / "a")
    assert played.returncode == 0, played.stderr[-3000:]
    [results] = (tmp_path / "a" / "toy" / "pos" / "inspect").rglob("results.jsonl")
    rows = [json.loads(line) for line in results.read_text().splitlines()]
    assert [r["status"] for r in rows] == ["done", "done"]
    assert all({"agent", "belief"} <= set(r["usage"]) for r in rows)
    assert sum(r["usage"]["agent"].get("cached_input_tokens", 0) for r in rows) > 0
    calls = sum(u["calls"] for r in rows for u in r["usage"].values())
    assert 0 < len(stub.chat_requests()) <= calls  # the response cache answers the repeated requests
    meta = json.loads((results.parent / "run.json").read_text())
    assert meta["model"]["provider"] == "inspect" and meta["model"]["model"] == INSPECT_NAME

    before = len(stub.chat_requests())
    again = pos_bench(*SHORT, *inspect_model, results=tmp_path / "again")
    assert again.returncode == 0, again.stderr[-3000:]
    assert len(stub.chat_requests()) == before  # every reply from the response cache
    replayed = pos_bench(
        *SHORT, "method=pos", "model=replay", f"model.run={results.parent}", results=tmp_path / "b"
    )
    assert replayed.returncode == 0, replayed.stderr[-3000:]
    assert len(stub.chat_requests()) == before
    assert pos_bench_rows(tmp_path / "b") == pos_bench_rows(tmp_path / "a")


def config(tmp_path: Path, name: str = INSPECT_NAME) -> dict[str, Any]:
    return {
        "bench": {"_target_": "pos_bench.benchmarks.toy.ToyBenchmark", "n_tasks": 2, "max_turns": 2},
        "method": {"_target_": "baselines.raw.RawHistory", "_partial_": True},
        "model": {"_target_": "pos_bench.models.inspect_model.InspectModel", "name": name},
        "roles": {},
        "runner": {"n_jobs": 1, "backend": "threading", "progress": False},
        "cache": {"mode": "off", "path": str(tmp_path / "cache.sqlite")},
        "retry": {"max_attempts": 2, "initial_wait": 0.01, "max_wait": 0.02, "jitter": 0.0},
    }


def play(tmp_path: Path) -> list[dict[str, Any]]:
    run_dir = tmp_path / "run"
    run(config(tmp_path), run_dir, {"bench": "toy", "method": "raw", "model": "inspect", "label": "full"})
    return [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]


@pytest.mark.parametrize(("fault", "label"), [("400", "refused"), ("overflow", "overflow")])
def test_a_refusing_server_fills_the_failure_ledger(fault: str, label: str, stub: TimedStub, tmp_path: Path):
    stub.faults.rule = lambda body: fault
    rows = play(tmp_path)
    assert [r["unplayed"] for r in rows] == [label, label]
    assert all(r["ledger"][label] == 1 and r["ledger"]["valid"] == 0 for r in rows)
    assert len(stub.chat_requests()) == 2  # refused: never retried


def test_a_transient_failure_is_retried_by_pos_bench_not_by_inspect(stub: TimedStub, tmp_path: Path):
    stub.faults.push("500")
    rows = play(tmp_path)
    assert [r["status"] for r in rows] == ["done", "done"]
    assert len(stub.chat_requests()) == 1 + sum(r["turns"] for r in rows)  # one retry, by the policy


def test_the_pre_flight_checks_the_endpoint_inspect_would_call(stub: TimedStub, tmp_path: Path):
    assert list(endpoint_problems(config(tmp_path))) == []
    [problem] = endpoint_problems(config(tmp_path, "openai-api/stub/other-model"))
    assert "does not serve other-model" in problem and MODEL in problem


def test_reply_limits_reach_the_server_whole_in_the_response_format(stub: TimedStub, tmp_path: Path):
    """inspect's schema type drops list sizes; capped schemas go raw in the body, list sizes included."""
    cfg = config(tmp_path)
    cfg["method"] = {"_target_": "pos_bench.pos.method.Pos", "_partial_": True}
    cfg["model"]["reply_limits"] = {"default": {"max_tokens": 200, "items": 2, "chars": 40}}
    run(cfg, tmp_path / "run", {"bench": "toy", "method": "pos", "model": "inspect", "label": "full"})
    sent = [r for r in stub.chat_requests() if r.get("response_format")]
    assert sent, "no structured request reached the server"
    schemas = [r["response_format"]["json_schema"]["schema"] for r in sent]
    text = json.dumps(schemas)
    assert '"maxItems": 2' in text and '"maxLength": 40' in text
    assert all(r["max_tokens"] <= 200 for r in sent)
