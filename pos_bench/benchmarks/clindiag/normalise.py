"""Character-level normalisation of a submitted diagnosis before the rules judge reads it (issue 40).

NFKC folds compatibility forms (full-width letters, ligatures); zero-width and control characters are removed;
contractions are expanded so "isn't" shows its negation; markup and symbols stay in the text as tokens the
judge must account for. Letters from another script inside a Latin word (Cyrillic "а" for Latin "a") are
refused: the result reports them and the judge never accepts such a name."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

CONTRACTIONS = re.compile(r"\b(\w+)n['’]t\b", re.IGNORECASE)
IRREGULAR = {"can't": "can not", "won't": "will not", "cannot": "can not"}
MARKUP = re.compile(r"~~|\*\*|__|<\s*/?\s*[a-zA-Z][^>]*>|[*_~`]")


@dataclass(frozen=True)
class Normalised:
    text: str
    confusable: bool
    """A word mixes Latin letters with look-alikes from another script, or uses a non-Latin, non-Greek letter."""
    markup: bool
    """The text carried markup (strike-through, emphasis, HTML tags)."""


def _script(c: str) -> str:
    name = unicodedata.name(c, "")
    return name.split(" ")[0] if name else ""


def normalise(text: str) -> Normalised:
    text = unicodedata.normalize("NFKC", text)
    text = "".join(c for c in text if unicodedata.category(c) not in ("Cf", "Cc") or c in "\n\t")
    for short, long in IRREGULAR.items():
        text = re.sub(re.escape(short).replace("'", "['’]"), long, text, flags=re.IGNORECASE)
    text = CONTRACTIONS.sub(lambda m: f"{m.group(1)} not", text)
    confusable = False
    for run in re.findall(r"[^\W\d_]+", text):
        scripts = {_script(c) for c in run}
        if len(scripts) > 1 or scripts - {"LATIN", "GREEK"}:
            confusable = True
    return Normalised(text=text, confusable=confusable, markup=bool(MARKUP.search(text)))
