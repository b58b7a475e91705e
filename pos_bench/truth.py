"""Belief accuracy against the environment's own ground truth (issue 28): the truth an environment reports
per step (`WorldTruth`), the claims a method's memory makes (`Claim`), the one rule that reads a claim as
truth facts, and the measures (pure functions) per step and per episode.

The rule that reads a claim (`read`), in full:
1. Names are compared normalised: lower case, single spaces, no leading article, a word glued to its
   number split ("mug1" → "mug 1"), agent words ("i", "me", "you", "player", "robot") → "agent".
2. The claim's subject must name an entity of the world; otherwise no fact is read, and the subject counts
   as invented when it has the shape of the world's entity names (`WorldTruth.entity_shape`). A free-text
   claim (no subject: a verified fact, a summary line) takes the first world entity its text names.
3. Each `Term` of the benchmark's vocabulary whose phrase occurs in the claim's text as whole words gives
   one fact; only the first matching term of an attribute counts (terms are ordered, negated phrases first).
4. A term without a fixed value takes the claim's object, else the first other world entity named in the
   text; a term whose value is `LITERAL` takes the word or number written right after its phrase (past
   "is", "=", ":"); without one it gives no fact.
A read fact is true when the truth holds it, false when the truth holds the same subject and attribute with
other values only, and unscored when the truth says nothing about that subject and attribute.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

AGENT = "agent"
"""The subject of facts about the agent itself (where it is, what it holds)."""
_AGENT_WORDS = frozenset({"i", "me", "you", "player", "agent", "self", "robot"})
LITERAL = "<literal>"
"""A `Term.value` meaning: the value is written in the claim right after the phrase (`stock: 4`)."""
_AFTER = r"\s*(?:is|are|was|=|:|equals|of)?\s*([^\s,;]+)"
_ARTICLE = re.compile(r"^(the|a|an)\s+")
_GLUED = re.compile(r"([a-z]+)(\d+)")


@dataclass(frozen=True, order=True)
class Fact:
    """One fact of the world: `subject`'s `attribute` has `value` (booleans are "true" / "false")."""

    subject: str
    attribute: str
    value: str


@dataclass(frozen=True)
class Term:
    """A word rule of a benchmark's vocabulary: a claim whose text holds one of `phrases` states
    `attribute` = `value`; `value=None` takes the entity the claim points at (a location, a held object)."""

    attribute: str
    value: str | None
    phrases: tuple[str, ...]


@dataclass(frozen=True)
class WorldTruth:
    """What the environment knows at one step; the same whoever plays."""

    facts: frozenset[Fact]
    entities: frozenset[str]
    """Every entity name of the world, normalised (`name`)."""
    goal: frozenset[Fact] = frozenset()
    """The facts the goal needs (what recall is measured over); may be empty."""
    terms: tuple[Term, ...] = ()
    """The benchmark's vocabulary for reading claims (rule 3 above)."""
    entity_shape: str = ""
    """A regular expression for the world's entity names: an unknown name that fits it is invented; empty:
    every unknown subject counts as invented."""

    def values(self, subject: str, attribute: str) -> frozenset[str]:
        return frozenset(f.value for f in self.facts if f.subject == subject and f.attribute == attribute)


@dataclass(frozen=True)
class Claim:
    """One statement a method's memory holds about the world, as the method wrote it."""

    subject: str
    """The entity the claim is about, as the memory names it; empty for a free-text claim (rule 2)."""
    text: str = ""
    """The condition or relation (a state description, a record line); empty: the entity exists."""
    object: str = ""
    """The other end of a relation, when the memory names one."""
    probability: float = 1.0
    source: str = ""
    """How the memory came by it (PoS: observed / inferred; the passport: a step), when it says."""
    ref: str = ""
    """The record in the method's memory (a state or relation id, a record key)."""
    confidence: str = ""
    """A categorical confidence, for memories that give one instead of a probability (the passport)."""


Verdict = Literal["true", "false", "unscored"]


@dataclass(frozen=True)
class Judged:
    claim: Claim
    fact: Fact
    verdict: Verdict


def name(text: str) -> str:
    """Rule 1: the normalised form of an entity name."""
    text = _ARTICLE.sub("", " ".join(text.lower().split()))
    glued = _GLUED.fullmatch(text)
    text = f"{glued[1]} {glued[2]}" if glued else text
    return AGENT if text in _AGENT_WORDS else text


def _occurs(phrase: str, text: str) -> int:
    """Where `phrase` first occurs in `text` as whole words, or -1."""
    found = re.search(rf"(?<![a-z0-9]){re.escape(phrase)}(?![a-z0-9])", text)
    return found.start() if found else -1


def _first_named(text: str, truth: WorldTruth, besides: str = "") -> str | None:
    """The world entity named first in `text`; of two names starting at the same place, the longer."""
    hits = [(_occurs(e, text), -len(e), e) for e in truth.entities if e != besides]
    hits = [h for h in hits if h[0] >= 0]
    return min(hits)[2] if hits else None


def _pointed(claim: Claim, subject: str, text: str, truth: WorldTruth) -> str | None:
    if claim.object:
        other = name(claim.object)
        return other if other in truth.entities else None
    return _first_named(text, truth, besides=subject)


def value_text(value: object) -> str:
    """How a scalar value is written in a fact: lower case, whole floats without ".0"."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return " ".join(str(value).lower().split()).rstrip(".")


def _literal(term: Term, plain: str) -> str | None:
    for phrase in term.phrases:
        found = re.search(rf"(?<![a-z0-9]){re.escape(phrase)}(?![a-z0-9]){_AFTER}", plain)
        if found:
            return value_text(found.group(1).strip("'\""))
    return None


def read(claim: Claim, truth: WorldTruth) -> tuple[Fact, ...]:
    """The facts `claim` states, by the rule of this module's docstring (empty when it states none)."""
    text = " ".join(f"{claim.text} {claim.object}".lower().split())
    subject = name(claim.subject) if claim.subject.strip() else _first_named(text, truth)
    if subject not in truth.entities:
        return ()
    facts, seen = [], set()
    for term in truth.terms:
        if term.attribute in seen or not any(_occurs(p, text) >= 0 for p in term.phrases):
            continue
        if term.value == LITERAL:
            value = _literal(term, text)
        elif term.value is None:
            value = _pointed(claim, subject, text, truth)
        else:
            value = term.value
        if value is None:
            continue
        seen.add(term.attribute)
        facts.append(Fact(subject, term.attribute, value))
    return tuple(facts)


def judge(claims: Iterable[Claim], truth: WorldTruth) -> tuple[Judged, ...]:
    """Every fact the claims state, each with its verdict against `truth`."""
    out = []
    for claim in claims:
        for fact in read(claim, truth):
            known = truth.values(fact.subject, fact.attribute)
            verdict: Verdict = "unscored" if not known else "true" if fact.value in known else "false"
            out.append(Judged(claim, fact, verdict))
    return tuple(out)


def invented(claims: Iterable[Claim], truth: WorldTruth) -> frozenset[str]:
    """Rule 2: the names the claims give as entities (subjects and objects) that the world does not hold."""
    shape = re.compile(truth.entity_shape) if truth.entity_shape else None
    names = {name(n) for c in claims for n in (c.subject, c.object) if n.strip()}
    return frozenset(
        n for n in names if n not in truth.entities and n != AGENT and (shape is None or shape.fullmatch(n))
    )


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
