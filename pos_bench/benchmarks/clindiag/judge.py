"""ClinDiag's judges (SPEC-BENCH §5.5): decide whether a submitted diagnosis names the reference condition.

- `LLMJudge`: the fixed judge model (role `benchmark_judge`), JSON verdict, up to two re-asks.
- `RulesJudge`: an offline judge built from explicit name rules (labelled `judge=rules`, never the paper's
  metric). Its rules, in order:
  1. Both names are folded: Unicode NFKD with accents dropped, Greek letters spelled out, possessives and
     punctuation removed, British spellings and plurals reduced, roman numerals after "type"/"stage"/… made
     arabic, abbreviations written in capitals expanded (from the alias table and from "long form (ABBR)"
     definitions found in the case's own record), synonym groups rewritten to one member.
  2. Leading labels ("Final diagnosis:", "The most likely diagnosis is") and hedges ("probable") are removed.
  3. A submission carrying a negation or exclusion cue ("not", "ruled out", "unlikely", "negative for", "or", …)
     that the reference does not carry is wrong, whatever else matches.
  4. Names match when their word sets are equal (order free), or differ only by a generic head word
     ("disease", "syndrome") or a severity word. A parenthesised part of either name ("(GBM)", "(Addison's
     disease)") is also tried on its own, and an unknown capitals abbreviation matches the initials of the
     reference.
  5. Following §5.5: a broader submission (reference words missing) is wrong, and so is one whose extra words
     add a complication or a cause ("with", "due to", "secondary to", …) or swap a qualifier for its opposite
     (congenital/acquired); a more specific one (extra qualifier words) is right only when the submitted
     reasoning states each extra word.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, StrictBool

from pos_bench.benchmarks.clindiag.aliases import ABBREVIATIONS, ANTONYMS, SYNONYMS
from pos_bench.benchmarks.clindiag.data import AnswerKey
from pos_bench.protocols import Model
from pos_bench.structured import ask
from pos_bench.types import Message, Prompt


@dataclass(frozen=True)
class Submission:
    final_diagnosis: str
    differential_diagnosis: str = ""
    diagnostic_reasoning: str = ""

    @classmethod
    def from_arguments(cls, arguments: Mapping[str, Any]) -> Submission:
        def text(value: Any) -> str:
            if isinstance(value, (list, tuple)):
                return "; ".join(str(v) for v in value)
            return "" if value is None else str(value)

        return cls(
            final_diagnosis=text(arguments.get("final_diagnosis")).strip(),
            differential_diagnosis=text(arguments.get("differential_diagnosis")),
            diagnostic_reasoning=text(arguments.get("diagnostic_reasoning")),
        )


class Verdict(BaseModel):
    """The judge's decision; `diagnosis_correct` must be a JSON boolean (SPEC-BENCH §5.5)."""

    model_config = ConfigDict(extra="ignore")
    diagnosis_correct: StrictBool
    differential_hit: StrictBool = False
    reason: str = ""


VERDICT_SCHEMA = {
    **Verdict.model_json_schema(),
    "required": ["diagnosis_correct", "differential_hit", "reason"],
    "additionalProperties": False,
}
"""What the judge is asked for: all three keys and nothing else (constrained decoders then cannot wander off);
validation itself tolerates extra keys and a missing reason."""


# ---- LLM judge ------------------------------------------------------------------------------------

JUDGE_RULES = """You are a senior physician grading a submitted diagnosis against the reference diagnosis of the same case.
1. diagnosis_correct: true only if the submitted final diagnosis names the same disease or condition as the reference final
   diagnosis. Synonyms, standard abbreviations and clinically equivalent wording count as the same. A merely related
   condition, a broader category, a complication or a predisposing condition does not.
   A submission MORE specific than the reference (a subtype, stage or variant the reference does not state) is correct only
   if the submitted reasoning gives case evidence for that extra detail.
2. differential_hit: true if the reference final diagnosis appears in the submitted differential, under the same rule.
Reply with one JSON object: {"diagnosis_correct": true|false, "differential_hit": true|false, "reason": "<one sentence>"}."""

