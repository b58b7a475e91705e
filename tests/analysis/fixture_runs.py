"""Scripted-model runs that give every table, figure and view real content (tests and scripts only).

`household_model` is a `_target_` for the runner: per episode it returns a ScriptedModel whose agent role plays
the toy household greedily from the prompt (on the tasks it is "competent" at, chosen by a hash of the goal) and,
when `pos=True`, whose belief and Sentinel roles follow the trapped → recovered → rejected plan of
tests/pos/test_episode.py. `tool_model` does the same for the tool benchmarks (rca_synthetic, loca_mini) with a
fixed sequence of tool calls.
"""

from __future__ import annotations

import json
import re
import shutil
import zlib
from pathlib import Path
from typing import Any

import pytest

from pos_bench.models.scripted import ScriptedModel
from pos_bench.runner import run
from pos_bench.transcript import find_episode
from pos_bench.types import Prompt
from tests.pos.script import PosScript, delta, grounded_issue, moved

XSS = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">'
"""A hostile model reply: the report must show it as text and never run it."""

GOAL = re.compile(r"put a (clean |hot |cool )?(\w+) in (\w+)\.")
VERB = {"clean ": "clean", "hot ": "heat", "cool ": "cool"}
TOOL_AT = {"clean": "sinkbasin 1", "heat": "microwave 1", "cool": "fridge 1"}
CLEAN = {"issues": []}


def _flag(prompt: Prompt) -> dict[str, Any]:
    return {"issues": [grounded_issue(prompt)]}


def placed(n: int) -> dict[str, Any]:
    """A delta that rewrites the mug's state with a place the toy's truth can score (cabinet 1: true in some
    tasks, false in others); the count keeps every description new."""
    update = moved(n)
    update["upsert_states"][0]["description"] = f"mug 1 is in cabinet 1 (look {n})"
    return update


def pos_script() -> PosScript:
    """Still world for five updates (Static trap once K=4 zero labels are in), then moving; one repaired and
    one rejected update; progress returns after six judged steps (recovery ends)."""
    updates = [delta()] * 5 + [placed(n) for n in range(5, 200)]
    audits = [CLEAN, CLEAN, _flag, CLEAN, _flag, _flag, CLEAN]
    judges = [{"progress": 0, "score": 0.0, "affected_record_ids": [], "reason": "same"}] * 6 + [
        {"progress": 1, "score": 1.0, "affected_record_ids": [], "reason": "new"}
    ]
    return PosScript(updates=updates, audits=audits, judges=judges)


class HouseholdAgent:
    """Greedy toy-household policy reading the goal and available actions from the prompt text."""

    def __init__(self, skill: float, salt: str, xss: bool, explode_goal: str | None):
        self.skill, self.salt, self.xss, self.explode_goal = skill, salt, xss, explode_goal
        self.done_verb = False
        self.visited: list[str] = []
        self.calls = 0

    def __call__(self, prompt: Prompt, _: int | None = None) -> str:
        index, self.calls = self.calls, self.calls + 1
        text = prompt.messages[-1].content
        goals = list(GOAL.finditer(text.split("Available actions:")[0]))
        goal = goals[-1] if len(goals) > 1 else None  # the first one is the format example's
        actions = [
            line[2:] for line in text.split("Available actions:")[-1].splitlines() if line.startswith("- ")
        ]
        if goal and self.explode_goal and goal.group(0) == self.explode_goal and index >= 2:
            raise RuntimeError(f"scripted provider outage on {goal.group(0)!r}")
        thought = (XSS + " ") if self.xss and index == 0 else ""
        competent = (
            goal is not None and zlib.crc32((self.salt + goal.group(0)).encode()) % 100 < 100 * self.skill
        )
        action = self._choose(goal, actions) if competent else "look"
        return json.dumps({"thought": thought + f"next: {action}", "action": action})

    def _choose(self, goal: re.Match, actions: list[str]) -> str:
        adjective, noun, place = goal.group(1), goal.group(2), goal.group(3)
        verb = VERB.get(adjective or "")
        holding = next((a.split(" ")[1:3] for a in actions if a.startswith(f"move {noun} ")), None)
        for a in actions:
            if (
                a.startswith(f"move {noun} ")
                and a.endswith(f"{place} 1")
                and (verb is None or self.done_verb)
            ):
                return a
            if verb and not self.done_verb and a.startswith(f"{verb} {noun} "):
                self.done_verb = True
                return a
        for a in actions:
            if a.startswith((f"take {noun} ", "open ")):
                return a
        if holding:
            where = TOOL_AT[verb] if verb and not self.done_verb else f"{place} 1"
            return f"go to {where}"
        unseen = [a for a in actions if a.startswith("go to ") and a not in self.visited]
        choice = unseen[0] if unseen else "look"
        self.visited.append(choice)
        return choice


def household_model(
    skill: float = 0.6, salt: str = "", pos: bool = False, xss: bool = False, explode_goal: str | None = None
) -> ScriptedModel:
    agent = HouseholdAgent(skill, salt, xss, explode_goal)
    if not pos:
        return ScriptedModel({"agent": agent})
    script = pos_script()
    script.agent = [agent]
    return script.model()


def tool_model(calls: list[dict[str, Any]], pos: bool = False) -> ScriptedModel:
    """The agent plays `calls` in order (the last repeating)."""
    replies = [json.dumps({"thought": f"call {c['name']}", "action": c}) for c in calls]
    if not pos:
        return ScriptedModel({"agent": replies})
    script = pos_script()
    script.agent = replies
    return script.model()


