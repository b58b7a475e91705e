"""Belief accuracy against the environment's own ground truth: the truth an environment reports per step
(`WorldTruth`), the claims a method's memory makes (`Claim`), the one rule that reads a claim as truth facts
(`reading`), and the measures per step and per episode (`measures`)."""

from pos_bench.truth.measures import (
    AuditAccuracy,
    AuditedUpdate,
    EpisodeAccuracy,
    Observed,
    StepAccuracy,
    UpdateVerdict,
    audit_accuracy,
    episode_accuracy,
    step_accuracy,
    update_verdict,
)
from pos_bench.truth.reading import (
    AGENT,
    EXISTS,
    LITERAL,
    Claim,
    Fact,
    Judged,
    Term,
    WorldTruth,
    invented,
    judge,
    name,
    read,
    value_text,
)

__all__ = [
    "AGENT",
    "EXISTS",
    "LITERAL",
    "AuditAccuracy",
    "AuditedUpdate",
    "Claim",
    "EpisodeAccuracy",
    "Fact",
    "Judged",
    "Observed",
    "StepAccuracy",
    "Term",
    "UpdateVerdict",
    "WorldTruth",
    "audit_accuracy",
    "episode_accuracy",
    "invented",
    "judge",
    "name",
    "read",
    "step_accuracy",
    "update_verdict",
    "value_text",
]
