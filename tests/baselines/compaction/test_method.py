"""inspect_ai's compaction as a baseline: every strategy plays every benchmark, the default threshold fires, the
policy sees exactly what inspect's strategy returns, and the summary call is a pos_bench call of its own role."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from hydra.utils import instantiate
from omegaconf import OmegaConf

from baselines.compaction import Compaction
from pos_bench.loop import play
from pos_bench.models.cache import CacheConfig, Cached
from pos_bench.models.scripted import ScriptedModel, schema_reply
from pos_bench.runner import run
from pos_bench.transcript import Recorded, Transcript
from pos_bench.types import Prompt, Reply, Usage
from tests.conftest import REPO

STRATEGIES = [
    ("compaction", "summary"),
    ("compaction", "edit"),
    ("compaction", "trim"),
    ("compaction", "auto"),
]
PLAYED = [*STRATEGIES, ("compaction_memory", "summary")]
BENCHES = ["alfworld", "clindiag", "rca_synthetic", "loca_mini"]
SCHEMA_REPLY = "+model.default={_target_:pos_bench.models.scripted.schema_reply,_partial_:true}"


def config(*overrides: str) -> dict:
    with initialize_config_dir(config_dir=str(REPO / "conf"), version_base="1.3"):
        cfg = compose("config", overrides=list(overrides))
    return OmegaConf.to_container(cfg, resolve=True)


@pytest.fixture
def staged(shared, monkeypatch) -> None:
    for folder in (shared / "benchmarks").iterdir():
        if folder.is_dir():
            monkeypatch.setenv(f"{folder.name.upper()}_DATA", str(folder))


def episode_events(run_dir: Path) -> list[dict]:
    (episode,) = (run_dir / "episodes").iterdir()
    return [json.loads(line) for line in (episode / "events.jsonl").read_text().splitlines()]


@pytest.mark.parametrize("bench", BENCHES)
@pytest.mark.parametrize(("method", "strategy"), PLAYED)
def test_every_strategy_plays_an_episode_of_every_benchmark(bench, method, strategy, staged, tmp_path):
    cfg = config(
        f"bench={bench}",
        f"method={method}",
        f"method.strategy={strategy}",
        "model=scripted",
        SCHEMA_REPLY,
        "bench.limit=1",
        "cache.mode=off",
        "runner.progress=false",
        "runner.backend=threading",
    )
    summary = run(cfg, tmp_path, {"label": "test"})
    assert (summary.episodes, summary.errors) == (1, 0), (tmp_path / "results.jsonl").read_text()[:2000]
    row = json.loads((tmp_path / "results.jsonl").read_text())
    assert row["turns"] > 0 and row["usage"]["agent"]["calls"] >= row["turns"]


class Realistic:
    """Policy replies with a sentence-long thought, as a served model writes them; the compactor writes a short
    summary. Answers depend on the prompt only, so the response cache may keep them."""

    name = "realistic"

    def __init__(self) -> None:
        self.calls: dict[str, int] = {}

    def describe(self) -> dict:
        return {"provider": "test", "model": "realistic", "temperature": 0.0}

    def generate(self, prompt: Prompt, *, role: str = "agent") -> Reply:
        self.calls[role] = self.calls.get(role, 0) + 1
        if prompt.schema is None:
            text = "Summary: the agent searched the room and has not found the target object yet."
        else:
            reply = json.loads(schema_reply(prompt))
            reply["thought"] = (
                "The last observation showed nothing useful here, so I will look somewhere I have not "
                "checked yet and keep the goal in mind."
            )
            text = json.dumps(reply)
        size = sum(len(m.content) for m in prompt.messages)
        return Reply(text, Usage(size // 4 + 1, len(text) // 4 + 1, 1))


def played(bench: str, method_overrides: list[str], model, *, turns: int, log: Transcript | None = None):
    cfg = config(f"bench={bench}", "method=compaction", "model=scripted", *method_overrides)
    benchmark = instantiate(cfg["bench"], _convert_="all")
    task = benchmark.tasks()[0]
    log = log or Transcript()
    recorded = Recorded(model, log)
    env = benchmark.make_env(recorded)
    try:
        with instantiate(cfg["method"], _convert_="all")(model=recorded) as method:
            result = play(task, env, method, recorded, brief=benchmark.brief, max_turns=turns, log=log)
    finally:
        env.close()
    return result, log, recorded, method


def test_the_default_threshold_fires_at_least_twice_in_a_30_turn_alfworld_episode(staged):
    result, log, recorded, _ = played("alfworld", [], Realistic(), turns=30)
    compactions = log.of_kind("compaction")
    assert result.turns == 30 and len(compactions) >= 2, [c["tokens_before"] for c in compactions]
    assert all(c["tokens_after"] < c["tokens_before"] for c in compactions)
    assert recorded.usage["compactor"].calls == len(compactions)


DIRECT = {
    "summary": ([], {}),
    "edit": (["method.threshold=300", "+method.keep_tool_uses=1"], {"keep_tool_uses": 1}),
    "trim": ([], {}),
}
"""Per strategy: settings under which inspect's handler gets the toy conversation under the threshold (edit
only clears observations, so it keeps one of them), and the same options for the direct call."""


@pytest.mark.parametrize("strategy", sorted(DIRECT))
def test_the_policy_sees_exactly_what_inspects_strategy_returns(strategy):
    """The conversation the method handed over, compacted again by calling inspect's strategy class directly,
    gives the prompt the policy saw (its closing request aside): inspect's code does the compaction."""
    from inspect_ai.model import CompactionEdit, CompactionSummary, CompactionTrim

    from pos_bench.models.inspect_bridge import Coroutines, inspect_model, to_messages

    model = ScriptedModel(default=schema_reply)
    log = Transcript()
    captured: list[tuple[list, Prompt]] = []

    class Watched(Compaction):
        def prompt(self, obs):
            before = list(self.conversation)
            prompt = super().prompt(obs)
            if self.pending and all(e.fallback_reason is None for e in self.pending):
                captured.append((before, prompt))
            return prompt

    overrides, options = DIRECT[strategy]
    cfg = config(
        "bench=toy", "method=compaction", f"method.strategy={strategy}", "bench.n_tasks=1", *overrides
    )
    benchmark = instantiate(cfg["bench"], _convert_="all")
    task = benchmark.tasks()[0]
    recorded = Recorded(model, log)
    env = benchmark.make_env(recorded)
    settings = {k: v for k, v in cfg["method"].items() if not k.startswith("_")}
    with Watched(recorded, **settings) as method:
        play(task, env, method, recorded, brief=benchmark.brief, max_turns=6, log=log)
    assert captured, "the toy threshold should compact within six turns"
    before, prompt = captured[0]
    classes = {"summary": CompactionSummary, "edit": CompactionEdit, "trim": CompactionTrim}
    direct = classes[strategy](threshold=method.config.threshold, **options)
    target = inspect_model(
        ScriptedModel(default=schema_reply), role="compactor", count_text=method.tokens.count
    )
    with Coroutines() as loop:
        compacted, _ = loop.run(direct.compact(target, before, []))
    assert to_messages(compacted) == prompt.messages[:-1]
    assert to_messages(compacted) != to_messages(before)


