"""Gap wording, identity and the Active Gap (SPEC-POS §3, §4).

The belief model rewrites gap texts at every update; these functions decide when two texts name the same
gap, keep the old wording when they do, give gaps stable ids across commits and pick the Active Gap.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel, ConfigDict

GapType = Literal["epistemic", "achievement"]
GAP_TYPES: tuple[GapType, GapType] = ("epistemic", "achievement")

STOPWORDS = frozenset(
    {"a", "an", "and", "are", "be", "gap", "gap_type", "is", "of", "or", "reason", "target", "the", "to"}
)
"""Words that carry no content when comparing gap targets (§3.2)."""

_WORD = re.compile(r"\w+")


class Gap(BaseModel):
    """One open gap: what must be learned (epistemic) or changed (achievement), and why."""

    model_config = ConfigDict(extra="forbid")
    target: str
    reason: str


class GapPointer(BaseModel):
    """Points at one gap of the given type by its target text."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    gap_type: GapType
    target: str


def norm(text: str) -> str:
    """NFKC, casefold, whitespace runs collapsed to one space, stripped."""
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())  # str.split: any Unicode space


def tokens(text: str) -> frozenset[str]:
    """Content word tokens of `norm(text)`."""
    return frozenset(_WORD.findall(norm(text))) - STOPWORDS


def match_score(left: str, right: str) -> float:
    """0.7 · overlap coefficient + 0.3 · Jaccard of content tokens (unrounded, §3.3)."""
    tl, tr = tokens(left), tokens(right)
    if not tl or not tr:
        return 0.0
    common = len(tl & tr)
    return 0.7 * common / min(len(tl), len(tr)) + 0.3 * common / len(tl | tr)


def equivalent(left: str, right: str, *, threshold: float = 0.8, min_tokens: int = 2) -> bool:
    """Whether two gap targets name the same gap: equal after `norm`, or similar enough with ≥ 2 content
    tokens on both sides."""
    if not 0.0 <= threshold <= 1.0:
        raise ValueError(f"gap-match threshold must be in [0, 1], got {threshold}")
    if norm(left) == norm(right):
        return True
    if min(len(tokens(left)), len(tokens(right))) < min_tokens:
        return False
    return match_score(left, right) >= threshold


def _unique_match(target: str, pool: Sequence[str], claimed: set[int]) -> int | None:
    hits = [i for i, other in enumerate(pool) if i not in claimed and equivalent(target, other)]
    return hits[0] if len(hits) == 1 else None


def stabilise(proposed: Sequence[Gap], previous: Sequence[Gap]) -> list[Gap]:
    """Keep the previous wording of every proposed gap that matches exactly one unclaimed old gap (§3.5);
    the proposed reason is kept."""
    claimed: set[int] = set()
    old_targets = [g.target for g in previous]
    result = []
    for gap in proposed:
        hit = _unique_match(gap.target, old_targets, claimed)
        if hit is None:
            result.append(gap)
        else:
            claimed.add(hit)
            result.append(Gap(target=old_targets[hit], reason=gap.reason))
    return result


@dataclass
class GapIds:
    """Stable gap ids (`e:N`, `a:N`) for one episode, reconciled after every commit (§3.4)."""

    counters: dict[str, int] = field(default_factory=lambda: {"epistemic": 0, "achievement": 0})
    previous: dict[str, list[tuple[str, str]]] = field(
        default_factory=lambda: {"epistemic": [], "achievement": []}
    )
    """Per type: (target, id) of the last commit, in order."""

    def reconcile(self, gap_type: GapType, gaps: Sequence[Gap]) -> list[str]:
        """Ids for `gaps` (same order): an old id when exactly one old gap matches, else a fresh one."""
        old = self.previous[gap_type]
        claimed: set[int] = set()
        ids = []
        for gap in gaps:
            hit = _unique_match(gap.target, [t for t, _ in old], claimed)
            if hit is None:
                self.counters[gap_type] += 1
                ids.append(f"{gap_type[0]}:{self.counters[gap_type]}")
            else:
                claimed.add(hit)
                ids.append(old[hit][1])
        self.previous[gap_type] = [(g.target, i) for g, i in zip(gaps, ids)]
        return ids


def resolve(pointer: GapPointer | None, gaps: Sequence[Gap]) -> Gap | None:
    """The single gap of `gaps` equivalent to the pointer's target; None if zero or several match."""
    if pointer is None:
        return None
    hits = [g for g in gaps if equivalent(pointer.target, g.target)]
    return hits[0] if len(hits) == 1 else None


def select_active_gap(
    previous: GapPointer | None,
    proposed: GapPointer | None,
    gaps: dict[str, Sequence[Gap]],
) -> GapPointer | None:
    """The Active Gap of a candidate (§4.1): the previous one while it still resolves (sticky), else a valid
    proposal (stored with the matched gap's exact text), else the first epistemic, else the first
    achievement gap."""
    if previous is not None and resolve(previous, gaps[previous.gap_type]) is not None:
        return previous
    if proposed is not None:
        hit = resolve(proposed, gaps[proposed.gap_type])
        if hit is not None:
            return GapPointer(gap_type=proposed.gap_type, target=hit.target)
    for gap_type in GAP_TYPES:
        if gaps[gap_type]:
            return GapPointer(gap_type=gap_type, target=gaps[gap_type][0].target)
    return None


def same_pointer(left: GapPointer | None, right: GapPointer | None) -> bool:
    """Pointer equality for Active-Gap change bookkeeping (§4.3): both null, or same type and equivalent."""
    if left is None or right is None:
        return left is None and right is None
    return left.gap_type == right.gap_type and equivalent(left.target, right.target)
