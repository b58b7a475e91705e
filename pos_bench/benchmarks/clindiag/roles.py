"""ClinDiag's information provider (SPEC-BENCH §5.4, §5.8): answers the doctor's questions from one record
section. The judge lives in `judge.py`.

Two forms with the same interface:
- LLM: the fixed provider model (role `benchmark_provider`, set under `roles:`; `provider=llm` refuses to
  start without it);
- offline: `RecordProvider` returns the few record sentences that share content words with the question. A
  deterministic approximation for tests and smoke runs.

Neither form ever sees the answer key.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pos_bench.benchmarks.clindiag.data import NO_RECORD
from pos_bench.protocols import Model
from pos_bench.types import Message, Prompt

NOT_SPECIFIED = "The record does not specify this."


@dataclass(frozen=True)
class QueryTool:
    section: str
    """Record category the answer comes from (a key of `clindiag/data.py` `SECTION_SOURCES`)."""
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


MAX_ITEMS = 4
"""Record sentences one answer may hold; more needs another, narrower question."""
MAX_NAMES = 12
NO_MATCH_CAP = 600
"""Longest reply to a question that matches nothing in the record (the not-specified note plus item names)."""


def _item_name(label: str) -> str:
    """What a unit is about, as a doctor would ask for it: `entry 2, vital signs` → `vital signs`,
    `Chest CT, findings` → `Chest CT`."""
    parts = [p for p in label.split(", ") if p]
    if parts and re.fullmatch(r"entry \d+", parts[0]):
        parts = parts[1:]
    return parts[0] if parts else ""


def no_match(units: list[tuple[str, str]]) -> str:
    """The not-specified answer, naming the items of this section that hold something (never their text)."""
    names = list(dict.fromkeys(_item_name(label) for label, text in units if not _unspecified(text)))
    names = [n for n in names if n][:MAX_NAMES]
    reply = NOT_SPECIFIED
    if names:
        reply += " Items on record here: " + "; ".join(names) + "."
    if len(reply) > NO_MATCH_CAP:
        reply = reply[: NO_MATCH_CAP - 1].rsplit(";", 1)[0] + "."
    return reply


class RecordProvider:
    """Offline provider (SPEC-BENCH §5.8, tightened by issue 13): the few record sentences that share the most
    content words with the question (a word in the sentence counts twice, one in its label once), preferring
    specified ones; a question that matches nothing gets a short not-specified answer naming the items that can
    be asked about, never the section's contents."""

    def __init__(self, model: Model | None = None):
        """`model` is accepted for a signature shared with `LLMProvider`, and unused."""

    def answer(self, tool: QueryTool, record: str, question: str) -> str:
        if record.strip() == NO_RECORD:
            return NO_RECORD
        units = record_units(record)
        keywords = content_words(question)
        scored = []
        for index, (label, text) in enumerate(units):
            score = 2 * len(keywords & content_words(text)) + len(keywords & content_words(label))
            if score:
                scored.append((score, index))
        specified = [(s, i) for s, i in scored if not _unspecified(units[i][1])]
        chosen = sorted(specified or scored, key=lambda si: (-si[0], si[1]))[:MAX_ITEMS]
        if not chosen:
            return no_match(units)
        return "\n".join(
            f"{units[i][0]}: {units[i][1]}" if units[i][0] else units[i][1]
            for _, i in sorted(chosen, key=lambda si: si[1])
        )
