"""The failure ledger end to end: a remote model on the loopback stub, the real `openai` SDK, the runner, the
analysis tables and the report. A serving problem must show as `refused` / `overflow`, never as a 0% method;
cached prompt tokens the server reports reach the usage rows and the cost."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pos_bench.analysis.collect import collect
from pos_bench.analysis.runs import load_run
from pos_bench.report.page import Blocks, episode_payload
from pos_bench.runner import run
from pos_bench.runner.summary import format_errors, format_table
from tests.models.stub_openai_server import PATIENT, StubOpenAI

KEY = "sk-ledger-test-key"
TASKS = 3


@pytest.fixture
def stub(monkeypatch):
    monkeypatch.setenv("STUB_LEDGER_KEY", KEY)
    with StubOpenAI() as server:
        yield server


def config(tmp_path: Path, url: str, prices: dict | None = None) -> dict:
    return {
        "bench": {"_target_": "pos_bench.benchmarks.toy.ToyBenchmark", "n_tasks": TASKS, "max_turns": 3},
        "method": {"_target_": "baselines.raw.RawHistory", "_partial_": True},
        "model": {
            "_target_": "pos_bench.models.openai.OpenAIModel",
            "model": "stub-model",
            "base_url": f"{url}/v1",
            "api_key_env": "STUB_LEDGER_KEY",
            "timeout": PATIENT,
        },
        "roles": {},
        "prices": prices or {},
        "runner": {"n_jobs": 1, "backend": "threading", "progress": False},
        "cache": {"mode": "off", "path": str(tmp_path / "cache.sqlite")},
        "retry": {"max_attempts": 2, "initial_wait": 0.01, "max_wait": 0.02, "jitter": 0.0},
    }


def play(tmp_path: Path, url: str, prices: dict | None = None):
    run_dir = tmp_path / "run"
    labels = {"bench": "toy", "method": "raw", "model": "remote", "label": "full"}
    return run_dir, run(config(tmp_path, url, prices), run_dir, labels)


def rows(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]


@pytest.mark.parametrize("fault", ["400", "overflow"])
def test_a_server_that_refuses_every_request_shows_refused_episodes_not_a_failed_method(
    stub, tmp_path, fault
):
    stub.faults.rule = lambda body: fault
    label = "refused" if fault == "400" else "overflow"
    run_dir, summary = play(tmp_path, stub.url)

    results = rows(run_dir)
    assert [r["unplayed"] for r in results] == [label] * TASKS
    assert all(r["ledger"][label] == 1 and r["ledger"]["valid"] == 0 for r in results)
    assert getattr(summary, label) == TASKS and summary.errors == 0 and summary.ledger.valid == 0

    table = format_table([summary])
    header, line = table.splitlines()
    columns = dict(zip(header.split(), line.split(), strict=True))
    assert columns["success"] == "n/a" and columns[label] == str(TASKS)
    assert "never got to act" in format_errors(summary, run_dir)

    tables = collect([run_dir], None)
    assert tables.index.loc[0, label] == TASKS and tables.index.loc[0, "errors"] == 0
    row = tables.table1.iloc[0]
    assert row["n"] == 0 and row[label] == TASKS and row["success %"] != 0.0  # NaN: no rate, not 0%
    statuses = {e["status"] for e in episode_payload(load_run(run_dir), Blocks(1e9))}
    assert statuses == {label}


def test_a_refusal_after_the_model_acted_is_an_errored_episode_that_counts_as_a_failure(stub, tmp_path):
    """Only an episode whose first policy request was refused is `refused`: a refusal mid-way is the method's
    prompt growing past what the server takes, an error counted in the rate."""
    stub.faults.rule = lambda body: (
        "400" if body["messages"][-1]["content"].count('"observation":') >= 1 else None
    )
    run_dir, summary = play(tmp_path, stub.url)
    results = rows(run_dir)
    assert all(r["status"] == "error" and r["unplayed"] is None for r in results)
    assert all(r["ledger"]["valid"] >= 1 and r["ledger"]["refused"] == 1 for r in results)
    assert summary.refused == 0 and summary.errors == TASKS and summary.success_rate == 0.0


def test_unusable_replies_are_counted_as_parse_failures(stub, tmp_path):
    stub.answer = lambda body: "I would rather chat."
    run_dir, summary = play(tmp_path, stub.url)
    assert all(r["ledger"]["parse_failure"] >= 1 and r["ledger"]["valid"] == 0 for r in rows(run_dir))
    assert summary.ledger.parse_failure == sum(r["ledger"]["parse_failure"] for r in rows(run_dir))
    assert summary.refused == 0  # the model answered: a failure of the model, not of the serving


def test_cached_tokens_reported_by_the_server_reach_the_usage_rows_and_are_priced_apart(stub, tmp_path):
    stub.report_cached = True
    prices = {"default": {"input_per_mtok": 1.0, "output_per_mtok": 4.0, "cached_input_per_mtok": 0.1}}
    run_dir, summary = play(tmp_path, stub.url, prices)
    agent = [r["usage"]["agent"] for r in rows(run_dir)]
    assert all(u["cached_input_tokens"] > 0 for u in agent)  # turn ≥ 2 shares its prefix with turn 1
    assert all(u["cached_input_tokens"] < u["input_tokens"] for u in agent)
    total = summary.usage["agent"]
    assert total.cached_input_tokens == sum(u["cached_input_tokens"] for u in agent)
    expected = (
        (total.input_tokens - total.cached_input_tokens) * 1.0
        + total.cached_input_tokens * 0.1
        + total.output_tokens * 4.0
    ) / 1e6
    assert summary.cost["agent"] == pytest.approx(expected)
    assert summary.cost["agent"] < (total.input_tokens * 1.0 + total.output_tokens * 4.0) / 1e6
