"""A scripted stand-in for every PoS role, steered per call by small plans (tests only)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from pos_bench.models.scripted import ScriptedModel
from pos_bench.types import Prompt

GAP_E = {"target": "find where mug 1 is", "reason": "the mug has not been seen"}
GAP_A = {"target": "put mug 1 in cabinet 1", "reason": "the mug is not in the cabinet"}

INIT = {
    "goal_specification": "mug 1 is inside cabinet 1",
    "entities": [
        {"entity_id": "e1", "entity_type": "object", "name": "mug 1"},
        {"entity_id": "e2", "entity_type": "receptacle", "name": "cabinet 1"},
    ],
    "states": [
        {
            "state_id": "s1",
            "entity_id": "e1",
            "description": "mug 1 location unknown",
            "probability": 0.5,
            "reason": "not seen",
            "source_type": "inferred",
        }
    ],
    "relations": [],
    "epistemic_gaps": [GAP_E],
    "achievement_gaps": [GAP_A],
    "frontier": {"gap_type": "epistemic", "target": GAP_E["target"]},
}


def delta(**kw: Any) -> dict[str, Any]:
    base = {
        "remove_state_ids": [],
        "remove_relation_ids": [],
        "upsert_entities": [],
        "upsert_states": [],
        "upsert_relations": [],
        "epistemic_gaps": [GAP_E],
        "achievement_gaps": [GAP_A],
        "frontier": None,
    }
    return {**base, **kw}


def moved(n: int) -> dict[str, Any]:
    """A delta that rewrites the mug's state (the world changes every time)."""
    return delta(
        upsert_states=[
            {
                "state_id": "s1",
                "entity_id": "e1",
                "description": f"mug 1 not at place {n}",
                "source_type": "observed",
            }
        ]
    )


def payload(prompt: Prompt) -> dict[str, Any]:
    """The JSON object a role's last user message opens with (a Sentinel lane's message ends with its job line)."""
    if prompt.messages[-1].role != "user":
        return {}
    return json.JSONDecoder().raw_decode(prompt.messages[-1].content)[0]


def grounded_issue(prompt: Prompt) -> dict[str, Any]:
    """An issue quoting the newest evidence step verbatim."""
    last = payload(prompt)["raw_trajectory"][-1]
    return {
        "targets": ["e1"],
        "issue_type": "external",
        "problem": "contradicts the observation",
        "evidence_step": last["step"],
        "evidence_quote": last["observation"][:12],
        "evidence": "seen",
        "suggestion": "fix e1",
    }


class PosScript:
    """Per-role plans. Each plan entry is a JSON-able value, a raw string, or a function of the prompt;
    the last entry repeats."""

    def __init__(self, *, updates=None, audits=None, judges=None, agent=None, init=None):
        self.init = init or [INIT]
        self.updates = updates or [delta()]
        self.audits = audits or [{"issues": []}]
        self.judges = judges or [
            {"progress": 0, "score": 0.0, "affected_record_ids": [], "reason": "no change"}
        ]
        self.agent = agent or ['{"thought": "look around", "action": "look"}']
        self.counts: dict[str, int] = {}

    def _next(self, kind: str, plan: list, prompt: Prompt) -> str:
        i = self.counts.get(kind, 0)
        self.counts[kind] = i + 1
        item = plan[min(i, len(plan) - 1)]
        if callable(item):
            item = item(prompt)
        return item if isinstance(item, str) else json.dumps(item)

    def _belief(self, prompt: Prompt, _: int) -> str:
        schema = json.dumps(prompt.schema)
        if "belief_text" in schema:
            self.counts["text"] = self.counts.get("text", 0) + 1
            return json.dumps({"belief_text": f"belief text number {self.counts['text']}"})
        if "goal_specification" in schema:
            return self._next("init", self.init, prompt)
        return self._next("update", self.updates, prompt)

    def model(self) -> ScriptedModel:
        replies: dict[str, Callable[[Prompt, int], str]] = {
            "belief": self._belief,
            "sentinel_consistency": lambda p, _: self._next("audit", self.audits, p),
            "sentinel_progress": lambda p, _: self._next("judge", self.judges, p),
            "agent": lambda p, _: self._next("agent", self.agent, p),
        }
        return ScriptedModel(replies)
