"""The Belief Sentinel (SPEC-POS §7, §8): a consistency lane that audits each proposed belief change against
the raw evidence, and a progress lane that labels each transition.

The audit reply is filtered mechanically (grounding): an issue counts only if it names records or gaps that
exist and quotes its cited step verbatim. Diagnostic progress is a pure distance, no LLM call. Both lanes send
the system prompt they share with the belief update (`pos_bench.pos.desk`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from pos_bench.pos.desk import AUDIT_JOB, PROGRESS_JOB, Mode, desk_prompt
from pos_bench.protocols import Model
from pos_bench.structured import StructuredFailure, ask

TRUNCATION = "\n[... observation truncated ...]\n"


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


def audit(
    model: Model, config: SentinelConfig, payload: Mapping[str, Any], known: set[str], *, mode: Mode
) -> AuditVerdict:
    """One audit call (role `sentinel_consistency`, the desk's shared prompt) and the grounding filter."""
    prompt = desk_prompt(
        payload,
        AUDIT_JOB,
        mode=mode,
        schema=AuditReply.model_json_schema(),
        max_tokens=config.consistency_max_tokens,
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
    model: Model, config: SentinelConfig, payload: Mapping[str, Any], changed: set[str], *, mode: Mode
) -> ProgressLabel:
    """Execution-mode label from one judge call (role `sentinel_progress`, the desk's shared prompt); invalid
    twice → unverified."""

    def check(reply: ProgressReply) -> str | None:
        unknown = [i for i in reply.affected_record_ids if i not in changed]
        return f"affected_record_ids {unknown} were not changed by this step" if unknown else None

    prompt = desk_prompt(payload, PROGRESS_JOB, mode=mode, max_tokens=config.progress_max_tokens)
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