class Answers(Realistic):
    def describe(self) -> dict:
        return {**super().describe(), "model": "answers"}


class Unreachable(Answers):
    def generate(self, prompt, *, role="agent"):
        raise AssertionError("a replay must not reach the model")


def test_the_summary_call_is_its_own_role_cached_and_replayed_without_model_calls(staged, tmp_path):
    path = str(tmp_path / "cache.sqlite")
    answers = Answers()
    first, log, recorded, _ = played(
        "alfworld", [], Cached(answers, CacheConfig(mode="read_write", path=path)), turns=30
    )
    summaries = [c for c in log.of_kind("call") if c["role"] == "compactor"]
    assert summaries and first.usage == {} and recorded.usage["compactor"].calls == len(summaries)
    assert recorded.usage["compactor"].input_tokens == sum(c["usage"]["input_tokens"] for c in summaries)
    assert answers.calls["compactor"] == len(summaries)

    _, log2, recorded2, _ = played(
        "alfworld", [], Cached(Unreachable(), CacheConfig(mode="replay", path=path)), turns=30
    )
    replayed = log2.of_kind("call")
    assert replayed and all(c["cached"] for c in replayed)
    assert recorded2.usage["compactor"] == recorded.usage["compactor"]
    assert [e["summary"] for e in log2.of_kind("compaction")] == [
        e["summary"] for e in log.of_kind("compaction")
    ]


