"""The one system prompt that the belief update and both Sentinel lanes share (SPEC-POS §6.3, §6.5, §6.6).

The three calls of a step send the same system prompt, which holds every job's instructions, and their payloads
open with the belief before the step (`belief_before`, compact JSON); the message's last line names the job. A
server's prefix cache (llama.cpp, vLLM, providers' prompt caching) then serves the audit and the progress judge the
system prompt and the belief from the update's prompt, and the next update most of it from this step's calls. The
belief initialisation (§6.2) sends its own task but opens with the same record rules and mode guidance.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Literal

from pos_bench.types import Message, Prompt

Mode = Literal["execution", "diagnostic"]

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

MODE_GUIDANCE: dict[str, str] = {
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

JOBS = """You keep this belief and check it, one step at a time, in one of three jobs. Each message is a JSON object
that opens with the belief before the step (`belief_before`), followed by the job's input; its last line names the job.

Job "update": the message holds the step just taken (`transition`: the agent's thought, its action and the
observation returned). Send a single incremental change: whatever you do not mention stays as it is. Remove a state
or relation (remove_state_ids, remove_relation_ids) only when the new observation contradicts it; add or overwrite
records with upsert_entities, upsert_states, upsert_relations (full records). Send both gap lists complete: leave out
the gaps this step closed and carry over the ones still open. Keep the current frontier while its gap is open;
otherwise name a target copied exactly from your new lists. Reply with one JSON object with exactly the keys
remove_state_ids, remove_relation_ids, upsert_entities, upsert_states, upsert_relations, epistemic_gaps,
achievement_gaps, frontier.

Job "audit" (you are the Belief Sentinel): the message holds a proposed change: the candidate belief after it
(`candidate_belief`), the ids of the records the change touched (`changed_ids`) and the raw evidence
(`raw_trajectory`: steps with the action taken and the observation returned). Flag a problem only in a record or gap
this change touched, and only when it contradicts the rest of the belief (internal: for example one object held to
be both open and closed) or contradicts the raw evidence (external). Something not being visible in a partial
observation is not a contradiction. Report at most one issue and back it with a quote copied word for word from the
observation or action of the step you cite. Never advise what the agent should do in the environment. Reply with one
JSON object {"issues": [...]}; an empty list means the candidate is consistent. Each issue has the keys targets
(record ids or gap targets), issue_type ("internal" or "external"), problem, evidence_step, evidence_quote, evidence,
suggestion (how to correct the belief).

Job "progress" (you are the Belief Sentinel): the message holds the committed belief after the step
(`belief_after`), the Active Gap the agent was working on (`frontier`), the action and the observation. Judge whether
the step moved the agent forward on that gap. Label progress 1 in three cases only: the gap became smaller; the step
produced evidence the gap needs; or the step established a fact (a state or relation) on a believable route to the
goal. Repeating a failure, getting the same unchanged result again, or changing something unrelated is 0. For
example, opening a drawer and finding it empty narrows where the mug can be (1); opening the same empty drawer a
second time teaches nothing (0). Reply with one JSON object {"progress": 0 or 1, "score": a number >= 0,
"affected_record_ids": [ids of records the step changed that support your label], "reason": one sentence}."""

UPDATE_JOB = 'Job: "update". Reply with the change as one JSON object only.'
AUDIT_JOB = 'Job: "audit". Reply with the audit\'s JSON object only.'
PROGRESS_JOB = 'Job: "progress". Reply with the progress JSON object only.'


def rules(mode: Mode) -> str:
    """The record rules and the task-mode guidance (§6.9) every belief prompt opens with."""
    return f"{RECORDS}\n\n{MODE_GUIDANCE[mode]}"


def desk_system(mode: Mode) -> str:
    """The shared system prompt of the update, audit and progress calls."""
    return f"{rules(mode)}\n\n{JOBS}"


def desk_prompt(
    payload: Mapping[str, Any], job: str, *, mode: Mode, note: str = "", **options: Any
) -> Prompt:
    """A job's prompt: the shared system prompt, then the payload as compact JSON (no optional spaces: about 8%
    fewer tokens with SmolLM2's tokenizer), an optional note (a repair's instructions) and the job line."""
    if next(iter(payload), None) != "belief_before":
        raise ValueError("a desk payload opens with belief_before, so the three calls share a prefix")
    parts = [json.dumps(payload, ensure_ascii=False, separators=(",", ":")), note, job]
    content = "\n\n".join(part for part in parts if part)
    return Prompt(messages=(Message("system", desk_system(mode)), Message("user", content)), **options)