JUDGE_CASE = """Reference:
- final diagnosis: {ref_final}
- differential: {ref_differential}
- reasoning: {ref_reasoning}

Submitted:
- final diagnosis: {final}
- differential: {differential}
- reasoning: {reasoning}"""


class LLMJudge:
    """Grades with the fixed judge model (role `benchmark_judge`), JSON verdict, up to two re-asks; none valid
    → error. It sees the reference and the submission only, never the patient record."""

    max_repairs = 2

    def __init__(self, model: Model):
        self.model = model

    def judge(self, submission: Submission, key: AnswerKey, *, record: str = "") -> Verdict:
        case = JUDGE_CASE.format(
            ref_final=key.final_diagnosis,
            ref_differential=key.differential_diagnosis,
            ref_reasoning=key.diagnostic_reasoning,
            final=submission.final_diagnosis,
            differential=submission.differential_diagnosis,
            reasoning=submission.diagnostic_reasoning,
        )
        prompt = Prompt(
            messages=(Message("system", JUDGE_RULES), Message("user", case)),
            schema=VERDICT_SCHEMA,
            max_tokens=512,
        )
        verdict = ask(self.model, prompt, Verdict, role="benchmark_judge", max_repairs=self.max_repairs)
        if isinstance(verdict, Verdict):
            return verdict
        raise RuntimeError(
            f"the ClinDiag judge gave no valid verdict in {self.max_repairs + 1} attempts: {verdict.problem}"
        )


# ---- name folding ---------------------------------------------------------------------------------

GREEK = {
    "α": "alpha",
    "β": "beta",
    "γ": "gamma",
    "δ": "delta",
    "ε": "epsilon",
    "κ": "kappa",
    "λ": "lambda",
    "μ": "mu",
}
ROMAN = {
    "i": "1",
    "ii": "2",
    "iii": "3",
    "iv": "4",
    "v": "5",
    "vi": "6",
    "vii": "7",
    "viii": "8",
    "ix": "9",
    "x": "10",
}
PLAIN_ROMAN = frozenset(ROMAN) - {"i", "v", "x"}
"""Numerals that are numbers wherever they stand; "i", "v" and "x" only after a NUMBERED word."""
NUMBERED = frozenset(
    ["type", "stage", "grade", "class", "phase", "factor", "group", "subtype", "variant", "form"]
)
"""Words after which a roman numeral is a number ("type II", "factor VIII")."""
FILLERS = frozenset(["the", "a", "an", "of"])
HEADS = frozenset(["disease", "syndrome", "disorder", "condition"])
SEVERITY = frozenset(["mild", "moderate", "severe"])
HEDGES = frozenset(
    ["probable", "probably", "possible", "possibly", "likely", "suspected", "presumed", "presumptive"]
)
OPTIONAL = HEADS | SEVERITY | HEDGES
RELATIONS = frozenset(
    [
        "with",
        "without",
        "due",
        "secondary",
        "associated",
        "complicated",
        "caused",
        "induced",
        "following",
        "after",
        "leading",
        "plus",
        "and",
        "related",
        "from",
        "superimposed",
        "progressing",
        "causing",
    ]
)
"""Extra words that turn a name into a compound (complication, cause, second condition)."""
DISEASE_ENDINGS = ("osis", "itis", "oma", "emia", "pathy", "plasia", "trophy", "ism", "iasis")

CUES = re.compile(
    r"\b(?:not|no|non|without|never|neither|nor|none|absent|absence|exclude[ds]?|excluding|exclusion|"
    r"rules? out|ruled out|r/o|unlikely|improbable|negative|free of|den(?:y|ies|ied)|lack(?:s|ing)?|"
    r"other than|rather than|instead of|versus|vs|or)\b|;"
)
"""Negation, exclusion and alternative cues; a submission with more of one than the reference is wrong."""