POS = {
    "_target_": "pos_bench.pos.method.Pos",
    "_partial_": True,
    "trapping": {"window_size": 4, "max_cycle_length": 2},
}
RAW = {"_target_": "baselines.raw.RawHistory", "_partial_": True}
METHODS = {
    "pos": POS,
    "raw": RAW,
    "pos_no_trapping": {**POS, "trapping": {**POS["trapping"], "enabled": False}},
}
RUNNER = {"backend": "threading", "progress": False}


def _config(bench: dict, method: dict, model: dict) -> dict[str, Any]:
    return {
        "bench": bench,
        "method": method,
        "model": model,
        "runner": RUNNER,
        "roles": {},
        "cache": {"mode": "off"},
    }


def toy_run(
    root: Path, method: str, n_tasks: int, *, skill: float, model_name: str = "scripted", **model
) -> Path:
    bench = {"_target_": "pos_bench.benchmarks.toy.ToyBenchmark", "n_tasks": n_tasks, "max_turns": 15}
    node = {
        "_target_": "tests.analysis.fixture_runs.household_model",
        "skill": skill,
        "salt": method,
        **model,
    }
    node["pos"] = method.startswith("pos")
    folder = root / "toy" / method / model_name
    labels = {"bench": "toy", "method": method, "model": model_name, "label": "full"}
    run(_config(bench, METHODS[method], node), folder, labels)
    return folder


RCA_CALLS = [
    {"name": "get_topology", "arguments": {}},
    {"name": "get_k8s_events", "arguments": {"keyword": "BackOff", "limit": 5}},
    {"name": "search_logs", "arguments": {"keyword": "error"}},
    {"name": "get_topology", "arguments": {}},
    {"name": "get_k8s_events", "arguments": {"keyword": "Killing", "limit": 5}},
    {"name": "search_logs", "arguments": {"keyword": "timeout"}},
    {"name": "get_topology", "arguments": {}},
    {
        "name": "submit_root_cause",
        "arguments": {"root_cause_entity": "checkout", "fault_type": "podCrashLoop"},
    },
]
LOCA_CALLS = [{"name": "inventory_list_warehouses", "arguments": {}}] * 7 + [
    {"name": "claim_done", "arguments": {}}
]


def tool_run(root: Path, bench_label: str, bench: dict, method: str, calls: list) -> Path:
    node = {"_target_": "tests.analysis.fixture_runs.tool_model", "calls": calls, "pos": method == "pos"}
    folder = root / bench_label / method / "scripted"
    labels = {"bench": bench_label, "method": method, "model": "scripted", "label": "full"}
    run(_config(bench, POS if method == "pos" else RAW, node), folder, labels)
    return folder


def toy_goal(index: int) -> str:
    """The goal sentence of toy task `index` (so a fixture can aim a failure at one task)."""
    from pos_bench.benchmarks.toy import ToyBenchmark

    bench = ToyBenchmark(n_tasks=index + 1)
    return bench.make_env(None).reset(bench.tasks()[index]).goal


def interrupt(folder: Path, keep: int) -> None:
    """Make `folder` look like a run killed mid-way: `keep` results, one episode without result.json."""
    path = folder / "results.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    path.write_text("".join(line + "\n" for line in lines[:keep]), encoding="utf-8")
    (folder / "summary.json").unlink(missing_ok=True)
    for line in lines[keep:]:
        task = json.loads(line)["task_id"]
        episode = find_episode(folder, task)
        (episode / "result.json").unlink(missing_ok=True)


def build_all(root: Path, *, toy_tasks: int = 12) -> dict[str, Path]:
    """Every fixture run under `root` (results-root layout `<bench>/<method>/<model>/`)."""
    runs = {
        "toy_pos": toy_run(root, "pos", toy_tasks, skill=0.75),
        "toy_raw": toy_run(root, "raw", toy_tasks, skill=0.45, xss=True, explode_goal=toy_goal(1)),
        "rca_pos": tool_run(root, "rca_synthetic", _rca(), "pos", RCA_CALLS),
        "rca_raw": tool_run(root, "rca_synthetic", _rca(), "raw", RCA_CALLS),
        "loca_pos": tool_run(root, "loca_mini", _loca(), "pos", LOCA_CALLS),
        "loca_raw": tool_run(root, "loca_mini", _loca(), "raw", LOCA_CALLS),
    }
    runs["toy_ablation"] = toy_run(root, "pos_no_trapping", toy_tasks, skill=0.75, salt="pos")
    partial = root / "toy" / "pos" / "scripted_killed"
    shutil.copytree(runs["toy_pos"], partial)
    meta = json.loads((partial / "run.json").read_text(encoding="utf-8"))
    meta["labels"]["model"] = "scripted_killed"
    (partial / "run.json").write_text(json.dumps(meta), encoding="utf-8")
    interrupt(partial, keep=toy_tasks // 2)
    runs["toy_partial"] = partial
    return runs


def _rca() -> dict[str, Any]:
    return {
        "_target_": "pos_bench.benchmarks.rca.benchmark.RCABenchmark",
        "source": "synthetic",
        "n_synthetic": 3,
        "max_turns": 10,
    }


def _loca() -> dict[str, Any]:
    return {
        "_target_": "pos_bench.benchmarks.loca.mini.benchmark.LocaBenchmark",
        "families": ["inventory_alert"],
        "seeds": [42, 123],
        "scales": ["8k", "16k"],
        "max_turns": 10,
        "truth": True,
    }


@pytest.fixture(scope="session")
def fixture_runs(tmp_path_factory) -> dict[str, Path]:
    """All fixture runs, built once per test session (import this into a conftest to use it)."""
    return build_all(tmp_path_factory.mktemp("runs"))
