"""The belief model's calls (role `belief`): initialise the belief, propose an incremental delta after each
action, repair a delta the Sentinel flagged, and write the belief text (SPEC-POS §6.2–6.4, §6.8–6.9).

A candidate that cannot be built (a missing owner or endpoint) gets the same one repair turn as bad JSON; a
second failure raises `BeliefFailure`, which the method turns into a context error (§5.5).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from pos_bench.pos.belief import Belief, BeliefDelta, BeliefError, BeliefInit, apply_delta
from pos_bench.protocols import Model
from pos_bench.structured import StructuredFailure, ask, schema_of
from pos_bench.types import Message, Prompt

RECORDS = """The belief is a small graph. Entities are concrete things or actors (entity_id, entity_type, name,
attributes); attributes hold only stable, task-relevant scalar values used to look something up, such as an id or a
path. A state is one condition of one entity (state_id, entity_id of its owner, description). A relation is a directed
fact linking two nodes, each an entity id or a state id (relation_id, source_id, target_id, description).
Every state and relation has source_type: "observed" when the observation shows it (probability 1, reason null), or
"inferred" when you conclude it without seeing it (probability below 1 and a short reason). Confidences are per record;
they need not sum to 1 across rival guesses.
Keep only what matters for the goal and never invent evidence. Add the agent itself as an entity only if it is
something that can act on the environment.
Gaps: epistemic gaps are what must still be learned or checked; achievement gaps are what must still change in the
world. Each gap is {"target": ..., "reason": ...}. The Active Gap ("frontier") is the one gap most worth working on
now, given as {"gap_type": "epistemic" or "achievement", "target": copied exactly from a gap}; null only if there are
no gaps."""

MODE_GUIDANCE = {
    "execution": (
        "When an observation proves that something relevant in the world changed, overwrite the facts it "
        "contradicts, close exactly the gaps it settles, and leave every other open gap in place."
    ),
    "diagnostic": (
        "A test that comes back negative may lower the confidence of an inferred hypothesis while the test result "
        "itself is stored as an observed state; that is an acceptable revision, and rival hypotheses the test did "
        "not address stay as they are."
    ),
}

INIT_TASK = """Build the agent's initial belief from the task and the first observation.
Write goal_specification as a concrete success condition that can be checked. Reply with one JSON object with exactly
the keys goal_specification, entities, states, relations, epistemic_gaps, achievement_gaps, frontier."""

UPDATE_TASK = """Update the belief after the step below by sending a single incremental change: whatever you do not
mention stays as it is. Remove a state or relation (remove_state_ids, remove_relation_ids) only when the new
observation contradicts it; add or overwrite records with upsert_entities, upsert_states, upsert_relations (full
records). Send both gap lists complete: leave out the gaps this step closed and carry over the ones still open. Keep
the current frontier while its gap is open; otherwise name a target copied exactly from your new lists.
Reply with one JSON object with exactly the keys remove_state_ids, remove_relation_ids, upsert_entities,
upsert_states, upsert_relations, epistemic_gaps, achievement_gaps, frontier."""

REPAIR_SECTION = """Your earlier change for this same step was rejected by the consistency check for the issues
below. Fix exactly these issues, using the observation given, and change nothing else."""

TEXTUALIZE_TASK = """Write a short, readable account of the agent's present world, using only the structure given.
Mention the goal and every open gap, state the observed facts, mark the inferred facts as uncertain, and connect facts
along their relations. Add nothing that is not in the input. Reply with one JSON object {"belief_text": "..."}."""


class BeliefText(BaseModel):
    model_config = ConfigDict(extra="forbid")
    belief_text: str


class BeliefFailure(RuntimeError):
    """The belief model gave no usable answer after its one repair."""


def semantic_view(belief: Belief) -> dict[str, Any]:
    """The world as fact groups (connected entities with their states; relations with endpoints spelled out)
    so the text writer need not resolve ids (§6.8)."""
    w = belief.world.to_dict()
    owner = {i: s["entity_id"] for i, s in w["states"].items()}
    parent = {e: e for e in w["entities"]}

    def root(x: str) -> str:
        while parent[x] != x:
            x = parent[x]
        return x

    for r in w["relations"].values():
        a, b = (owner.get(r["source_id"], r["source_id"]), owner.get(r["target_id"], r["target_id"]))
        if a in parent and b in parent:
            parent[root(a)] = root(b)
    groups: dict[str, list[str]] = {}
    for e in sorted(w["entities"]):
        groups.setdefault(root(e), []).append(e)

    def endpoint(node: str) -> dict[str, Any]:
        return w["entities"].get(node) or w["states"].get(node) or {"id": node}

    def order(members: list[str]) -> tuple[bool, str]:
        first = min(members, key=lambda e: (w["entities"][e]["entity_type"] != "agent", e))
        return (w["entities"][first]["entity_type"] != "agent", first)

    out = []
    for n, members in enumerate(sorted(groups.values(), key=order), start=1):
        ents = [
            {**w["entities"][e], "states": [s for s in w["states"].values() if s["entity_id"] == e]}
            for e in members
        ]
        rels = [
            {**r, "source": endpoint(r["source_id"]), "target": endpoint(r["target_id"])}
            for r in w["relations"].values()
            if owner.get(r["source_id"], r["source_id"]) in members
        ]
        out.append({"group_id": f"g{n}", "entities": ents, "relations": rels})
    return {"fact_groups": out}


class Updater:
    """Belief-model calls for one episode."""

    def __init__(self, model: Model, *, mode: Literal["execution", "diagnostic"], max_tokens: int = 4096):
        self.model = model
        self.mode = mode
        self.max_tokens = max_tokens

    def _system(self, task: str) -> str:
        return f"{RECORDS}\n\n{MODE_GUIDANCE[self.mode]}\n\n{task}"

    def _candidate(
        self, prompt: Prompt, output: type[BeliefInit | BeliefDelta], base: Belief, what: str
    ) -> Belief:
        built: list[Belief] = []

        def check(reply: BeliefInit | BeliefDelta) -> str | None:
            try:
                built.append(apply_delta(base, reply))
            except BeliefError as error:
                return f"reference error: {error}"
            return None

        reply = ask(self.model, prompt, output, role="belief", max_repairs=1, check=check)
        if isinstance(reply, StructuredFailure):
            raise BeliefFailure(f"belief {what}: no usable reply after one repair ({reply.problem})"[:2000])
        return built[-1]

    def init(self, base: Belief, first_observation: str, issues: Sequence[Mapping[str, Any]] = ()) -> Belief:
        payload: dict[str, Any] = {"task": base.goal.user_input, "observation": first_observation}
        task = INIT_TASK
        if issues:
            task = f"{INIT_TASK}\n\n{REPAIR_SECTION}"
            payload["consistency_issues"] = list(issues)
        prompt = self._prompt(self._system(task), json.dumps(payload, ensure_ascii=False), BeliefInit)
        return self._candidate(prompt, BeliefInit, base, "init repair" if issues else "init")

    def update(
        self,
        committed: Belief,
        context: Mapping[str, Any],
        transition: Mapping[str, Any],
        issues: Sequence[Mapping[str, Any]] = (),
    ) -> Belief:
        payload: dict[str, Any] = {"belief": context, "transition": transition}
        task = UPDATE_TASK
        if issues:
            task = f"{UPDATE_TASK}\n\n{REPAIR_SECTION}"
            payload["consistency_issues"] = list(issues)
        prompt = self._prompt(self._system(task), json.dumps(payload, ensure_ascii=False), BeliefDelta)
        return self._candidate(prompt, BeliefDelta, committed, "repair" if issues else "update")

    def textualize(self, belief: Belief) -> str:
        payload = {
            "goal": {"user_input": belief.goal.user_input, "specification": belief.goal.specification},
            "world": semantic_view(belief),
            "epistemic_gaps": [g.model_dump() for g in belief.epistemic_gaps],
            "achievement_gaps": [g.model_dump() for g in belief.achievement_gaps],
            "active_gap": belief.expanded_active_gap(),
        }
        prompt = self._prompt(TEXTUALIZE_TASK, json.dumps(payload, ensure_ascii=False), BeliefText)
        reply = ask(self.model, prompt, BeliefText, role="belief", max_repairs=1)
        if isinstance(reply, StructuredFailure):
            raise BeliefFailure(f"belief text: no usable reply after one repair ({reply.problem})"[:2000])
        return reply.belief_text

    def _prompt(self, system: str, user: str, output: type[BaseModel]) -> Prompt:
        return Prompt(
            messages=(Message("system", system), Message("user", user)),
            schema=schema_of(output),
            max_tokens=self.max_tokens,
        )
