"""`inspect eval pos_bench/<bench>`: pos_bench's loop plays each sample, the log carries the episode as the export
maps it, and the same config through `python -m pos_bench` with the same replies (replayed from the run folder
the eval wrote) gives the same scores and per-role tokens."""

from __future__ import annotations

import importlib.metadata
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from inspect_ai.log import read_eval_log

from pos_bench.inspect.tasks import BENCHES
from tests.inspect.runs import eval_task, inspect_rows, pos_bench, pos_bench_rows, run_folder
from tests.inspect.stub import INSPECT_NAME, TimedStub

SHORT = {"bench.limit": 2, "bench.max_turns": 3}


@pytest.mark.parametrize("method", ["raw", "pos"])
def test_a_toy_eval_scores_as_python_m_pos_bench_replaying_its_replies(
    method: str, stub: TimedStub, tmp_path: Path
):
    log = eval_task(
        "toy", INSPECT_NAME, tmp_path / "logs", method=method, results_root=str(tmp_path / "r"), **SHORT
    )
    assert log.status == "success" and len(log.samples or []) == 2
    first = inspect_rows(log)
    assert all(row["tokens"]["agent"][0] > 0 for row in first.values())
    if method == "pos":  # PoS's own roles are inspect model roles, each with its usage
        assert {"belief"} <= set().union(*(row["tokens"] for row in first.values()))
    called = len(stub.chat_requests())
    assert called > 0
    replayed = pos_bench(
        "bench=toy",
        f"method={method}",
        "model=replay",
        f"model.run={run_folder(log)}",
        *(f"{k}={v}" for k, v in SHORT.items()),
        results=tmp_path / "replay",
    )
    assert replayed.returncode == 0, replayed.stderr[-3000:]
    assert len(stub.chat_requests()) == called  # the replay made no model call
    assert pos_bench_rows(tmp_path / "replay") == first


def test_the_log_shows_each_call_step_and_memory_record_per_turn(stub: TimedStub, tmp_path: Path):
    log = eval_task("toy", INSPECT_NAME, tmp_path / "logs", method="pos", results_root=str(tmp_path), **SHORT)
    sample = (log.samples or [])[0]
    kinds = Counter(e.event for e in sample.events)
    calls = [e for e in sample.events if e.event == "model"]
    assert kinds["model"] == len(calls) > 0 and {"agent", "belief"} <= {e.role for e in calls}
    infos = Counter(e.source for e in sample.events if e.event == "info")
    assert infos["step"] == sample.scores["success"].metadata["steps"] > 0
    assert infos["memory"] >= infos["step"]  # PoS's belief record after every step
    turns = [e for e in sample.events if e.event == "span_begin" and e.type == "turn"]
    assert len(turns) == sample.scores["success"].metadata["turns"]
    # each model call once: inspect's own record of a call is replaced by the export's
    every = [e for s in log.samples or [] for e in s.events if e.event == "model"]
    assert len(every) == len(stub.chat_requests())


def test_task_arguments_are_the_hydra_overrides(stub: TimedStub, tmp_path: Path):
    log = eval_task(
        "toy",
        INSPECT_NAME,
        tmp_path / "logs",
        method="pos",
        results_root=str(tmp_path),
        **{"bench.limit": 1, "bench.max_turns": 2, "method.sentinel.enabled": False},
    )
    [sample] = log.samples or []
    config = json.loads((run_folder(log) / "run.json").read_text())["config"]
    assert config["method"]["sentinel"]["enabled"] is False and config["bench"]["max_turns"] == 2
    assert sample.scores["success"].metadata["turns"] == 2
    assert not [e for e in sample.events if e.event == "model" and "sentinel" in (e.role or "")]


def test_every_benchmark_is_a_registered_task():
    from inspect_ai._util.registry import registry_lookup

    assert all(registry_lookup("task", f"pos_bench/{bench}") for bench in BENCHES)


def test_the_model_and_benchmark_are_not_task_arguments(tmp_path: Path):
    from pos_bench.inspect.config import overrides

    with pytest.raises(ValueError, match="model is inspect's"):
        overrides({"model": "openai"})
    assert overrides({"method": "pos", "bench.limit": 2, "method.note": "a b"}) == [
        "method=pos",
        "++bench.limit=2",
        "++method.note='a b'",
    ]


def entry_point_installed() -> bool:
    return any(ep.name == "pos_bench" for ep in importlib.metadata.entry_points(group="inspect_ai"))


@pytest.mark.skipif(
    not entry_point_installed(),
    reason="pos_bench's inspect entry point is not installed in this environment (uv sync in the checkout)",
)
def test_the_inspect_command_line_finds_the_tasks(stub: TimedStub, tmp_path: Path):
    done = subprocess.run(
        [
            sys.executable, "-m", "inspect_ai", "eval", "pos_bench/toy", "--model", INSPECT_NAME,
            "-T", "bench.limit=2", "-T", "bench.max_turns=2", "-T", f"results_root={tmp_path}",
            "--log-dir", str(tmp_path / "logs"), "--display", "none",
        ],
        check=False, capture_output=True, text=True, timeout=600, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    [path] = (tmp_path / "logs").glob("*.eval")
    log = read_eval_log(str(path))
    assert log.status == "success" and [s.id for s in log.samples or []] == ["toy/000", "toy/001"]
