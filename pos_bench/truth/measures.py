"""The belief-accuracy measures (pure functions) per step and per episode, and the Sentinel's audit against the
truth; claims are read as facts by `pos_bench.truth.reading`."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from pos_bench.truth.reading import Claim, Fact, WorldTruth, invented, judge, read


@dataclass(frozen=True)
class StepAccuracy:
    """The measures of one step."""

    step: int
    true: int
    false: int
    unscored: int
    precision: float | None
    """true / (true + false) over the facts the claims state; None when none is scored."""
    recall: float | None
    """Goal facts the claims state truly / goal facts; None when the truth names no goal facts."""
    stale: tuple[Fact, ...]
    """Held now and false, though held and true at an earlier step and held ever since."""
    invented: tuple[str, ...]
    false_facts: tuple[Fact, ...] = ()


@dataclass(frozen=True)
class EpisodeAccuracy:
    steps: tuple[StepAccuracy, ...]
    precision: float | None
    """Pooled over the episode: all true / all scored facts."""
    recall: float | None
    """Mean of the per-step recalls that are defined."""
    stale_claims: int
    """Distinct stretches in which a held fact went stale."""
    stale_persistence: tuple[int, ...]
    """Steps each stretch lasted before the fact was dropped, became true again or the episode ended."""
    invented: tuple[str, ...]


@dataclass(frozen=True)
class Observed:
    """The input of one step: the truth after it and the claims the memory holds after it."""

    step: int
    truth: WorldTruth
    claims: tuple[Claim, ...]


def _ratio(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def step_accuracy(
    step: int, claims: Sequence[Claim], truth: WorldTruth, stale: Iterable[Fact] = ()
) -> StepAccuracy:
    """The measures of one step; `stale` comes from the episode's history (`episode_accuracy`)."""
    judged = judge(claims, truth)
    counts = {v: sum(1 for j in judged if j.verdict == v) for v in ("true", "false", "unscored")}
    stated = {j.fact for j in judged if j.verdict == "true"}
    return StepAccuracy(
        step=step,
        true=counts["true"],
        false=counts["false"],
        unscored=counts["unscored"],
        precision=_ratio(counts["true"], counts["true"] + counts["false"]),
        recall=_ratio(len(truth.goal & stated), len(truth.goal)),
        stale=tuple(sorted(stale)),
        invented=tuple(sorted(invented(claims, truth))),
        false_facts=tuple(sorted({j.fact for j in judged if j.verdict == "false"})),
    )


def episode_accuracy(steps: Sequence[Observed]) -> EpisodeAccuracy:
    """The measures of every step in order, and of the episode; staleness needs the whole history."""
    supported: set[Fact] = set()
    """Facts held at the previous step that were true at some step since they have been held."""
    running: dict[Fact, int] = {}
    """Stale facts of the previous step → how many steps they have been stale."""
    stretches: list[int] = []
    out = []
    for seen in steps:
        judged = judge(seen.claims, seen.truth)
        held = {j.fact for j in judged}
        true = {j.fact for j in judged if j.verdict == "true"}
        stale = {j.fact for j in judged if j.verdict == "false"} & supported
        stretches += [n for f, n in running.items() if f not in stale]
        running = {f: running.get(f, 0) + 1 for f in stale}
        supported = (supported & held) | true
        out.append(step_accuracy(seen.step, seen.claims, seen.truth, stale))
    stretches += running.values()
    scored = sum(s.true + s.false for s in out)
    recalls = [s.recall for s in out if s.recall is not None]
    return EpisodeAccuracy(
        steps=tuple(out),
        precision=_ratio(sum(s.true for s in out), scored),
        recall=sum(recalls) / len(recalls) if recalls else None,
        stale_claims=len(stretches),
        stale_persistence=tuple(stretches),
        invented=tuple(sorted({n for s in out for n in s.invented})),
    )


AuditStatus = Literal["validated", "repaired", "rejected"]


@dataclass(frozen=True)
class AuditedUpdate:
    """One audited memory update (PoS's Sentinel, SPEC-POS §7.5) with the truth after its step."""

    step: int
    status: AuditStatus
    before: tuple[Claim, ...]
    """The committed memory the update started from."""
    candidate: tuple[Claim, ...]
    """What the update proposed."""
    committed: tuple[Claim, ...]
    """What was kept: the candidate, its repair, or `before` again."""
    truth: WorldTruth


@dataclass(frozen=True)
class UpdateVerdict:
    step: int
    status: AuditStatus
    planted: tuple[Fact, ...]
    """False facts the candidate added to what the memory held before (empty: a true update)."""
    committed: tuple[Fact, ...]
    """Those of `planted` that the committed memory still states."""

    @property
    def false(self) -> bool:
        return bool(self.planted)

    @property
    def flagged(self) -> bool:
        return self.status != "validated"


@dataclass(frozen=True)
class AuditAccuracy:
    """The Sentinel's decisions against the truth: flagging (repair or rejection) as a detector of false
    updates."""

    updates: tuple[UpdateVerdict, ...]
    false_updates: int
    flagged: int
    flagged_false: int
    committed_false: int
    """False updates whose false facts entered the committed memory anyway."""
    precision: float | None
    """flagged_false / flagged."""
    recall: float | None
    """flagged_false / false_updates."""


def _false_facts(claims: Iterable[Claim], truth: WorldTruth) -> set[Fact]:
    return {j.fact for j in judge(claims, truth) if j.verdict == "false"}


def update_verdict(update: AuditedUpdate) -> UpdateVerdict:
    """Which false facts `update` proposed that the memory did not already state, and which were kept."""
    already = {f for c in update.before for f in read(c, update.truth)}
    planted = _false_facts(update.candidate, update.truth) - already
    kept = planted & {f for c in update.committed for f in read(c, update.truth)}
    return UpdateVerdict(update.step, update.status, tuple(sorted(planted)), tuple(sorted(kept)))


def audit_accuracy(updates: Sequence[AuditedUpdate]) -> AuditAccuracy:
    verdicts = tuple(update_verdict(u) for u in updates)
    false = sum(v.false for v in verdicts)
    flagged = sum(v.flagged for v in verdicts)
    hits = sum(v.false and v.flagged for v in verdicts)
    return AuditAccuracy(
        updates=verdicts,
        false_updates=false,
        flagged=flagged,
        flagged_false=hits,
        committed_false=sum(bool(v.committed) for v in verdicts),
        precision=_ratio(hits, flagged),
        recall=_ratio(hits, false),
    )
