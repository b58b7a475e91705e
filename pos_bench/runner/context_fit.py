"""Pre-flight's context check: a benchmark whose first policy prompt cannot fit the model's context window
stops the run before the first episode, with one line, instead of failing every episode on its first call.

Only models that declare their window and can count tokens without answering (`ContextLimited`: the
embedded model) are checked; a remote provider reports an overflow itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pos_bench.build import build
from pos_bench.prompting import policy_prompt, render_observation
from pos_bench.protocols import ContextLimited
from pos_bench.types import Brief, Observation, Prompt


def first_prompt(brief: Brief, first: Observation) -> Prompt:
    """The smallest policy prompt any method sends on the first turn: the benchmark's instructions, the task,
    the first observation, the actions and the reply contract (every method adds its memory to these)."""
    sections = [f"Task: {first.goal}", f"Current observation:\n{render_observation(first)}"]
    return policy_prompt(brief, first, sections, max_tokens=brief.policy_max_tokens)


def agent_model_node(cfg: Mapping[str, Any]) -> Mapping[str, Any]:
    """The config node of the model that answers policy prompts (`roles.agent`, else `model`)."""
    return (cfg.get("roles") or {}).get("agent") or cfg["model"]


def context_problem(cfg: Mapping[str, Any], brief: Brief, first: Observation) -> str | None:
    """One line when the run's first policy prompt is longer than the agent model's context, else None."""
    model = build(agent_model_node(cfg))
    if not isinstance(model, ContextLimited):
        return None
    tokens = model.count_tokens(first_prompt(brief, first))
    window = model.context_window
    if tokens < window:
        return None
    return (
        f"the benchmark's first prompt is {tokens:,} tokens, more than the model's context of {window:,} "
        "tokens: pick a model with a longer context (the embedded model serves 32k as a smoke test: "
        "model=smollm2_32k)."
    )