LABEL = re.compile(
    r"^\s*(?:\d+[.)]\s*)?(?:(?:the|my|our)\s+)?(?:(?:final|most likely|likely|probable|working|definitive|"
    r"clinical|provisional|principal|main|primary|leading|overall|differential)\s+)*"
    r"(?:diagnosis|dx|impression|assessment|answer)\s*(?:is|was|would be|:|-|=)?\s*",
    re.IGNORECASE,
)
HEDGE = re.compile(
    r"^\s*(?:(?:most\s+)?(?:probable|probably|likely|possible|possibly|suspected|presumed|presumptive)\s+|"
    r"(?:findings\s+|features\s+)?(?:consistent|compatible)\s+with\s+|suggestive\s+of\s+|"
    r"the\s+patient\s+has\s+|this\s+is\s+)+",
    re.IGNORECASE,
)
PAREN = re.compile(r"\(([^()]*)\)|\[([^\[\]]*)\]")
WORD = re.compile(r"[A-Za-z0-9]+")
DEFINITION = re.compile(r"((?:[\w'’-]+[ \t]+){0,9}[\w'’-]+)[ \t]*\([ \t]*([A-Za-z][A-Za-z0-9-]{1,9})[ \t]*\)")


def fold(text: str) -> str:
    """NFKD with combining marks dropped and Greek letters spelled out; case kept (abbreviations need it)."""
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(GREEK.get(c.lower(), c) for c in decomposed if not unicodedata.combining(c))


def capitals(word: str) -> bool:
    """Written as an abbreviation: at least two capitals and no lower-case run longer than two letters."""
    return sum(c.isupper() for c in word) >= 2 and not re.search(r"[a-z]{3}", word)


def _word_form(word: str) -> str:
    """British → American spelling and plural → singular, for one lower-case word."""
    if len(word) > 4:
        for plural, singular in (("tases", "tasis"), ("oses", "osis"), ("yses", "ysis"), ("ies", "y")):
            if word.endswith(plural):
                word = word[: -len(plural)] + singular
                break
        else:
            keep_s = word.endswith(("ss", "us", "is")) or (word.endswith("as") and not word.endswith("mas"))
            if word.endswith("ae") or (word.endswith("s") and not keep_s):
                word = word[:-1]
    word = word.replace("ae", "e").replace("oe", "e")
    if word.endswith("our") and len(word) > 5:
        word = word[:-3] + "or"
    return word


def _raw_words(text: str) -> list[str]:
    text = re.sub(r"['’`´]s\b", "", fold(text))
    return WORD.findall(text.replace("'", "").replace("’", ""))


def canonical(text: str, abbreviations: Mapping[str, str] = {}) -> list[str]:
    """The folded words of `text` (rule 1, without synonym groups), abbreviations in capitals expanded."""
    for abbreviation in [a for a in abbreviations if not a.isalnum() and a in text]:
        text = re.sub(rf"(?<![\w-]){re.escape(abbreviation)}(?![\w-])", abbreviations[abbreviation], text)
    out: list[str] = []
    for word in _raw_words(text):
        expansion = (abbreviations.get(word) or abbreviations.get(word.upper())) if capitals(word) else None
        if expansion:
            out.extend(canonical(expansion))
            continue
        lower = word.lower()
        if lower in PLAIN_ROMAN or (out and out[-1] in NUMBERED and lower in ROMAN):
            lower = ROMAN[lower]
        out.append(_word_form(lower))
    joined: list[str] = []
    for word in out:  # "non-variceal" and "nonvariceal" are one word
        if joined and joined[-1] == "non":
            joined[-1] = "non" + word
        else:
            joined.append(word)
    return joined


def definitions(text: str) -> dict[str, str]:
    """Abbreviations the text defines as "long form (ABBR)": the shortest run of preceding words whose first
    word starts with the abbreviation's first letter and which holds all its letters in order."""
    found: dict[str, str] = {}
    for match in DEFINITION.finditer(fold(text)):
        before, abbreviation = match.group(1), match.group(2)
        if not capitals(abbreviation):
            continue
        letters = [c for c in abbreviation.lower() if c.isalnum()]
        words = re.split(r"[\s\-–—]+", before.strip())
        for size in range(1, min(len(words), len(letters) + 3) + 1):
            candidate = words[-size:]
            if candidate[0].lower().lstrip("'’")[:1] != letters[0]:
                continue
            if _letters_in_order(letters, " ".join(candidate).lower()):
                found.setdefault(abbreviation, " ".join(candidate))
                break
    return found


