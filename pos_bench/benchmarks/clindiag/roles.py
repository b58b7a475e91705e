"""ClinDiag's benchmark-side roles: the information provider and the judge (SPEC-BENCH §5.4, §5.5, §5.8).

Each comes in two forms with the same interface:
- LLM: the run's model with role `benchmark_provider` / `benchmark_judge` (the paper fixes one provider
  model for every backbone: set it under `roles:` in the run config);
- offline: `RecordProvider` returns the record sentences that share a content word with the question, and
  `RulesJudge` matches normalised names. Both are deterministic approximations for tests and smoke runs;
  scores from `RulesJudge` are labelled (`judge_rules`) and are not the paper's metric.

Neither form ever sees the answer key except the judge, which receives it as an argument when scoring.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, StrictBool

from pos_bench.benchmarks.clindiag.data import NO_RECORD, AnswerKey
from pos_bench.protocols import Model
from pos_bench.structured import ask
from pos_bench.types import Message, Prompt

NOT_SPECIFIED = "The record does not specify this."


@dataclass(frozen=True)
class QueryTool:
    section: str
    """Record category the answer comes from (a key of `clindiag_data.SECTION_SOURCES`)."""
    scope: str
    example: str

    @property
    def description(self) -> str:
        return (
            f"Ask one specific question about {self.scope}. The answer comes only from the patient's record and "
            f'covers only what was asked. Example: "{self.example}"'
        )


QUERY_TOOLS: Mapping[str, QueryTool] = {
    "ask_history": QueryTool(
        "history",
        "the medical history (chief complaint, present illness, past, family and social history)",
        "Has the patient lost weight recently?",
    ),
    "ask_physical_exam": QueryTool(
        "physical_exam",
        "the physical examination (vital signs and findings, possibly at several times)",
        "Is there swelling of the ankles?",
    ),
    "order_lab_test": QueryTool(
        "laboratory", "the laboratory test results", "What was the haemoglobin level?"
    ),
    "order_radiographic_test": QueryTool(
        "radiographic", "the imaging results (X-ray, CT, MRI, ultrasound)", "What did the abdominal CT show?"
    ),
    "order_other_test": QueryTool(
        "other",
        "other diagnostic procedures (biopsy, endoscopy, ECG, genetic or other special tests)",
        "What did the skin biopsy show?",
    ),
}

PROVIDER_RULES = """You answer a doctor's questions about one patient, using only the patient record below.
- Answer exactly the question asked, from this record and nothing else.
- Keep it short.
- Do not add anything that was not asked for; do not guess, advise, interpret or hint at what to ask next.
- If the record does not contain the item asked about, say that it is not specified in the record.
- Never name, suggest or discuss any diagnosis, even if asked."""


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


# ---- provider -------------------------------------------------------------------------------------


class LLMProvider:
    """Answers with the run's model (role `benchmark_provider`): rules + tool scope + record, then the question."""

    def __init__(self, model: Model):
        self.model = model

    def answer(self, tool: QueryTool, record: str, question: str) -> str:
        system = f"{PROVIDER_RULES}\n\nThis record covers {tool.scope}.\n\nPatient record:\n{record}"
        prompt = Prompt(messages=(Message("system", system), Message("user", question)), max_tokens=1024)
        return self.model.generate(prompt, role="benchmark_provider").text.strip()


_STOPWORD_TEXT = (
    "a about above after again all also am an and any are as at be been before being below between both but by "
    "can could did do does doing done during each for from had has have having he her his how i if in into is it "
    "its me more most my no nor not of on or other our out over please s she should so some such than that the "
    "their them then there these they this those to under up was we were what when where which while who whom "
    "why will with would you your patient patients result results test tests finding findings show shown showed "
    "reveal revealed exam examination examinations history record anything tell know known give list value "
    "values level levels perform performed check checked see seen note noted find found sign signs symptom "
    "symptoms"
)
STOPWORDS = frozenset(_STOPWORD_TEXT.split())
"""Words too common in questions or records to tie a question to a record sentence."""


def _stem(token: str) -> str:
    return token[:-1] if len(token) > 3 and token.endswith("s") and not token.endswith("ss") else token


def content_words(text: str) -> set[str]:
    """Lowercased words minus stopwords, with a crude plural strip so `tests` meets `test`."""
    words = re.findall(r"[a-z0-9]+", text.lower())
    return {_stem(w) for w in words if w not in STOPWORDS and _stem(w) not in STOPWORDS}


def _unspecified(text: str) -> bool:
    return text.strip().rstrip(".").strip().lower() in (
        "",
        "not specified",
        "none specified",
        "n/a",
        "unknown",
    )


def _sentences(text: str) -> list[str]:
    return [s for s in re.split(r"(?<=[.!?])\s+(?=[A-Z0-9])", text.strip()) if s] or [text]


def _flatten(value: Any, label: str, out: list[tuple[str, str]]) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            if key != "procedure_name":  # already the item's title
                _flatten(item, f"{label}, {key.replace('_', ' ')}" if label else key.replace("_", " "), out)
    elif isinstance(value, list):
        for number, item in enumerate(value, 1):
            title = item.get("procedure_name") if isinstance(item, dict) else None
            name = str(title) if isinstance(title, str) and not _unspecified(title) else f"entry {number}"
            _flatten(item, f"{label} {name}".strip() if not isinstance(item, dict) else name, out)
    else:
        for sentence in _sentences(str(value)):
            out.append((label, sentence))


