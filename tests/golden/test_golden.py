"""Golden transcripts: every method plays one short episode on the toy household and one on `rca_synthetic`
with deterministic scripted replies for every role; what it sent and kept (prompts per role, replies, parsed
decisions, steps, memory records, score) must match the recorded fixture.

After an intended change, re-record every fixture with one command and review the diff in git:

    uv run --all-extras pytest tests/golden --update-golden
"""

from __future__ import annotations

import difflib
import json
from pathlib import Path
from typing import Any

import pytest
from hydra import compose, initialize_config_dir
from hydra.utils import instantiate
from omegaconf import OmegaConf

from pos_bench.loop import play
from pos_bench.models.scripted import ScriptedModel, schema_reply
from pos_bench.transcript import Recorded, Transcript
from pos_bench.types import Prompt
from tests.conftest import REPO
from tests.golden.transcript import render

FIXTURES = Path(__file__).parent / "fixtures"


def recorded_methods() -> list[str]:
    """Every method config except those that play the benchmark's expert (`expert: true`): a policy with no
    model calls has nothing to record."""
    methods = []
    for path in sorted((REPO / "conf" / "method").glob("*.yaml")):
        node = OmegaConf.load(path)
        if not node.get("expert", False):
            methods.append(path.stem)
    return methods


METHODS = recorded_methods()
BENCHES = {"toy": ["bench.n_tasks=1"], "rca_synthetic": ["bench.n_synthetic=1"]}
TURNS = 3
OVERRIDES = {"pace": ["method.encoder._target_=baselines.pace.encoder.HashingEncoder"]}
"""PACE's embedded encoder is swapped for the hashing one: llama.cpp embeddings may differ in low-order bits
between machines, a golden transcript must not."""
RECORD = "uv run --all-extras pytest tests/golden --update-golden"
STRATEGIES = {
    f"compaction@{strategy}": ["method=compaction", f"method.strategy={strategy}", "bench.max_turns=6"]
    for strategy in ("summary", "edit", "trim", "auto")
}
"""One toy transcript per compaction strategy (`<method>@<strategy>`), six turns: long enough for the toy
threshold to fire."""


def scripted_reply(prompt: Prompt, index: int) -> str:
    """Every role answers the smallest reply its schema accepts; the policy's action walks through the offered
    commands or tools by call index, so successive turns differ."""
    text = schema_reply(prompt, index)
    properties = (prompt.schema or {}).get("properties", {})
    if "action" not in properties and "actions" not in properties:
        return text
    reply = json.loads(text)
    if "thought" in reply:
        reply["thought"] = f"turn {index}"
    action = properties.get("action", {})
    tool = prompt.schema.get("$defs", {}).get("ToolAction", {}).get("properties", {}).get("name", {})
    if "enum" in action:
        reply["action"] = action["enum"][index % len(action["enum"])]
    elif "enum" in tool:
        call = {"name": tool["enum"][index % len(tool["enum"])], "arguments": {}}
        if "action" in reply:
            reply["action"] = call
        elif reply.get("actions"):  # a multi-action turn: the first of its actions walks the tools
            reply["actions"][0] = call
    return json.dumps(reply)


def composed(bench: str, method: str) -> tuple[dict, Any]:
    """The resolved config of a short scripted episode of `method` (or a `STRATEGIES` variant) on `bench`, and
    its built benchmark."""
    overrides = [f"bench={bench}", f"method={method}", "model=scripted", f"bench.max_turns={TURNS}"]
    overrides += BENCHES[bench] + OVERRIDES.get(method, []) + STRATEGIES.get(method, [])
    if method in STRATEGIES:
        overrides = [o for o in overrides if o != f"method={method}"]
    with initialize_config_dir(config_dir=str(REPO / "conf"), version_base="1.3"):
        cfg = compose("config", overrides=overrides)
    plain = OmegaConf.to_container(cfg, resolve=True)
    return plain, instantiate(plain["bench"], _convert_="all")


def record(bench: str, method: str) -> str:
    """The rendered transcript of one episode of `method` on `bench` (or the refusal, for an unsupported pair)."""
    plain, benchmark = composed(bench, method)
    task = benchmark.tasks()[0]
    log = Transcript()
    model = Recorded(ScriptedModel(default=scripted_reply), log)
    env = benchmark.make_env(model)
    header = f"golden transcript: bench={bench} method={method} task={task.id}; re-record: {RECORD}"
    try:
        with instantiate(plain["method"], _convert_="all")(model=model) as built:
            refusal = built.unsupported(env.reset(task))
            if refusal:
                return f"# {header}\n=== unsupported\n{refusal}\n"
            play(task, env, built, model, brief=benchmark.brief, max_turns=benchmark.max_turns, log=log)
    finally:
        env.close()
    return render(log.events, header)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("bench", sorted(BENCHES))
def test_golden_transcript(bench, method, update_golden):
    fixture = FIXTURES / f"{bench}__{method}.txt"
    actual = record(bench, method)
    if update_golden:
        fixture.write_text(actual, encoding="utf-8")
        return
    if not fixture.exists():
        pytest.fail(f"no golden transcript {fixture.name}; record it with: {RECORD}")
    expected = fixture.read_text(encoding="utf-8")
    if actual != expected:
        diff = difflib.unified_diff(
            expected.splitlines(), actual.splitlines(), "recorded", "now", lineterm="", n=2
        )
        shown = list(diff)
        pytest.fail(
            f"{fixture.name} differs from this run ({len(shown)} diff lines); if the change is intended, "
            f"re-record with: {RECORD}\n" + "\n".join(shown[:200]),
            pytrace=False,
        )


@pytest.mark.parametrize("variant", sorted(STRATEGIES))
def test_golden_transcript_of_each_compaction_strategy(variant, update_golden):
    test_golden_transcript("toy", variant, update_golden)


def test_every_golden_transcript_belongs_to_a_configured_method():
    """A renamed or removed method leaves no stale fixture behind (a new one fails above until recorded)."""
    recorded = {p.stem.split("__", 1)[1] for p in FIXTURES.glob("*.txt")}
    assert recorded - set(METHODS) - set(STRATEGIES) == set()
    assert "raw" in METHODS and "expert" not in METHODS


@pytest.mark.parametrize("method", METHODS)
def test_golden_transcripts_do_not_depend_on_the_users_cache_or_home(method, tmp_path, monkeypatch):
    """Under another `XDG_CACHE_HOME` and `HOME` the synthetic RCA cases are generated elsewhere; the transcript
    names them by the cache's stable name, so the recorded fixture still matches."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "elsewhere-cache"))
    monkeypatch.setenv("HOME", str(tmp_path / "elsewhere-home"))
    fixture = FIXTURES / f"rca_synthetic__{method}.txt"
    actual = record("rca_synthetic", method)
    assert str(tmp_path) not in actual
    assert actual == fixture.read_text(encoding="utf-8")