def _letters_in_order(letters: list[str], text: str) -> bool:
    position = 0
    for letter in letters:
        position = text.find(letter, position)
        if position < 0:
            return False
        position += 1
    return True


def strip_label(name: str) -> str:
    """Rule 2: the name without a leading "Diagnosis:"-style label, hedges and trailing punctuation."""
    previous = None
    while previous != name:
        previous = name
        name = HEDGE.sub("", LABEL.sub("", name, count=1), count=1)
    return name.strip().strip(".;:,!").strip()


def cues(text: str) -> dict[str, int]:
    counts: dict[str, int] = {}
    for match in CUES.finditer(fold(text).lower()):
        counts[match.group(0)] = counts.get(match.group(0), 0) + 1
    return counts


def extra_cue(submitted: str, reference: str) -> str | None:
    """Rule 3: a cue the submission has more often than the reference, or None."""
    ref = cues(reference)
    return next((cue for cue, n in cues(submitted).items() if n > ref.get(cue, 0)), None)


def _names_in(text: str) -> list[str]:
    """The name itself (brackets dropped), the name without its bracketed parts, and each bracketed part that
    reads as a name on its own (an abbreviation or a disease word)."""
    inner = [a or b for a, b in PAREN.findall(text)]
    outside = PAREN.sub(" ", text)
    names = [PAREN.sub(lambda m: f" {m.group(1) or m.group(2)} ", text), outside]
    for part in inner:
        words = _raw_words(part)
        last = words[-1].lower() if words else ""
        abbreviation = " " not in part.strip() and sum(c.isupper() for c in part) >= 2
        if abbreviation or last in HEADS or last.endswith(DISEASE_ENDINGS):
            names.append(part)
    return [n for n in dict.fromkeys(n.strip() for n in names) if _raw_words(n)]


def appears_in(name: str, text: str) -> bool:
    """Whether `name` (its bracket-free form, folded) occurs as a run of whole words in `text`."""
    words = [w for w in canonical(PAREN.sub(" ", strip_label(name))) if w not in FILLERS]
    haystack = [w for w in canonical(text) if w not in FILLERS]
    size = len(words)
    if not size:
        return False
    first = words[0]
    return any(
        haystack[i] == first and haystack[i : i + size] == words for i in range(len(haystack) - size + 1)
    )


# ---- rules judge ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Name:
    words: frozenset[str]
    sequence: tuple[str, ...]
    unknown_abbreviation: str | None
    """The lower-cased abbreviation when the name is one capitals word no table or definition explains."""