def record_units(record: str) -> list[tuple[str, str]]:
    """The record cut into (label, sentence) units; a one-key wrapper object is unwrapped first."""
    try:
        payload = json.loads(record)
    except ValueError:
        return [("", s) for s in _sentences(record)]
    if (
        isinstance(payload, dict)
        and len(payload) == 1
        and isinstance(next(iter(payload.values())), (dict, list))
    ):
        payload = next(iter(payload.values()))
    units: list[tuple[str, str]] = []
    _flatten(payload, "", units)
    return units


class RecordProvider:
    """Offline provider (SPEC-BENCH §5.8): the record units sharing a content word with the question, else
    every specified unit of the section, else a not-specified answer."""

    def __init__(self, model: Model | None = None):
        """`model` is accepted for a signature shared with `LLMProvider`, and unused."""

    def answer(self, tool: QueryTool, record: str, question: str) -> str:
        if record.strip() == NO_RECORD:
            return NO_RECORD
        units = record_units(record)
        keywords = content_words(question)
        hits = [u for u in units if keywords & content_words(f"{u[0]} {u[1]}")]
        specified_hits = [u for u in hits if not _unspecified(u[1])]
        chosen = specified_hits or hits or [u for u in units if not _unspecified(u[1])]
        if not chosen:
            return NOT_SPECIFIED
        return "\n".join(f"{label}: {text}" if label else text for label, text in chosen)


# ---- judge ----------------------------------------------------------------------------------------

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
    """Grades with the run's model (role `benchmark_judge`), JSON verdict, up to two re-asks; none valid → error."""

    max_repairs = 2

    def __init__(self, model: Model):
        self.model = model

    def judge(self, submission: Submission, key: AnswerKey) -> Verdict:
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


SPELLINGS = {
    "anaemia": "anemia",
    "leukaemia": "leukemia",
    "tumour": "tumor",
    "oedema": "edema",
    "haemorrhage": "hemorrhage",
    "haemorrhagic": "hemorrhagic",
    "oesophageal": "esophageal",
    "oesophagitis": "esophagitis",
    "haematoma": "hematoma",
    "paediatric": "pediatric",
    "ischaemic": "ischemic",
    "ischaemia": "ischemia",
    "haemolytic": "hemolytic",
}
"""British → American spellings, applied word by word."""

ABBREVIATIONS = {
    "sle": "systemic lupus erythematosus",
    "copd": "chronic obstructive pulmonary disease",
    "dvt": "deep vein thrombosis",
    "tb": "tuberculosis",
    "aml": "acute myeloid leukemia",
    "cml": "chronic myeloid leukemia",
    "cll": "chronic lymphocytic leukemia",
    "ra": "rheumatoid arthritis",
    "ms": "multiple sclerosis",
    "als": "amyotrophic lateral sclerosis",
    "dlbcl": "diffuse large b cell lymphoma",
    "mi": "myocardial infarction",
    "stemi": "st elevation myocardial infarction",
    "ards": "acute respiratory distress syndrome",
    "hlh": "hemophagocytic lymphohistiocytosis",
    "ttp": "thrombotic thrombocytopenic purpura",
    "gbs": "guillain barre syndrome",
    "pres": "posterior reversible encephalopathy syndrome",
}
"""Standard abbreviations, expanded when a whole normalised name (or a word inside it) is one."""


def normalise(text: str) -> str:
    """Lowercase, punctuation to spaces, whitespace collapsed, spellings unified and abbreviations expanded."""
    words = re.sub(r"[\W_]+", " ", text.lower()).split()
    return " ".join(ABBREVIATIONS.get(w, SPELLINGS.get(w, w)) for w in words)


class RulesJudge:
    """Offline judge (SPEC-BENCH §5.8): correct ⇔ normalised names equal, an alias matches, or word-set
    Jaccard ≥ 0.8; differential hit ⇔ the normalised reference occurs (whole words) in the differential."""

    def __init__(
        self,
        model: Model | None = None,
        *,
        aliases: Mapping[str, Sequence[str]] | None = None,
        threshold: float = 0.8,
    ):
        if not 0.0 < threshold <= 1.0:
            raise ValueError(f"threshold must be in (0, 1], got {threshold}")
        self.aliases = {normalise(k): {normalise(a) for a in v} for k, v in (aliases or {}).items()}
        self.threshold = threshold

    def same(self, submitted: str, reference: str) -> bool:
        a, b = normalise(submitted), normalise(reference)
        if not a or not b:
            return False
        if a == b or a in self.aliases.get(b, ()):
            return True
        words_a, words_b = set(a.split()), set(b.split())
        return len(words_a & words_b) / len(words_a | words_b) >= self.threshold

    def judge(self, submission: Submission, key: AnswerKey) -> Verdict:
        reference = normalise(key.final_diagnosis)
        differential = normalise(submission.differential_diagnosis)
        return Verdict(
            diagnosis_correct=self.same(submission.final_diagnosis, key.final_diagnosis),
            differential_hit=bool(reference) and f" {reference} " in f" {differential} ",
            reason="rules judge (normalised match, aliases, word-set Jaccard)",
        )
