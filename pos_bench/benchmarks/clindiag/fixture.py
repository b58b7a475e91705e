"""A labelled set of submissions for measuring a ClinDiag judge, generated from the cases themselves.

Per case, from its reference final diagnosis (and, for abbreviations, the record that defines them):
- accepted forms: `exact`; `prefixed` ("Diagnosis: …"); `rewritten` equivalents (inverted word order,
  abbreviation or expansion defined in the case text, accents stripped, plural/singular, hyphens and
  possessives, British/American spelling);
- rejected forms: `negated` ("Not …"), `excluded` ("… ruled out"), `antonym` (a qualifier swapped for its
  opposite), `other_case` (another case's diagnosis), `differential` (an entry of the case's own reference
  differential).

Two further groups test what the judge must hold on unseen data (issue 27):
- accepted `equivalent` forms, by rules and word lists written here, apart from the judge's own tables:
  `-ise` ↔ `-ize` spellings, `carcinoma` ↔ `cancer`, a standard abbreviation put inside a longer name
  (`ABBREVIATED`, applied only where the case does not define it), an eponym ↔ descriptive name (`EPONYM_PAIRS`),
  and a reference's nested-bracket part dropped;
- rejected adversarial forms that carry a `reasoning` written to argue for them: `doubt` (a doubt cue
  before or after the name, the reasoning repeating the cue), and `listed` (a comma list of other cases'
  diagnoses ending with the name, the reasoning naming the others; "name / other" with the reasoning naming
  the other; "name and/or other"; a numbered list).

Deterministic: the same cases give the same items in the same order. The rewrites are written here, apart from
the judge's own tables, so the measurement does not grade the judge against itself.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

ACCEPTED_FORMS = ("exact", "prefixed", "rewritten", "equivalent")
REJECTED_FORMS = ("negated", "excluded", "antonym", "other_case", "differential", "doubt", "listed")
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
DOUBTS = (
    ("Doubtful {}", "doubtful"),
    ("{} disproven", "disproven"),
    ("Questionable {}", "questionable"),
    ("{} refuted", "refuted"),
    ("Uncertain {}", "uncertain"),
    ("{}, doubtful", "doubtful"),
)
"""Doubt templates and the cue word the supporting reasoning repeats."""
ABBREVIATED = (
    ("major depressive disorder", "MDD"),
    ("primary hyperparathyroidism", "PHPT"),
    ("chronic kidney disease", "CKD"),
    ("acute kidney injury", "AKI"),
    ("diffuse large B-cell lymphoma", "DLBCL"),
    ("non-small cell lung cancer", "NSCLC"),
    ("hepatocellular carcinoma", "HCC"),
    ("renal cell carcinoma", "RCC"),
    ("squamous cell carcinoma", "SCC"),
    ("systemic lupus erythematosus", "SLE"),
    ("acute myeloid leukemia", "AML"),
    ("acute lymphoblastic leukemia", "ALL"),
    ("chronic lymphocytic leukemia", "CLL"),
    ("chronic myeloid leukemia", "CML"),
    ("human immunodeficiency virus", "HIV"),
    ("cytomegalovirus", "CMV"),
    ("Epstein-Barr virus", "EBV"),
    ("herpes simplex virus", "HSV"),
    ("varicella zoster virus", "VZV"),
    ("central nervous system", "CNS"),
    ("gastrointestinal stromal tumor", "GIST"),
    ("deep vein thrombosis", "DVT"),
    ("pulmonary embolism", "PE"),
    ("myocardial infarction", "MI"),
    ("multiple sclerosis", "MS"),
    ("inflammatory bowel disease", "IBD"),
    ("immunoglobulin G4", "IgG4"),
    ("T-cell lymphoma", "TCL"),
    ("acute respiratory distress syndrome", "ARDS"),
    ("disseminated intravascular coagulation", "DIC"),
    ("anti-neutrophil cytoplasmic antibody", "ANCA"),
    ("neuroendocrine tumor", "NET"),
    ("adult-onset Still disease", "AOSD"),
    ("post-traumatic stress disorder", "PTSD"),
    ("interstitial lung disease", "ILD"),
)
"""Phrase → standard abbreviation, written for the fixture (not read from the judge's table)."""
EPONYM_PAIRS = (
    ("Reiter syndrome", "reactive arthritis"),
    ("Reiter's syndrome", "reactive arthritis"),
    ("Crohn disease", "regional enteritis"),
    ("Crohn's disease", "regional enteritis"),
    ("Conn syndrome", "primary aldosteronism"),
    ("Conn's syndrome", "primary hyperaldosteronism"),
    ("Wilson disease", "hepatolenticular degeneration"),
    ("Wilson's disease", "hepatolenticular degeneration"),
    ("Kawasaki disease", "mucocutaneous lymph node syndrome"),
    ("Buerger disease", "thromboangiitis obliterans"),
    ("Buerger's disease", "thromboangiitis obliterans"),
    ("Hirschsprung disease", "congenital aganglionic megacolon"),
    ("Hirschsprung's disease", "congenital aganglionic megacolon"),
    ("Paget disease of bone", "osteitis deformans"),
    ("Guillain-Barre syndrome", "acute inflammatory demyelinating polyneuropathy"),
    ("Bell palsy", "idiopathic facial palsy"),
    ("Bell's palsy", "idiopathic facial palsy"),
    ("Sjogren syndrome", "sicca syndrome"),
    ("Zollinger-Ellison syndrome", "gastrinoma"),
    ("Pompe disease", "glycogen storage disease type II"),
    ("von Gierke disease", "glycogen storage disease type I"),
    ("McArdle disease", "glycogen storage disease type V"),
    ("Hurler syndrome", "mucopolysaccharidosis type I"),
    ("Hunter syndrome", "mucopolysaccharidosis type II"),
    ("Sturge-Weber syndrome", "encephalotrigeminal angiomatosis"),
    ("Budd-Chiari syndrome", "hepatic venous outflow obstruction"),
    ("Lynch syndrome", "hereditary nonpolyposis colorectal cancer"),
    ("Takayasu arteritis", "pulseless disease"),
    ("Kikuchi disease", "histiocytic necrotizing lymphadenitis"),
    ("Hashimoto thyroiditis", "chronic lymphocytic thyroiditis"),
    ("Whipple disease", "Tropheryma whipplei infection"),
    ("Castleman disease", "angiofollicular lymph node hyperplasia"),
    ("Kimura disease", "eosinophilic lymphogranuloma"),
)
"""Eponym ↔ descriptive name, written for the fixture; applied in either direction to a whole name. Some pairs are
not in the judge's tables on purpose, so the figure shows what a table written elsewhere would catch."""
ISE_WORD = re.compile(r"\b([A-Za-z]{3,}?[iy])([sz])(e|ed|es|ing|ation|ations)\b")
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
    reasoning: str = ""
    """The submitted diagnostic reasoning (adversarial forms argue for their extra words here)."""


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


def bare_name(diagnosis: str) -> str:
    """The diagnosis without any bracketed part, brackets nested at any depth."""
    previous = None
    while previous != diagnosis:
        previous, diagnosis = diagnosis, re.sub(r"\s*[(\[][^()\[\]]*[)\]]", "", diagnosis)
    return " ".join(diagnosis.split()).strip().rstrip(".").strip()


def _swap_ise(word: re.Match[str]) -> str:
    stem, letter, ending = word.groups()
    return f"{stem}{'z' if letter == 's' else 's'}{ending}"


def equivalents(case: CaseText) -> Iterator[tuple[str, str]]:
    """(variant, text) equivalents the field uses that the old `rewritten` forms do not cover."""
    name = bare_name(case.diagnosis)
    lower = name.lower()
    if ISE_WORD.search(name) and not re.search(r"\b\w*(?:cise|vise|prise|mise|rise|wise)\b", lower):
        yield "ise_ize", ISE_WORD.sub(_swap_ise, name)
    if re.search(r"\bcarcinoma\b", lower):
        yield "carcinoma_as_cancer", re.sub(r"\bcarcinoma\b", "cancer", name, flags=re.IGNORECASE)
    elif re.search(r"\bcancer\b", lower):
        yield "cancer_as_carcinoma", re.sub(r"\bcancer\b", "carcinoma", name, flags=re.IGNORECASE)
    for phrase, abbreviation in ABBREVIATED:
        found = re.search(rf"\b{re.escape(phrase)}\b", name, re.IGNORECASE)
        defined = re.search(rf"\b{re.escape(abbreviation)}\b", case.diagnosis + "\n" + case.record)
        if found and len(name) > len(found.group(0)) and not defined:
            yield "abbreviation_inside", name[: found.start()] + abbreviation + name[found.end() :]
            break
    for one, other in EPONYM_PAIRS:
        for source, target in ((one, other), (other, one)):
            if lower == source.lower():
                yield "eponym", target
    if "(" in case.diagnosis and re.search(r"\([^()]*\(", case.diagnosis):
        yield "nested_brackets_dropped", name


def adversaries(case: CaseText, others: Sequence[str]) -> Iterator[tuple[str, str, str, str]]:
    """(form, variant, submitted, reasoning) for the doubt and list forms, each with a reasoning that argues
    for the extra words, and the doubt forms once more without it."""
    name = bare_name(case.diagnosis) or case.diagnosis.strip()
    for template, cue in DOUBTS:
        text = template.format(name)
        variant = template.format("X").replace(" ", "_").lower()
        yield "doubt", variant, text, f"The workup is {cue}; {cue} features throughout, so {name} is {cue}."
        yield "doubt", f"{variant}_no_reasoning", text, ""
    if len(others) >= 3:
        a, b, c = (bare_name(o) for o in others[:3])
        yield "listed", "comma_list", f"{a}, {b}, {c}, {name}", f"Findings support {a}, {b} and {c}."
        yield "listed", "slash", f"{name} / {a}", f"The findings also fit {a}."
        yield "listed", "and_or", f"{name} and/or {b}", f"{b} is supported by the findings."
        yield "listed", "numbered", f"1. {name} 2. {c}", f"Both fit; {c} is well supported."


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
    for variant, text in equivalents(case):
        yield item("equivalent", variant, text, True)
    own = ref.lower()
    wrong = [o.diagnosis.strip() for o in others if o.diagnosis.strip().lower() != own]
    for form, variant, text, reasoning in adversaries(case, wrong):
        yield Item(case.case, form, variant, text, False, reasoning)
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