def test_peak_counts_the_compacted_prompt(staged):
    """Peak is the largest policy input: with compaction it stays near the threshold where the full history
    keeps growing."""
    from pos_bench.runner.summary import context_load

    _, _, compacted, _ = played("alfworld", [], Realistic(), turns=30)
    _, _, full, _ = played("alfworld", ["method.threshold=1000000"], Realistic(), turns=30)
    assert context_load(compacted.calls).peak_input_tokens < context_load(full.calls).peak_input_tokens


def test_native_is_refused_in_one_sentence():
    method = Compaction(ScriptedModel(), strategy="native")
    refusal = method.unsupported(None)
    assert refusal and refusal.count(". ") == 0 and "native" in refusal


@pytest.mark.parametrize("bad", [{"strategy": "shrink"}, {"threshold": 0}, {"preserve": 1.5}])
def test_bad_settings_are_refused(bad):
    with pytest.raises(ValueError, match="bad compaction settings"):
        Compaction(ScriptedModel(), **bad)


def test_a_fractional_threshold_needs_a_context_window():
    method = Compaction(ScriptedModel(), threshold=0.5, context_window=8000)
    assert method.config.threshold_tokens(None) == 4000
    with pytest.raises(ValueError, match="context_window"):
        Compaction(ScriptedModel(), threshold=0.5).config.threshold_tokens(None)


def test_the_memory_tool_is_a_meta_action_with_inspects_warning_before_compaction():
    """compaction_memory on the toy household: the agent saves a note and reads it back through inspect's
    memory tool (no environment step), and inspect's handler warns it before the conversation is compacted."""
    from inspect_ai.model._compaction.memory import memory_warning_message

    scripted = [
        '{"thought": "save", "action": "memory create /memories/plan.md the key is in drawer 2"}',
        '{"thought": "read", "action": "memory view /memories/plan.md"}',
    ]

    def reply(prompt: Prompt, index: int) -> str:
        return scripted[index] if index < len(scripted) else schema_reply(prompt)

    cfg = config("bench=toy", "method=compaction_memory", "bench.n_tasks=1", "method.threshold=1200")
    benchmark = instantiate(cfg["bench"], _convert_="all")
    task = benchmark.tasks()[0]
    log = Transcript()
    model = ScriptedModel(replies={"agent": reply}, default=schema_reply)
    recorded = Recorded(model, log)
    env = benchmark.make_env(recorded)
    with instantiate(cfg["method"], _convert_="all")(model=recorded) as method:
        result = play(task, env, method, recorded, brief=benchmark.brief, max_turns=20, log=log)
        report = method.report()
    assert result.meta_actions == 2 and result.steps == 20
    saved, read = (m["record"]["memory_tool"] for m in log.of_kind("memory"))
    assert saved["arguments"] == {
        "command": "create",
        "path": "/memories/plan.md",
        "file_text": "the key is in drawer 2",
    }
    assert "the key is in drawer 2" in read["result"]
    third = [p for role, p in model.prompts if role == "agent"][2]
    assert "Observation (memory)" in third.messages[-2].content and "memory" in third.meta_actions
    summarised = next(p for role, p in model.prompts if role == "compactor").messages[-1].content
    assert "files you saved to memory" in summarised  # inspect saw the memory calls as its own tool's
    warning = memory_warning_message().text
    warned = [
        p for role, p in model.prompts if role == "agent" and any(warning in m.content for m in p.messages)
    ]
    assert report["memory_warnings"] >= 1 and warned and log.of_kind("compaction")
    first_warned = model.prompts.index(("agent", warned[0]))
    first_compaction = next(i for i, (role, _) in enumerate(model.prompts) if role == "compactor")
    assert first_warned < first_compaction
