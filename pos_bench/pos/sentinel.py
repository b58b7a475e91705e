"""The Belief Sentinel (SPEC-POS §7, §8): a consistency lane that audits each proposed belief change against
the raw evidence, and a progress lane that labels each transition.

The audit reply is filtered mechanically (grounding): an issue counts only if it names records or gaps that
exist and quotes its cited step verbatim. Diagnostic progress is a pure distance, no LLM call.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from pos_bench.protocols import Model
from pos_bench.structured import StructuredFailure, ask, schema_of
from pos_bench.types import Message, Prompt

TRUNCATION = "\n[... observation truncated ...]\n"

SENTINEL_SYSTEM = """You are the Belief Sentinel: you check an agent's belief about its task world, one step at a time,
in one of two jobs. Each message is a JSON object that opens with the belief before the step (`belief_before`) and
then the belief after it, followed by the evidence; its last line names the job.

Job "audit": the message holds a proposed change: the candidate belief after it (`candidate_belief`), the ids of the
records the change touched (`changed_ids`) and the raw evidence (`raw_trajectory`: steps with the action taken and
the observation returned). Flag a problem only in a record or gap this change touched, and only when it contradicts
the rest of the belief (internal: for example one object held to be both open and closed) or contradicts the raw
evidence (external). Something not being visible in a partial observation is not a contradiction. Report at most one
issue and back it with a quote copied word for word from the observation or action of the step you cite. Never
advise what the agent should do in the environment. Reply with one JSON object {"issues": [...]}; an empty list means
the candidate is consistent. Each issue has the keys targets (record ids or gap targets), issue_type ("internal" or
"external"), problem, evidence_step, evidence_quote, evidence, suggestion (how to correct the belief).

