"""ClinDiag's judges (SPEC-BENCH §5.5): decide whether a submitted diagnosis names the reference condition.

- `LLMJudge`: the fixed judge model (role `benchmark_judge`), JSON verdict, up to two re-asks.
- `RulesJudge`: an offline judge built from explicit name rules (labelled `judge=rules`, never the paper's
  metric). Its rules, in order:
  1. Both names are folded: Unicode NFKD with accents dropped, Greek letters spelled out, possessives and
     punctuation removed, British spellings and plurals reduced, roman numerals after "type"/"stage"/… made
     arabic, `-ise`/`-yse` spellings written `-ize`/`-yze`, "cancer" read as "carcinoma" (aliases.py says why),
     abbreviations written in capitals expanded (from the alias table and from "long form (ABBR)" definitions
     found in the case's own record or, for the submission only, its reasoning); a synonym or eponym group
     rewrites a name only when the whole name is a member, never a part of a longer name.
  2. Leading labels ("Final diagnosis:", "The most likely diagnosis is") and hedges ("probable") are removed.
  3. A submission carrying a negation, exclusion, doubt or alternative cue ("not", "ruled out", "doubtful",
     "refuted", "or", "/", "?", …) more often than the reference does is wrong, whatever else matches.
  4. Names match when their word sets are equal (order free), or differ only by a generic head word
     ("disease", "syndrome") or a severity word. A bracketed part of the reference (brackets may nest) is also
     tried on its own, and so is the reference without it; the submission is tried with and without its
     bracketed parts, but a bracketed part that names another condition makes it wrong. A capitals
     abbreviation no table explains matches a run of reference words with those initials.
  5. Following §5.5: a broader submission (reference words missing) is wrong, and so is one whose extra words
     add a complication or a cause ("with", "due to", "secondary to", …) or swap a qualifier for its opposite
     (congenital/acquired); a more specific one (extra qualifier words) is right only when the submitted
     reasoning states each extra word, and never when an extra word is a cue, a condition word ("-itis",
     "syndrome", …) or stands behind a comma the reference does not have: the reasoning can support a subtype,
     not talk a list or a doubt into a diagnosis.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, StrictBool

from pos_bench.benchmarks.clindiag.aliases import ABBREVIATIONS, ANTONYMS, EPONYMS, SYNONYMS, WORD_EQUIVALENTS
from pos_bench.benchmarks.clindiag.allowlist import ALLOWED, Category, category_of
from pos_bench.benchmarks.clindiag.data import AnswerKey
from pos_bench.benchmarks.clindiag.normalise import normalise
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
    undecided: StrictBool = False
    """Rules judge only: the submission was not shown to be the reference (a word, symbol or character the
    rules cannot account for) nor shown wrong; `diagnosis_correct` is then False (issue 40)."""

    @property
    def decision(self) -> str:
        """The three-way verdict: `accept`, `reject` or `undecided`."""
        return "accept" if self.diagnosis_correct else "undecided" if self.undecided else "reject"


_SCHEMA = Verdict.model_json_schema()
VERDICT_SCHEMA = {
    **_SCHEMA,
    "properties": {k: v for k, v in _SCHEMA["properties"].items() if k != "undecided"},
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

DOUBT_STEMS = (
    "doubt",
    "dubious",
    "question",
    "query",
    "queried",
    "uncertain",
    "unclear",
    "unconfirm",
    "unprove",
    "unproven",
    "unverified",
    "unsubstantiat",
    "unsupported",
    "unlikel",
    "improbab",
    "implausib",
    "equivoc",
    "inconclusiv",
    "disprov",
    "refut",
    "rebut",
    "disput",
    "contest",
    "discard",
    "dismiss",
    "revoked",
    "overturn",
    "abandon",
    "tentative",
    "pending",
    "awaiting",
    "speculat",
)
"""Word beginnings that cast doubt on a name. Grown from the forms seen in submissions ("doubtful", "questionable",
"disproven", "refuted", "uncertain", "unlikely") by taking each one's stem, so every inflection ("doubted",
"questionably", "refutation") and each close synonym written here counts too. Stems that begin real names are
left out ("withdr…": withdrawal syndromes; "retract…": retractile mesenteritis; "indeterminate" colitis)."""
CUES = re.compile(
    r"\b(?:not|no|non|without|never|neither|nor|none|absent|absence|exclude[ds]?|excluding|exclusion|"
    r"rules? out|ruled out|r/o|negative|free of|den(?:y|ies|ied)|lack(?:s|ing)?|less likely|"
    r"other than|rather than|instead of|versus|vs|either|or|"
    rf"(?:{'|'.join(DOUBT_STEMS)})[a-z]*)\b|[;?/&]"
)
"""Negation, exclusion, doubt and alternative cues, and the marks that join two names; a submission with more
of one than the reference is wrong."""

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
BRACKET = re.compile(r"[()\[\]]")
WORD = re.compile(r"[A-Za-z0-9]+")
DEFINITION = re.compile(r"((?:[\w'’-]+[ \t]+){0,9}[\w'’-]+)[ \t]*\([ \t]*([A-Za-z][A-Za-z0-9-]{1,9})[ \t]*\)")


ISE = re.compile(r"(?<=[a-z]{2})([iy])s(e|ed|es|er|ers|ing|ation|ations)$")
"""The British `-ise`/`-yse` family ("necrotising", "organisation", "paralysed") read as `-ize`/`-yze`; applied
to both sides, so a word that only looks like one ("exercise") folds the same way on each."""


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
    word = ISE.sub(r"\1z\2", word)
    return WORD_EQUIVALENTS.get(word, word)


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


LIST_ITEM = re.compile(r"\s*(?:\n|[•·▪◦●*]|^\s*[-–]\s|\n\s*[-–]\s|\n\s*\d+[.)])\s*")
"""What parts the items of a list written as lines or bullets (one name never holds a line break or a bullet)."""


def strip_label(name: str) -> str:
    """Rule 2: the name without a leading "Diagnosis:"-style label, hedges and trailing punctuation."""
    previous = None
    while previous != name:
        previous = name
        name = HEDGE.sub("", LABEL.sub("", name, count=1), count=1)
    return name.strip().rstrip(".").strip()  # a sentence's full stop; any other mark is left to account for


def cues(text: str) -> dict[str, int]:
    counts: dict[str, int] = {}
    for match in CUES.finditer(fold(text).lower()):
        counts[match.group(0)] = counts.get(match.group(0), 0) + 1
    return counts


def extra_cue(submitted: str, reference: str) -> str | None:
    """Rule 3: a cue the submission has more often than the reference, or None."""
    ref = cues(reference)
    return next((cue for cue, n in cues(submitted).items() if n > ref.get(cue, 0)), None)


def brackets(text: str) -> tuple[str, list[str]]:
    """`text` with its bracketed parts cut out, and those parts (outermost level, their own brackets kept).
    Brackets may nest ("(T1b pN0 (i+))"); a stray closing bracket is read as a space, an unclosed one runs to
    the end."""
    outside: list[str] = []
    parts: list[str] = []
    current: list[str] = []
    depth = 0
    for c in text:
        if c in "([":
            (current if depth else outside).append(c if depth else " ")
            depth += 1
        elif c in ")]":
            if depth == 0:
                outside.append(" ")
                continue
            depth -= 1
            if depth:
                current.append(c)
            else:
                parts.append("".join(current))
                current = []
        else:
            (current if depth else outside).append(c)
    if current:
        parts.append("".join(current))
    return "".join(outside), parts


def _names_a_condition(part: str) -> bool:
    """A bracketed part that reads as a name on its own: an abbreviation or ending in a disease word."""
    plain = brackets(part)[0].strip()
    words = _raw_words(plain)
    last = words[-1].lower() if words else ""
    abbreviation = " " not in plain and sum(c.isupper() for c in plain) >= 2
    return abbreviation or last in HEADS or last.endswith(DISEASE_ENDINGS)


@dataclass(frozen=True)
class _Forms:
    names: list[str]
    """The name with its brackets opened, the name without its bracketed parts, and (reference only) each
    bracketed part that names a condition."""
    asides: list[str]
    """Bracketed parts that name a condition: the reference's are among `names`; a submission's must each name
    the reference too."""


def _forms(text: str, *, reference: bool) -> _Forms:
    outside, inner = brackets(text)
    asides = [brackets(p)[0] for p in inner if _names_a_condition(p)]
    names = [BRACKET.sub(" ", text), outside, *(asides if reference else ())]
    kept = [n for n in dict.fromkeys(" ".join(n.split()) for n in names) if _raw_words(n)]
    return _Forms(kept, asides)


def appears_in(name: str, text: str) -> bool:
    """Whether `name` (its bracket-free form, folded) occurs as a run of whole words in `text`."""
    words = [w for w in canonical(brackets(strip_label(name))[0]) if w not in FILLERS]
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
    unknown: frozenset[str]
    """Lower-cased capitals abbreviations in the name that no table or definition explains."""


def condition_word(word: str) -> bool:
    """A word that names a condition by itself ("sarcoidosis", "syndrome"), as opposed to a qualifier."""
    return word in HEADS or word.endswith(DISEASE_ENDINGS)


class RulesJudge:
    """Offline deterministic judge (see the module docstring); `aliases` adds synonym groups
    (name → other names)."""

    def __init__(self, model: Model | None = None, *, aliases: Mapping[str, Iterable[str]] | None = None):
        """`model` is accepted for a signature shared with `LLMJudge`, and unused."""
        groups = [*SYNONYMS, *EPONYMS, *((name, *others) for name, others in (aliases or {}).items())]
        rewrites: dict[tuple[str, ...], tuple[str, ...]] = {}
        for group in groups:  # groups sharing a member become one group, named by the first one seen
            members = [self._key(canonical(m)) for m in group]
            joined = {rewrites[m] for m in members if m in rewrites}
            target = next((rewrites[m] for m in members if m in rewrites), members[0])
            for member, old in list(rewrites.items()):
                if old in joined:
                    rewrites[member] = target
            rewrites.update(dict.fromkeys(members, target))
        self._rewrites = rewrites
        self._antonyms = [(frozenset({a}), frozenset({b})) for a, b in ANTONYMS]

    @staticmethod
    def _key(words: Iterable[str]) -> tuple[str, ...]:
        return tuple(w for w in words if w not in FILLERS)

    def _whole_name(self, sequence: tuple[str, ...]) -> tuple[str, ...]:
        """The group's name when the whole of `sequence` (or all of it but generic words) is a group member."""
        if sequence in self._rewrites:
            return self._rewrites[sequence]
        core = tuple(w for w in sequence if w not in OPTIONAL)
        return self._rewrites.get(core, sequence) if core else sequence

    def _name(self, text: str, abbreviations: Mapping[str, str], *, rewrite: bool) -> _Name:
        sequence = self._key(canonical(text, abbreviations))
        if rewrite:
            sequence = self._whole_name(sequence)
        unknown = frozenset(
            w.lower()
            for w in _raw_words(text)
            if capitals(w) and len(w) >= 2 and not (abbreviations.get(w) or abbreviations.get(w.upper()))
        )
        return _Name(frozenset(sequence), sequence, unknown)

    def _initials(self, sub: _Name, ref: _Name) -> _Name:
        """`sub` with each unexplained abbreviation replaced by the run of reference words it is the initials of."""
        sequence = list(sub.sequence)
        for i, word in enumerate(sub.sequence):
            if word not in sub.unknown:
                continue
            size = len(word)
            for j in range(len(ref.sequence) - size + 1):
                run = ref.sequence[j : j + size]
                if "".join(w[0] for w in run) == word:
                    sequence[i : i + 1] = [" ".join(run)]
                    break
        words = tuple(w for part in sequence for w in part.split())
        return _Name(frozenset(words), words, frozenset())

    def _opposed(self, a: frozenset[str], b: frozenset[str]) -> bool:
        only_a, only_b = a - b, b - a
        for x, y in self._antonyms:
            if (x <= only_a and y <= only_b) or (y <= only_a and x <= only_b):
                return True
        return any(w.startswith("non") and w[3:] in b for w in a - b) or any(
            w.startswith("non") and w[3:] in a for w in b - a
        )

    def _match(self, sub: _Name, ref: _Name, reasoning: frozenset[str], *, listed: bool) -> str | None:
        """Why `sub` names the reference (rules 4–5), or None. `listed`: the submission has a comma the
        reference lacks, so no reasoning can make its extra words a qualifier."""
        if sub.unknown:
            sub = self._initials(sub, ref)
        s, r = sub.words, ref.words
        if not s or not r:
            return None
        if s == r:
            return "same words"
        if self._opposed(s, r):
            return None
        missing, extra = r - s, s - r
        if missing and extra:
            return None
        if missing:
            return "differs by a generic word" if missing <= OPTIONAL and s - OPTIONAL else None
        if extra <= OPTIONAL and r - OPTIONAL:
            return "differs by a generic word"
        if extra & RELATIONS or listed or any(condition_word(w) for w in extra):
            return None
        return "more specific, with the extra words in the reasoning" if extra <= reasoning else None

    def same(self, submitted: str, reference: str, *, record: str = "", reasoning: str = "") -> str | None:
        """Why `submitted` names the same condition as `reference` (rules 1–5), or None when it does not."""
        submitted = strip_label(submitted)
        reference = strip_label(reference)
        if not submitted or not reference or extra_cue(submitted, reference):
            return None
        known = {**ABBREVIATIONS, **definitions(record), **definitions(reference)}
        # the reasoning may spell out an abbreviation the submission uses, and nothing else
        own = {**known, **{k: v for k, v in definitions(reasoning).items() if k in submitted}}
        evidence = frozenset(canonical(reasoning, own))
        listed = submitted.count(",") > reference.count(",")
        ref_forms, sub_forms = _forms(reference, reference=True), _forms(submitted, reference=False)
        # Expanded and synonym-rewritten forms first, then the plain folded words (a rewrite can split a pair
        # that is equal word for word, e.g. when only one side writes an abbreviation in capitals).
        for rewrite in (True, False):
            refs = [self._name(n, known if rewrite else {}, rewrite=rewrite) for n in ref_forms.names]
            table = own if rewrite else {}
            for name in sub_forms.names:
                why = self._first(self._name(name, table, rewrite=rewrite), refs, evidence, listed=listed)
                if why and all(
                    self._first(self._name(a, table, rewrite=rewrite), refs, frozenset(), listed=listed)
                    for a in sub_forms.asides
                ):
                    return why
        return None

    def _first(self, sub: _Name, refs: list[_Name], evidence: frozenset[str], *, listed: bool) -> str | None:
        return next((why for ref in refs if (why := self._match(sub, ref, evidence, listed=listed))), None)

    def judge(self, submission: Submission, key: AnswerKey, *, record: str = "") -> Verdict:
        """Default-deny (issue 40): accept only when the name matches (rules 1–5, the reasoning never read) and
        every token of the normalised submission is accounted for; reject on a cue or a different name; any
        other case is undecided. `record` is the case's agent-visible record text; only abbreviation
        definitions are read from it."""
        hit = any(
            self.same(entry, key.final_diagnosis, record=record)
            for entry in differential_entries(submission.differential_diagnosis)
        )
        verdict = self._decide(submission.final_diagnosis, key.final_diagnosis, record)
        return Verdict(
            diagnosis_correct=verdict.decision == "accept",
            differential_hit=hit,
            reason=f"rules judge: {verdict.reason}",
            undecided=verdict.decision == "undecided",
        )

    def _decide(self, submitted: str, reference: str, record: str) -> _Decision:
        norm = normalise(submitted)
        text = strip_label(norm.text)
        cue = extra_cue(text, reference)
        if cue:
            return _Decision("reject", f"the submission adds {cue!r}, a negation, exclusion or alternative")
        if norm.confusable:
            return _Decision("undecided", "letters from another script that look Latin")
        if norm.markup:
            return _Decision("undecided", "markup the rules do not read")
        if len([item for item in LIST_ITEM.split(text) if item.strip()]) > 1:
            return _Decision("reject", "several lines or bullets: a list, not one diagnosis")
        # the allowlist stands where the reasoning used to: the only licence for an extra word (issue 40)
        why = self.same(text, reference, record=record, reasoning=" ".join(sorted(ALLOWED)))
        known = {**ABBREVIATIONS, **definitions(record), **definitions(reference)}
        unaccounted = self._unaccounted(text, reference, known)
        clash = self._qualifier_clash(text, reference)
        if why and clash:
            return _Decision("undecided", f"adds {clash!r} beside a reference qualifier of the same kind")
        if why and not unaccounted:
            return _Decision("accept", why)
        if why:
            return _Decision("undecided", f"{why}, but {sorted(unaccounted)[:3]} are not accounted for")
        if self._covers(text, reference, known):
            return _Decision("undecided", "names the reference with words the rules cannot account for")
        if self._name(text, known, rewrite=True).unknown:
            return _Decision("undecided", "an abbreviation no table or case definition explains")
        return _Decision("reject", "not the reference's name or an accepted variant of it")

    def _ref_words(self, reference: str, known: Mapping[str, str]) -> set[str]:
        words: set[str] = set()
        for name in _forms(reference, reference=True).names:
            for table, rewrite in ((known, True), ({}, False)):
                words |= self._name(name, table, rewrite=rewrite).words
        return words

    def _unaccounted(self, submitted: str, reference: str, known: Mapping[str, str]) -> set[str]:
        """Tokens of `submitted` that are neither reference words (or an equivalent's), allowlisted qualifiers
        nor a named cause after a "secondary to"-style link; symbols count unless the reference has them."""
        ref_words = self._ref_words(reference, known)
        symbols = {
            c
            for c in submitted
            if not (c.isalnum() or c.isspace() or c in "-‐‑–'’,.()") and c not in reference
        }
        opened = BRACKET.sub(" ", submitted)
        best: set[str] | None = None
        for rewrite, table in ((True, known), (False, {})):
            name = self._name(opened, table, rewrite=rewrite)
            if name.unknown:
                refs = [
                    self._name(n, table, rewrite=rewrite) for n in _forms(reference, reference=True).names
                ]
                name = self._initials(name, refs[0])
            sequence = list(name.sequence)
            missing = {w for w in sequence if w not in ref_words and w not in ALLOWED}
            missing -= OPTIONAL - HEDGES
            best = missing if best is None or len(missing) < len(best) else best
        return (best or set()) | symbols

    @staticmethod
    def _qualifier_clash(submitted: str, reference: str) -> str | None:
        """An allowlisted word the submission adds while the reference already has a qualifier of its
        category ("right" beside the reference's "left"): a swap or a second site, never a refinement."""
        ref = set(canonical(reference))
        kinds = {category_of(w) for w in ref} - {None, Category.FORM}
        return next(
            (w for w in canonical(submitted) if w not in ref and category_of(w) in kinds),
            None,
        )

    def _covers(self, submitted: str, reference: str, known: Mapping[str, str]) -> bool:
        """The submission holds every reference word, plus extras that are not a cue or a second condition."""
        ref = self._name(reference, known, rewrite=True).words
        sub = self._name(BRACKET.sub(" ", submitted), known, rewrite=True).words
        extra = sub - ref
        return bool(ref) and ref <= sub and not any(condition_word(w) or w in RELATIONS for w in extra)


@dataclass(frozen=True)
class _Decision:
    decision: str
    reason: str


def differential_entries(text: str) -> list[str]:
    """A free-text differential cut into its entries (lines, semicolons, numbering; then commas and "or"),
    each bigger piece kept too, so a name holding a comma still matches whole."""
    parts = [p.strip() for p in re.split(r"[;\n]+|\s\d+[.)]\s", text) if p.strip()]
    pieces = [q.strip() for p in parts for q in re.split(r",|\bor\b", p) if q.strip()]
    return list(dict.fromkeys([text.strip(), *parts, *pieces]))
