"""The qualifiers a ClinDiag submission may add to the reference name and still be accepted (issue 40).

The rules judge is default-deny: a submitted word must be a reference word (after folding and synonym rewrites)
or a qualifier listed here; any other word leaves the verdict undecided. Each entry carries its category so a
reader can see why a word is admitted, and an addition has to say which kind of qualifier it is."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class Category(Enum):
    LATERALITY = "laterality"
    ACUITY = "acuity"
    SEVERITY = "severity"
    STAGE = "stage, type or grade"
    SITE = "anatomical site"
    ORGANISM = "causal organism"
    CAUSE_LINK = "'secondary to' / 'due to' before a named cause"
    FORM = "generic head or grammatical filler"


@dataclass(frozen=True)
class Qualifier:
    word: str
    """Lower-case folded word, as `judge.canonical` writes it."""
    category: Category


def _words(category: Category, text: str) -> tuple[Qualifier, ...]:
    return tuple(Qualifier(w, category) for w in text.split())


QUALIFIERS: tuple[Qualifier, ...] = (
    *_words(Category.LATERALITY, "left right bilateral unilateral"),
    *_words(Category.ACUITY, "acute subacute chronic hyperacute recurrent relapsing"),
    *_words(Category.SEVERITY, "mild moderate severe"),
    *_words(Category.STAGE, "type stage grade class 1 2 3 4 5 a b c"),
    *_words(Category.SITE, "upper lower proximal distal anterior posterior medial lateral"),
    *_words(Category.FORM, "disease syndrome disorder condition the a an of in"),
)
"""The explicit allowlist. CAUSE_LINK and ORGANISM have no entries yet: a named cause is still refused (see
docs/clindiag-judges.md, Limits)."""

ALLOWED = frozenset(q.word for q in QUALIFIERS)


def category_of(word: str) -> Category | None:
    return next((q.category for q in QUALIFIERS if q.word == word), None)
