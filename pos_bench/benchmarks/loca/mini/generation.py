"""mini-LOCA generation helpers: the scales and seeds, length measurement with a fixed tokenizer, filling a
case with distractor records up to its nominal length, fictional names and stable ids."""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Callable, Mapping
from typing import Any

SCALES = ("8k", "16k", "32k", "64k", "96k", "128k", "256k")
SEEDS = (42, 123, 456, 789, 2024)
TOKENIZER = "cl100k_base"
"""The GPT-4 tokenizer, which upstream LOCA-Bench also measures lengths with."""


def nominal_tokens(scale: str) -> int:
    """`"32k"` → 32000: the length the case's service records are filled up to."""
    if scale not in SCALES:
        raise ValueError(f"scale must be one of {', '.join(SCALES)}; got {scale!r}")
    return int(scale[:-1]) * 1000


@functools.lru_cache(maxsize=1)
def _encoding() -> Any:
    import bpe_openai

    return bpe_openai.get_encoding(TOKENIZER)


def count_tokens(text: str) -> int:
    return len(_encoding().encode(text))


def compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def fill(
    target: int, used: int, make: Callable[[int], tuple[str, Mapping[str, Any]]]
) -> list[tuple[str, Any]]:
    """Distractor records from `make(i)` (→ collection, record) until the token count reaches `target`.

    `make` must be deterministic in `i`, so a larger scale extends a smaller one's distractors."""
    records = []
    while used < target:
        kind, record = make(len(records))
        records.append((kind, record))
        used += count_tokens(compact(record)) + 1
    return records


def measure(db: Mapping[str, Any]) -> int:
    """Tokens of every service's state as compact JSON (large containers are counted part by part, which the
    tokenizer's chunk limit requires; the joins add a token or two each)."""
    return sum(_tokens(data) for data in db.values())


def _tokens(value: Any) -> int:
    text = compact(value)
    if len(text) <= 100_000:
        return count_tokens(text)
    if isinstance(value, Mapping):
        return sum(count_tokens(compact(k)) + _tokens(v) + 2 for k, v in value.items())
    return sum(_tokens(v) + 1 for v in value)


FIRST_NAMES = (
    "Ada",
    "Bruno",
    "Chiara",
    "Dmitri",
    "Elena",
    "Farid",
    "Greta",
    "Hugo",
    "Ines",
    "Jonas",
    "Keiko",
    "Liam",
    "Maya",
    "Nils",
    "Olga",
    "Priya",
    "Quentin",
    "Rosa",
    "Samir",
    "Tessa",
    "Umar",
    "Vera",
    "Wen",
    "Yusuf",
)
LAST_NAMES = (
    "Abbott",
    "Brandt",
    "Castro",
    "Dalton",
    "Eriksen",
    "Fischer",
    "Gupta",
    "Haddad",
    "Ito",
    "Jensen",
    "Kowalski",
    "Lindqvist",
    "Moreau",
    "Novak",
    "Okafor",
    "Petrov",
    "Quinn",
    "Rossi",
    "Sato",
    "Tanaka",
    "Urban",
    "Varga",
)
FILLER = (
    "Please let me know if anything is unclear.",
    "The numbers are in the shared folder as usual.",
    "No action is needed from your side at the moment.",
    "We will revisit this at the end of the month.",
    "Thanks again for the quick turnaround last week.",
    "The previous version is archived for reference.",
    "I have copied the team so everyone sees the same update.",
    "Feedback is welcome before Friday.",
)


def person(rng: Any) -> tuple[str, str]:
    """A fictional (full name, e-mail address)."""
    first, last = rng.choice(FIRST_NAMES), rng.choice(LAST_NAMES)
    return f"{first} {last}", f"{first}.{last}@northwind.example".lower()


def uid(prefix: str, *parts: object) -> str:
    """A stable id from the parts (8 hex digits), so generation never depends on the order of draws."""
    return f"{prefix}-{hashlib.sha1('/'.join(map(str, parts)).encode()).hexdigest()[:8]}"
