"""ACON's compression guidelines, in pos_bench's own words (SPEC-BASE §4.4).

History guidelines: `base` (REASONING + COMPLETED), `ut` (adds VARS, TODO, GUARDRAILS), `utco` (the UT layout
with compression rules) and `domain` (the UT layout with the VARS and GUARDRAILS items of one task domain,
the training-free default). Observation guidelines: `base`, and a stricter preserve/never list shared by
`ut` and `domain`; `utco` adds the brevity rules.
"""

from __future__ import annotations

from dataclasses import dataclass

GUIDELINES = ("domain", "base", "ut", "utco")

COMPRESSOR_SYSTEM = (
    "You condense the working context of an agent. Write a concise, optimised version of the context "
    "that keeps everything needed to carry out the user instruction."
)

HISTORY_HEADING = "## History summary"
REFINED_HEADING = "## Refined observation"

_HIST_INPUTS = (
    "Inputs: the user instruction, the previous summary (may be empty) and the interaction history since "
    "that summary. The new summary replaces the previous one, so carry over whatever of it still matters."
)

_HIST_BASE = """Maintain a structured summary of the agent's progress that it can resume from without losing anything.
Sections:
- REASONING: progress so far, decisions taken, their outcomes and why.
- COMPLETED: finished subtasks with their results.
Priorities: be concise; use a structured format the agent can reuse; the agent must be able to continue with no
information loss; keep what errors and failed attempts taught; keep essential artifacts (names, ids, values)."""

_UT_SECTIONS = """Sections, as bullets and tables:
- REASONING: progress, decisions, outcomes and rationale.
- VARS: a table `name | value | purpose` with every runtime value that must carry over{vars}.
- TODO: the pending actions, each detailed enough to execute directly.
- COMPLETED: finished subtasks with their results.
- GUARDRAILS: short reminders that prevent repeating an error{guardrails}.
Preserve every essential fact; mention an error only when it tells the agent what to avoid."""

_CO_RULES = """Compression rules: narratives at most 2 sentences; collapse repetitive step logs into one phrase; drop
expired values, raw tool dumps and meta commentary; keep only variables needed later; never invent or alter
state; at most 1500 characters in total; TODO and COMPLETED at most 5 bullets each; GUARDRAILS one bullet."""


@dataclass(frozen=True)
class DomainItems:
    """What VARS and GUARDRAILS must cover for one task domain (SPEC-BASE §4.4, domain variant)."""

    vars: str
    guardrails: str


DOMAINS = {
    "household": DomainItems(
        vars=(
            " (places visited and what was seen where, object → receptacle; which receptacles are open or "
            "closed; the inventory; object states such as clean, hot, cool or sliced; the exact ids of the "
            "target object and target receptacle; the task split into its steps)"
        ),
        guardrails=(
            " (never repeat an identical action that did nothing; 'Nothing happens.' means the command was "
            "invalid; go to a receptacle before opening it)"
        ),
    ),
    "workspace": DomainItems(
        vars=(
            " (files and records already read with their key values, ids and paths; outputs already written; "
            "the requirements still unmet)"
        ),
        guardrails=" (do not re-read what is recorded here; check each requirement before claiming done)",
    ),
    "incident": DomainItems(
        vars=(
            " (entities and metrics queried with their key numbers against the baseline; candidate root causes "
            "and fault types with their status; entity names verified verbatim)"
        ),
        guardrails=" (do not repeat a query already answered; submit only a verified entity name)",
    ),
    "clinical": DomainItems(
        vars=(
            " (findings per category: history, examination, laboratory, imaging, other; questions already "
            "answered or reported unavailable; the current differential with its support)"
        ),
        guardrails=" (do not ask again what was answered or unavailable; submit the most specific diagnosis)",
    ),
}

_OBS_BASE = f"""Refine the current observation for an agent working on the user instruction.
Inputs: the user instruction, the interaction history and the current observation.
First write a short reasoning on which parts of the observation the remaining steps will need, then a minimal
but sufficient refined observation.
Reply with two sections: `## Reasoning` and `{REFINED_HEADING}`."""

_OBS_STRICT = """Always keep: identifiers, parameters, schema fields and the raw rows needed for comparisons.
Never invent content; never replace machine-readable data with prose."""

_OBS_CO = """Reasoning at most 40 words; one JSON object per line for structured records; summarise uniform lists
as ranges or patterns."""


def history_guideline(variant: str, domain: str) -> str:
    """The history-compression instructions for `variant` (`domain` uses the items of `domain`)."""
    if variant not in GUIDELINES:
        raise ValueError(f"guideline must be one of {GUIDELINES}, got {variant!r}")
    if variant == "base":
        body = _HIST_BASE
    else:
        items = DOMAINS[domain] if variant == "domain" else DomainItems("", "")
        body = (
            "Maintain a structured, context-aware summary of the agent's progress.\n"
            + _UT_SECTIONS.format(vars=items.vars, guardrails=items.guardrails)
        )
        if variant == "utco":
            body += "\n" + _CO_RULES
    return f"{body}\n{_HIST_INPUTS}\nOutput only the summary, under the heading `{HISTORY_HEADING}`."


def observation_guideline(variant: str) -> str:
    if variant not in GUIDELINES:
        raise ValueError(f"guideline must be one of {GUIDELINES}, got {variant!r}")
    if variant == "base":
        return _OBS_BASE
    text = f"{_OBS_BASE}\n{_OBS_STRICT}"
    return f"{text}\n{_OBS_CO}" if variant == "utco" else text