class RulesJudge:
    """Offline deterministic judge (see the module docstring); `aliases` adds synonym groups
    (name → other names)."""

    def __init__(self, model: Model | None = None, *, aliases: Mapping[str, Iterable[str]] | None = None):
        """`model` is accepted for a signature shared with `LLMJudge`, and unused."""
        groups = [*SYNONYMS, *((name, *others) for name, others in (aliases or {}).items())]
        rewrites: dict[str, str] = {}
        for group in groups:
            target = " ".join(canonical(group[0]))
            for member in group:
                rewrites.setdefault(" ".join(canonical(member)), target)
        self._rewrites = sorted(rewrites.items(), key=lambda item: -len(item[0]))
        self._antonyms = [(frozenset({a}), frozenset({b})) for a, b in ANTONYMS]

    def _name(self, text: str, abbreviations: Mapping[str, str], *, rewrite: bool) -> _Name:
        words = canonical(text, abbreviations)
        line = f" {' '.join(words)} "
        for member, target in self._rewrites if rewrite else ():
            if f" {member} " in line:
                line = line.replace(f" {member} ", f" {target} ")
        sequence = tuple(w for w in line.split() if w not in FILLERS)
        raw = _raw_words(text)
        unknown = (
            raw[0].lower()
            if len(raw) == 1 and capitals(raw[0]) and len(raw[0]) >= 3 and sequence == (raw[0].lower(),)
            else None
        )
        return _Name(frozenset(sequence), sequence, unknown)

    def _opposed(self, a: frozenset[str], b: frozenset[str]) -> bool:
        only_a, only_b = a - b, b - a
        for x, y in self._antonyms:
            if (x <= only_a and y <= only_b) or (y <= only_a and x <= only_b):
                return True
        return any(w.startswith("non") and w[3:] in b for w in a - b) or any(
            w.startswith("non") and w[3:] in a for w in b - a
        )

    def _match(self, sub: _Name, ref: _Name, reasoning: frozenset[str]) -> str | None:
        """Why `sub` names the reference (rules 4–5), or None."""
        s, r = sub.words, ref.words
        if not s or not r:
            return None
        if s == r:
            return "same words"
        if self._opposed(s, r):
            return None
        if sub.unknown_abbreviation and sub.unknown_abbreviation == "".join(w[0] for w in ref.sequence):
            return "abbreviation of the reference's initials"
        missing, extra = r - s, s - r
        if missing and extra:
            return None
        if missing:
            return "differs by a generic word" if missing <= OPTIONAL and s - OPTIONAL else None
        if extra <= OPTIONAL and r - OPTIONAL:
            return "differs by a generic word"
        if extra & RELATIONS:
            return None
        return "more specific, with the extra words in the reasoning" if extra <= reasoning else None

    def same(self, submitted: str, reference: str, *, record: str = "", reasoning: str = "") -> str | None:
        """Why `submitted` names the same condition as `reference` (rules 1–5), or None when it does not."""
        submitted = strip_label(submitted)
        if not submitted or not reference.strip() or extra_cue(submitted, reference):
            return None
        abbreviations = {**ABBREVIATIONS, **definitions(record), **definitions(reference)}
        evidence = frozenset(canonical(reasoning, abbreviations))
        ref_names, sub_names = _names_in(strip_label(reference)), _names_in(submitted)
        # Expanded and synonym-rewritten forms first, then the plain folded words (a rewrite can split a pair
        # that is equal word for word, e.g. when only one side writes an abbreviation in capitals).
        for table, rewrite in ((abbreviations, True), ({}, False)):
            refs = [self._name(n, table, rewrite=rewrite) for n in ref_names]
            for name in sub_names:
                sub = self._name(name, table, rewrite=rewrite)
                for ref in refs:
                    why = self._match(sub, ref, evidence)
                    if why:
                        return why
        return None

    def judge(self, submission: Submission, key: AnswerKey, *, record: str = "") -> Verdict:
        """`record` is the case's agent-visible record text; only abbreviation definitions are read from it."""
        cue = extra_cue(strip_label(submission.final_diagnosis), key.final_diagnosis)
        why = self.same(
            submission.final_diagnosis,
            key.final_diagnosis,
            record=record,
            reasoning=submission.diagnostic_reasoning,
        )
        hit = any(
            self.same(entry, key.final_diagnosis, record=record)
            for entry in differential_entries(submission.differential_diagnosis)
        )
        if why:
            reason = f"rules judge: {why}"
        elif cue:
            reason = f"rules judge: the submission adds {cue!r}, a negation, exclusion or alternative"
        else:
            reason = "rules judge: not the reference's name or an accepted variant of it"
        return Verdict(diagnosis_correct=why is not None, differential_hit=hit, reason=reason)


def differential_entries(text: str) -> list[str]:
    """A free-text differential cut into its entries (lines, semicolons, numbering; then commas and "or"),
    each bigger piece kept too, so a name holding a comma still matches whole."""
    parts = [p.strip() for p in re.split(r"[;\n]+|\s\d+[.)]\s", text) if p.strip()]
    pieces = [q.strip() for p in parts for q in re.split(r",|\bor\b", p) if q.strip()]
    return list(dict.fromkeys([text.strip(), *parts, *pieces]))