Job "progress": the message holds the committed belief after the step (`belief_after`), the Active Gap the agent
was working on (`frontier`), the action and the observation. Judge whether the step moved the agent forward on that
gap. Label progress 1 in three cases only: the gap became smaller; the step produced evidence the gap needs; or the
step established a fact (a state or relation) on a believable route to the goal. Repeating a failure, getting the
same unchanged result again, or changing something unrelated is 0. For example, opening a drawer and finding it
empty narrows where the mug can be (1); opening the same empty drawer a second time teaches nothing (0). Reply with
one JSON object {"progress": 0 or 1, "score": a number >= 0, "affected_record_ids": [ids of records the step changed
that support your label], "reason": one sentence}."""
"""Both lanes share this system prompt and their payloads open with the same belief, so the progress call reuses
the audit's prompt prefix in a server's prefix cache (llama.cpp, vLLM, providers' prompt caching)."""

AUDIT_JOB = 'Job: "audit". Reply with the audit\'s JSON object only.'
JUDGE_JOB = 'Job: "progress". Reply with the progress JSON object only.'


def sentinel_prompt(payload: Mapping[str, Any], job: str, **options: Any) -> Prompt:
    """A Sentinel lane's prompt: the shared system prompt, then the payload as compact JSON (no optional spaces:
    about 8% fewer tokens with SmolLM2's tokenizer) and the job line."""
    content = json.dumps(payload, ensure_ascii=False, separators=(",", ":")) + "\n\n" + job
    return Prompt(messages=(Message("system", SENTINEL_SYSTEM), Message("user", content)), **options)


@dataclass(frozen=True)
class SentinelConfig:
    enabled: bool = True
    """Master switch of both lanes."""
    consistency_enabled: bool = True
    """Audit each candidate (off in `pos_no_consistency`: every candidate is committed as validated)."""
    progress_enabled: bool = True
    """Label each transition; without labels health never becomes ready."""
    local_audit_every_steps: int = 1
    global_audit_every_steps: int = 8
    """G: every G-th update is audited against the whole trajectory (LOCA: 32; 0 disables)."""
    recent_transition_count: int = 4
    """Raw-trajectory entries in a local audit's evidence."""
    audit_observation_max_chars: int = 6000
    """Longer observations keep their first and last half of this many characters."""
    diagnostic_progress_threshold: float = 0.3
    """ε: a diagnostic transition is progress when the confidence distance is strictly above this."""
    consistency_max_tokens: int = 512
    progress_max_tokens: int = 512

    def __post_init__(self) -> None:
        counts = (self.local_audit_every_steps, self.global_audit_every_steps)
        if min(counts) < 0 or self.recent_transition_count < 1 or self.audit_observation_max_chars < 2:
            raise ValueError(f"bad sentinel window settings: {self}")
        if not 0.0 <= self.diagnostic_progress_threshold <= 1.0:
            raise ValueError(
                f"diagnostic_progress_threshold must be in [0, 1], got {self.diagnostic_progress_threshold}"
            )


def compact(text: str, max_chars: int) -> str:
    """Keep head and tail halves of an over-long observation (§7.2)."""
    if len(text) <= max_chars:
        return text
    half = max_chars // 2
    return text[:half] + TRUNCATION + text[-half:]


def audit_window(
    raw: Sequence[Mapping[str, Any]], ordinal: int, config: SentinelConfig
) -> tuple[str, list[dict]] | None:
    """Audit mode and compacted evidence for the `ordinal`-th update (0 = init; §7.1); None = no audit."""
    g, local = config.global_audit_every_steps, config.local_audit_every_steps
    if ordinal == 0:
        mode, entries = "local", raw
    elif g > 0 and ordinal % g == 0:
        mode, entries = "global", raw
    elif local > 0 and ordinal % local == 0:
        mode, entries = "local", raw[-config.recent_transition_count :]
    else:
        return None
    size = config.audit_observation_max_chars
    evidence = [
        {"step": e["step"], "action": e.get("action"), "observation": compact(e["observation"], size)}
        for e in entries
    ]
    return mode, evidence


class AuditIssue(BaseModel):
    model_config = ConfigDict(extra="forbid")
    targets: list[str]
    issue_type: Literal["internal", "external"]
    problem: str
    evidence_step: int
    evidence_quote: str
    evidence: str
    suggestion: str


class AuditReply(BaseModel):
    """The schema the auditor is asked for: at most one issue (§6.5), so a constrained decoder stops there."""

    model_config = ConfigDict(extra="forbid")
    issues: list[AuditIssue] = Field(max_length=1)


class _AuditPayload(BaseModel):
    """What is validated: only the first issue must be well formed (the rest are ignored, §7.4)."""

    issues: list[dict[str, Any]]


def _first_issue_problem(reply: _AuditPayload) -> str | None:
    if not reply.issues:
        return None
    try:
        AuditIssue.model_validate(reply.issues[0])
    except ValidationError as error:
        return f"the first issue is malformed: {error}"
    return None


def _squash(text: str) -> str:
    return re.sub(r"\s+", " ", text.casefold()).strip()


def grounding_problem(
    issue: AuditIssue, evidence: Sequence[Mapping[str, Any]], known: set[str]
) -> str | None:
    """Why an issue is not grounded (None if it is): unknown targets, a step outside the window, or a quote
    not found verbatim (up to case and spacing) in the cited step (§7.4)."""
    if not issue.targets or any(t not in known for t in issue.targets):
        return f"unknown targets {issue.targets}"
    cited = [e for e in evidence if e["step"] == issue.evidence_step]
    if not cited:
        return f"step {issue.evidence_step} is not in the evidence window"
    quote = _squash(issue.evidence_quote)
    text = _squash(
        json.dumps({"action": cited[0]["action"], "observation": cited[0]["observation"]}, ensure_ascii=False)
    )
    if not quote or quote not in text:
        return "the quote is not in the cited step"
    return None


@dataclass(frozen=True)
class AuditVerdict:
    failed: bool
    """No usable reply after one JSON repair."""
    issue: dict[str, Any] | None = None
    """The grounded issue, if any."""
    dropped: str | None = None
    """Why the first issue was discarded as ungrounded."""


def audit(model: Model, config: SentinelConfig, payload: Mapping[str, Any], known: set[str]) -> AuditVerdict:
    """One audit call (role `sentinel_consistency`) and the grounding filter."""
    prompt = sentinel_prompt(
        payload, AUDIT_JOB, schema=schema_of(AuditReply), max_tokens=config.consistency_max_tokens
    )
    reply = ask(
        model, prompt, _AuditPayload, role="sentinel_consistency", max_repairs=1, check=_first_issue_problem
    )
    if isinstance(reply, StructuredFailure):
        return AuditVerdict(failed=True)
    if not reply.issues:
        return AuditVerdict(failed=False)
    issue = AuditIssue.model_validate(reply.issues[0])
    problem = grounding_problem(issue, payload["raw_trajectory"], known)
    return AuditVerdict(failed=False, dropped=problem) if problem else AuditVerdict(False, issue.model_dump())


class ProgressReply(BaseModel):
    model_config = ConfigDict(extra="forbid")
    progress: Literal[0, 1]
    score: float = Field(ge=0)
    affected_record_ids: list[str]
    reason: str

    @field_validator("progress", mode="before")
    @classmethod
    def _integer(cls, value: Any) -> Any:
        if isinstance(value, bool):
            raise ValueError("progress must be the integer 0 or 1, not a boolean")  # noqa: TRY004 (pydantic needs ValueError)
        return value


@dataclass(frozen=True)
class ProgressLabel:
    progress: int | None
    """None = unverified (excluded from the health window)."""
    scoring_method: str
    score: float | None = None
    affected_record_ids: list[str] = field(default_factory=list)
    reason: str = ""


def judge_progress(
    model: Model, config: SentinelConfig, payload: Mapping[str, Any], changed: set[str]
) -> ProgressLabel:
    """Execution-mode label from one judge call (role `sentinel_progress`); invalid twice → unverified."""

    def check(reply: ProgressReply) -> str | None:
        unknown = [i for i in reply.affected_record_ids if i not in changed]
        return f"affected_record_ids {unknown} were not changed by this step" if unknown else None

    prompt = sentinel_prompt(payload, JUDGE_JOB, max_tokens=config.progress_max_tokens)
    reply = ask(model, prompt, ProgressReply, role="sentinel_progress", max_repairs=1, check=check)
    if isinstance(reply, StructuredFailure):
        return ProgressLabel(None, "llm_judge", reason=f"unverified: {reply.problem}"[:500])
    return ProgressLabel(reply.progress, "llm_judge", reply.score, reply.affected_record_ids, reply.reason)


def confidence_distance(
    before: Mapping[str, Mapping], after: Mapping[str, Mapping]
) -> tuple[float, list[str]]:
    """½ Σ |Δ confidence| over states and relations inferred on either side (rounded to 12 places), and the
    ids that moved (§8.2). Observed-only records are ignored; an absent or observed side counts 0."""

    def conf(record: Mapping[str, Any] | None) -> float:
        return float(record["probability"]) if record and record.get("source_type") == "inferred" else 0.0

    total, moved = 0.0, []
    for kind in ("states", "relations"):
        for rid in sorted(before[kind].keys() | after[kind].keys()):
            b, a = before[kind].get(rid), after[kind].get(rid)
            if not any(r and r.get("source_type") == "inferred" for r in (a, b)):
                continue
            delta = abs(conf(a) - conf(b))
            if delta:
                total += delta
                moved.append(rid)
    return round(total / 2, 12), moved


def diagnostic_progress(
    before: Mapping[str, Mapping], after: Mapping[str, Mapping], *, threshold: float
) -> ProgressLabel:
    """u = 1 iff the confidence distance is strictly above `threshold`."""
    if not 0.0 <= threshold <= 1.0:
        raise ValueError(f"diagnostic progress threshold must be in [0, 1], got {threshold}")
    d, moved = confidence_distance(before, after)
    return ProgressLabel(
        int(d > threshold), "confidence_distance", d, moved, f"half-L1 confidence distance {d}"
    )
