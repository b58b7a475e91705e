"""Belief accuracy against the environment's own ground truth (issue 28): the truth an environment reports
per step (`WorldTruth`), the claims a method's memory makes (`Claim`), the one rule that reads a claim as
truth facts (the measures are in `pos_bench.truth.measures`).

The rule that reads a claim (`read`), in full:
1. Names are compared normalised: lower case, single spaces, no leading article, a word glued to its
   number split ("mug1" → "mug 1"), agent words ("i", "me", "you", "player", "robot") → "agent".
2. A name the claim gives as an entity (its subject or its object) that the world does not hold is invented
   when it has the shape of the world's entity names (`WorldTruth.entity_shape`; empty: any name). A claim
   naming an invented entity states one fact, that the entity exists (`EXISTS`, the subject's name before
   the object's), and that fact is false: a claim about what is not there is not true, whatever else it says.
   A subject that is neither held by the world nor invented is a sentence written where a name belongs
   ("I am at sinkbasin 1 holding ladle 2"): its words are read with the claim's text as a free-text claim
   (rule 3), about the agent when its first word is an agent word.
3. A claim that gives only its subject (no text, no object) states that its subject exists: true for an
   entity the world holds. A free-text claim (no subject: a verified fact, a summary line) is about the
   first world entity its text names and never states existence alone.
4. Each `Term` of the benchmark's vocabulary whose phrase occurs in the claim's text as whole words gives
   one fact; only the first matching term of an attribute counts (terms are ordered, negated phrases first).
5. A term without a fixed value takes the claim's object, else the first other world entity named after the
   term's phrase, else the first other one named anywhere in the text; a term whose value is `LITERAL` takes
   the word or number written right after its phrase (past "is", "=", ":"); without one it gives no fact.
A read fact is true when the truth holds it, false when the truth holds the same subject and attribute with
other values only, and unscored when the truth says nothing about that subject and attribute; the truth
holds `EXISTS` = "true" for each of its entities and "false" for every other name.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

AGENT = "agent"
"""The subject of facts about the agent itself (where it is, what it holds)."""
_AGENT_WORDS = frozenset({"i", "me", "you", "player", "agent", "self", "robot"})
EXISTS = "exists"
"""The attribute of an existence fact (rules 2 and 3): "true" for the world's entities, "false" otherwise."""
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
        if attribute == EXISTS:
            return frozenset({"true" if subject in self.entities else "false"})
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


def _found(phrase: str, text: str) -> re.Match[str] | None:
    """The first occurrence of `phrase` in `text` as whole words."""
    return re.search(rf"(?<![a-z0-9]){re.escape(phrase)}(?![a-z0-9])", text)


def _occurs(phrase: str, text: str) -> int:
    """Where `phrase` first occurs in `text` as whole words, or -1."""
    found = _found(phrase, text)
    return found.start() if found else -1


def _first_named(text: str, truth: WorldTruth, besides: str = "") -> str | None:
    """The world entity named first in `text`; of two names starting at the same place, the longer."""
    hits = [(_occurs(e, text), -len(e), e) for e in truth.entities if e != besides]
    hits = [h for h in hits if h[0] >= 0]
    return min(hits)[2] if hits else None


def _pointed(claim: Claim, subject: str, text: str, after: int, truth: WorldTruth) -> str | None:
    """Rule 5: the entity a term points at; `after` is where the term's phrase ends in `text`."""
    if claim.object:
        other = name(claim.object)
        return other if other in truth.entities else None
    return _first_named(text[after:], truth, besides=subject) or _first_named(text, truth, besides=subject)


def _phrase_end(term: Term, text: str) -> int:
    """Where the term's earliest phrase in `text` ends (the term is known to occur)."""
    found = [m for p in term.phrases if (m := _found(p, text))]
    return min(found, key=lambda m: m.start()).end()


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


def _is_invented(entity: str, truth: WorldTruth) -> bool:
    """Rule 2: a normalised name the world lacks, of the world's shape (the agent is never invented)."""
    if entity in truth.entities or entity == AGENT:
        return False
    return not truth.entity_shape or re.fullmatch(truth.entity_shape, entity) is not None


def read(claim: Claim, truth: WorldTruth) -> tuple[Fact, ...]:
    """The facts `claim` states, by the rule of this module's docstring (empty when it states none)."""
    given = [name(n) for n in (claim.subject, claim.object) if n.strip()]
    fake = next((n for n in given if _is_invented(n, truth)), None)
    if fake is not None:
        return (Fact(fake, EXISTS, "true"),)
    text = " ".join(f"{claim.text} {claim.object}".lower().split())
    subject = name(claim.subject) if claim.subject.strip() else _first_named(text, truth)
    if claim.subject.strip() and subject not in truth.entities:  # a sentence for a name (rule 2)
        text = " ".join(f"{claim.subject} {text}".lower().split())
        subject = AGENT if text.split()[0] in _AGENT_WORDS else _first_named(text, truth)
    if subject not in truth.entities:
        return ()
    if claim.subject.strip() and not text:
        return (Fact(subject, EXISTS, "true"),)
    facts, seen = [], set()
    for term in truth.terms:
        if term.attribute in seen or not any(_occurs(p, text) >= 0 for p in term.phrases):
            continue
        if term.value == LITERAL:
            value = _literal(term, text)
        elif term.value is None:
            value = _pointed(claim, subject, text, _phrase_end(term, text), truth)
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
    names = {name(n) for c in claims for n in (c.subject, c.object) if n.strip()}
    return frozenset(n for n in names if _is_invented(n, truth))
