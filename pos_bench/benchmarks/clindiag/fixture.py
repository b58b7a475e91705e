"""A labelled set of submissions for measuring a ClinDiag judge, generated from the cases themselves.

Per case, from its reference final diagnosis (and, for abbreviations, the record that defines them):
- accepted forms: `exact`; `prefixed` ("Diagnosis: …"); `rewritten` equivalents (inverted word order,
  abbreviation or expansion defined in the case text, accents stripped, plural/singular, hyphens and
  possessives, British/American spelling);
- rejected forms: `negated` ("Not …"), `excluded` ("… ruled out"), `antonym` (a qualifier swapped for its
  opposite), `other_case` (another case's diagnosis), `differential` (an entry of the case's own reference
  differential).

Deterministic: the same cases give the same items in the same order. The rewrites are written here, apart from
the judge's own tables, so the measurement does not grade the judge against itself.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

ACCEPTED_FORMS = ("exact", "prefixed", "rewritten")
REJECTED_FORMS = ("negated", "excluded", "antonym", "other_case", "differential")
FORMS = ACCEPTED_FORMS + REJECTED_FORMS

PREFIXES = ("Diagnosis: {}", "Final diagnosis: {}.", "The most likely diagnosis is {}.")
NEGATIONS = ("Not {}", "No evidence of {}", "Negative for {}")
EXCLUSIONS = ("{} ruled out", "{} excluded", "{} unlikely")
OPPOSITES = (
    ("congenital", "acquired"),
    ("acquired", "congenital"),
    ("acute", "chronic"),
    ("chronic", "acute"),
    ("primary", "secondary"),
    ("secondary", "primary"),
    ("benign", "malignant"),
    ("malignant", "benign"),
    ("left", "right"),
    ("right", "left"),
    ("type 1", "type 2"),
    ("type 2", "type 1"),
    ("type I", "type II"),
    ("juvenile", "adult"),
    ("dominant", "recessive"),
    ("recessive", "dominant"),
)
SPELLING_PAIRS = (
    ("haem", "hem"),
    ("anaem", "anem"),
    ("leukaem", "leukem"),
    ("oedema", "edema"),
    ("oesophag", "esophag"),
    ("coeliac", "celiac"),
    ("paediatric", "pediatric"),
    ("ischaem", "ischem"),
    ("tumour", "tumor"),
)
"""British ↔ American fragments, applied in whichever direction the reference allows."""
COUNTABLE = ("oma", "cyst", "tumor", "tumour", "nodule", "lesion", "polyp", "ulcer", "malformation", "defect")
LINKS = re.compile(
    r"\b(?:with|due|to|of|secondary|associated|caused|by|in|and|or|complicated|following)\b", re.IGNORECASE
)
UNSPECIFIED = re.compile(r"^\s*(?:not specified|none|n/?a|unknown)\.?\s*$", re.IGNORECASE)


@dataclass(frozen=True)
class CaseText:
    """What the generator reads from a case: its id, reference diagnosis, reference differential, record."""

    case: str
    diagnosis: str
    differential: str
    record: str


@dataclass(frozen=True)
class Item:
    case: str
    form: str
    variant: str
    """Which rewrite or template produced `submitted`."""
    submitted: str
    accept: bool
    """The label: True when a correct judge accepts `submitted` for this case."""


def ascii_fold(text: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))


def main_name(diagnosis: str) -> str:
    return re.sub(r"\s*\([^()]*\)", "", diagnosis).strip().rstrip(".").strip()


def _abbreviation(case: CaseText) -> str | None:
    """An abbreviation the case text defines for its diagnosis: "<name> (ABBR)" in the reference or record."""
    name = main_name(case.diagnosis)
    pattern = re.compile(re.escape(name) + r"\s*\(\s*([A-Z][A-Za-z0-9-]{1,9})\s*\)", re.IGNORECASE)
    for text in (case.diagnosis, case.record):
        found = pattern.search(text)
        if found and sum(c.isupper() for c in found.group(1)) >= 2:
            return found.group(1)
    return None


def rewrites(case: CaseText) -> Iterator[tuple[str, str]]:
    """(variant, text) equivalents of the reference, each only where it applies."""
    name = main_name(case.diagnosis)
    words = name.split()
    if 2 <= len(words) <= 5 and not LINKS.search(name):
        yield "inverted", f"{words[-1].capitalize()}, {' '.join(words[:-1]).lower()}"
    abbreviation = _abbreviation(case)
    if abbreviation:
        yield "abbreviation", abbreviation
    if name != case.diagnosis.strip().rstrip("."):
        yield "expansion", name
    if ascii_fold(name) != name:
        yield "accents_stripped", ascii_fold(name)
    last = words[-1] if words else ""
    plural = last.lower().endswith("s") and not last.lower().endswith(("ss", "is", "us", "ous"))
    if plural and len(last) > 4 and not last.isupper():
        single = last[:-3] + "y" if last.lower().endswith("ies") else last[:-1]
        yield "singular", " ".join([*words[:-1], single])
    elif last.lower().endswith(COUNTABLE):
        yield "plural", f"{name}s"
    if "-" in name:
        yield "hyphens_as_spaces", name.replace("-", " ")
    if re.search(r"['’]s\b", name):
        yield "no_possessive", re.sub(r"['’]s\b", "", name)
    for british, american in SPELLING_PAIRS:
        if british in name.lower():
            yield "american_spelling", re.sub(british, american, name, flags=re.IGNORECASE)
            break
        if re.search(rf"\b{american}", name, re.IGNORECASE):
            yield "british_spelling", re.sub(rf"\b{american}", british, name, flags=re.IGNORECASE)
            break


def _opposite(name: str) -> str | None:
    for word, opposite in OPPOSITES:
        pattern = re.compile(rf"\b{re.escape(word)}\b", re.IGNORECASE)
        if pattern.search(name):
            return pattern.sub(opposite, name, count=1)
    return None


def _entries(differential: str) -> list[str]:
    parts = re.split(r"[;\n]|,(?![^()]*\))", differential)
    return [p.strip().strip(".").strip() for p in parts if p.strip() and not UNSPECIFIED.match(p)]


def items_for(case: CaseText, others: Sequence[CaseText], *, per_form: int = 3) -> Iterator[Item]:
    """Every labelled item of one case; `others` are the cases whose diagnoses serve as wrong answers."""
    ref = case.diagnosis.strip()
    name = main_name(ref)

    def item(form: str, variant: str, text: str, accept: bool) -> Item:
        return Item(case.case, form, variant, text, accept)

    yield item("exact", "reference", ref, True)
    for template in PREFIXES:
        yield item("prefixed", template.split(" ")[0].lower(), template.format(ref), True)
    for variant, text in rewrites(case):
        yield item("rewritten", variant, text, True)
    for template in NEGATIONS:
        yield item("negated", template.format("").strip().lower(), template.format(name), False)
    for template in EXCLUSIONS:
        yield item("excluded", template.format("").strip().lower(), template.format(name), False)
    opposite = _opposite(name)
    if opposite:
        yield item("antonym", "qualifier_swapped", opposite, False)
    own = ref.lower()
    wrong = [o.diagnosis.strip() for o in others if o.diagnosis.strip().lower() != own]
    for text in wrong[:per_form]:
        yield item("other_case", "another_reference", text, False)
    entries = [e for e in _entries(case.differential) if own not in e.lower() and e.lower() not in own]
    for text in entries[:per_form]:
        yield item("differential", "own_differential_entry", text, False)


def build(cases: Sequence[CaseText], *, per_form: int = 3) -> list[Item]:
    """The fixture over `cases` (in their given order); wrong answers come from cases a fixed stride away."""
    n = len(cases)
    stride = max(1, n // 7)
    items: list[Item] = []
    for index, case in enumerate(cases):
        others = [cases[(index + stride * k) % n] for k in range(1, per_form + 3)] if n > 1 else []
        items.extend(items_for(case, others, per_form=per_form))
    return items
