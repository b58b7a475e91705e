"""PACE: each executed step is a chunk kept at four granularities; every turn, older chunks are shown in full,
detailed, brief or as a placeholder by their relevance to the current step, with thresholds that rise with
episode pressure; the last `recent` chunks are always in full, and `glimpse N` rereads chunk N
(SPEC-BASE §5).

Calls per executed step: one `summarizer` call (JSON `{detailed, brief}`, synchronous) and two embeddings (the
chunk's key and the next turn's query), counted in the report's `embedding` entry because the encoder is not a
chat model.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict

from baselines.meta_actions import MetaOffer, memory_prompt, meta_ids
from baselines.pace.encoder import Encoder, MiniLMEncoder
from baselines.tokens import ENCODINGS, TokenCounter
from pos_bench.prompting import example_section, render_observation
from pos_bench.protocols import MethodBase, Model, local_compute
from pos_bench.structured import StructuredFailure, ask
from pos_bench.types import Brief, Message, Observation, Prompt, Step, Task, action_json

GRANULARITIES = ("full", "detailed", "brief", "placeholder")

SUMMARIZER_SYSTEM = (
    "You summarise one step of an agent's episode so the agent can later recall it at lower cost. Reply with "
    'one JSON object: "detailed" keeps every identifier, value and outcome of the step; "brief" says in one '
    "or two sentences what was done and what came of it."
)


class ChunkSummary(BaseModel):
    model_config = ConfigDict(extra="forbid")
    detailed: str
    brief: str


@dataclass(frozen=True)
class PaceConfig:
    """Defaults from SPEC-BASE §5.5; `t_max` is ALFWorld's turn budget (LOCA 100, RCA-100 150 actions,
    ClinDiag 30 when no dev-split episode lengths exist)."""

    recent: int = 2
    """N: the latest chunks always shown in full."""
    tau: float = 0.3
    """Softmax temperature over cosine relevance."""
    alpha: float = 0.4
    beta: float = 0.8
    gamma: float = 1.5
    """Base thresholds on the relative weight: > γ full, > β detailed, > α brief, else placeholder."""
    pressure_weight: float = 0.5
    """λ: thresholds scale by (1 + λ·P); 1.0 is the aggressive setting."""
    t_max: int = 50
    b_max: int = 128_000
    """Context budget in tokens for the size term of the pressure."""
    l_max: int = 512
    """Tokens of a text the encoder sees."""
    max_glimpses: int = 3
    """Glimpses offered per turn."""
    summarizer_max_tokens: int = 1024
    tokenizer: str = "o200k_base"
    max_json_retries: int = 2

    def __post_init__(self) -> None:
        if not (0 < self.alpha <= self.beta <= self.gamma):
            raise ValueError(f"need 0 < alpha ≤ beta ≤ gamma, got {self.alpha}, {self.beta}, {self.gamma}")
        positive = {"tau": self.tau, "t_max": self.t_max, "b_max": self.b_max, "l_max": self.l_max}
        bad = [f"{k}={v}" for k, v in positive.items() if v <= 0]
        if self.recent < 0 or self.pressure_weight < 0 or self.max_glimpses < 0 or self.max_json_retries < 0:
            bad.append("recent, pressure_weight, max_glimpses and max_json_retries must be ≥ 0")
        if self.tokenizer not in ENCODINGS:
            bad.append(f"tokenizer must be one of {ENCODINGS}")
        if bad:
            raise ValueError(f"bad PACE settings: {'; '.join(bad)}")


def relative_weights(query: np.ndarray, keys: np.ndarray, tau: float) -> np.ndarray:
    """w̃_i = M · softmax_i(cos(q, k_i) / τ) for unit vectors; above 1 means above-average relevance."""
    scores = keys @ query / tau
    weights = np.exp(scores - scores.max())
    return len(keys) * weights / weights.sum()


def pressure(turn: int, context_tokens: int, *, t_max: int, b_max: int) -> float:
    """P_t = max(t / T_max, |C_{t-1}| / B_max)."""
    return max(turn / t_max, context_tokens / b_max)


def thresholds(p: float, *, base: tuple[float, float, float], weight: float) -> tuple[float, ...]:
    """(α, β, γ) scaled by (1 + λ·P): more pressure, coarser representations."""
    return tuple(x * (1 + weight * p) for x in base)


def granularity(w: float, levels: tuple[float, ...]) -> str:
    alpha, beta, gamma = levels
    return "full" if w > gamma else "detailed" if w > beta else "brief" if w > alpha else "placeholder"


@dataclass(frozen=True)
class Chunk:
    id: int
    full: str
    detailed: str
    brief: str
    action: Any
    key: np.ndarray

    def text(self, level: str) -> str:
        if level == "placeholder":
            return (
                f"action {json.dumps(self.action, ensure_ascii=False)}; details omitted (glimpse {self.id})"
            )
        return {"full": self.full, "detailed": self.detailed, "brief": self.brief}[level]


class Pace(MethodBase):
    def __init__(self, model: Model, *, encoder: Encoder | None = None, **settings: Any):
        self.model = model
        self.config = PaceConfig(**settings)
        self.encoder = encoder if encoder is not None else MiniLMEncoder()
        self.tokens = TokenCounter(self.config.tokenizer)
        self.chunks: list[Chunk] = []
        self.glimpsed: list[int] = []
        self.notes: list[str] = []
        self.query: tuple[int, np.ndarray] | None = None
        """(number of chunks it was computed for, query vector): one query per turn."""
        self.context_tokens = 0
        self.selection: dict[str, Any] = {}
        self.embedding = {"calls": 0, "input_tokens": 0}
        self.embedding_reported = dict(self.embedding)
        self.encoder_cpu = 0.0
        """CPU seconds in the encoder since the last memory record."""
        self.counts = {"glimpse": 0, "glimpse_invalid": 0, "summaries": 0, "summary_failures": 0}

    def __exit__(self, *exc: object) -> None:
        self.encoder.close()

    def start(self, task: Task, brief: Brief, first: Observation) -> None:
        self.brief = brief
        self.goal = first.goal
        self.context_tokens = self.tokens.count(brief.system) + self.tokens.count(self.goal)

    def _embed(self, text: str) -> np.ndarray:
        """One text's vector. The encoder computes in this process, so it takes a compute slot as an environment
        step does (`local_compute`), and its CPU goes to the next memory record (`embedding.cpu_seconds`)."""
        clipped = self.tokens.truncate(text, self.config.l_max)
        with local_compute():
            started = time.process_time()
            result = self.encoder.embed([clipped])
            self.encoder_cpu += time.process_time() - started
        self.embedding["calls"] += 1
        self.embedding["input_tokens"] += result.tokens
        return result.vectors[0]

    def _levels(self) -> dict[int, str]:
        """Granularity of every older chunk for this turn."""
        c = self.config
        older = self.chunks[: max(len(self.chunks) - c.recent, 0)]
        if not older:
            self.selection = {}
            return {}
        if self.query is None or self.query[0] != len(self.chunks):
            latest = "\n".join(ch.full for ch in self.chunks[len(older) :])
            self.query = (len(self.chunks), self._embed(f"{self.goal}\n{latest}"))
        weights = relative_weights(self.query[1], np.array([ch.key for ch in older]), c.tau)
        p = pressure(len(self.chunks), self.context_tokens, t_max=c.t_max, b_max=c.b_max)
        levels = thresholds(p, base=(c.alpha, c.beta, c.gamma), weight=c.pressure_weight)
        chosen = {ch.id: granularity(float(w), levels) for ch, w in zip(older, weights)}
        self.selection = {
            "pressure": round(p, 4),
            "thresholds": [round(x, 4) for x in levels],
            "weights": {ch.id: round(float(w), 4) for ch, w in zip(older, weights)},
            "granularity": chosen,
        }
        return chosen

    def _glimpse_offer(self, levels: Mapping[int, str]) -> MetaOffer:
        options = [i for i, level in levels.items() if level != "full" and i not in self.glimpsed]
        if len(self.glimpsed) >= self.config.max_glimpses:
            options = []
        return MetaOffer(
            name="glimpse",
            commands=tuple(f"glimpse {i}" for i in options),
            description="Show an earlier step in full without acting (no environment step).",
            parameters={
                "type": "object",
                "properties": {"chunk_id": {"type": "integer", "enum": options}},
                "required": ["chunk_id"],
            },
        )

    def prompt(self, obs: Observation) -> Prompt:
        levels = self._levels()
        older = [
            f"[step {ch.id}] {ch.text('full' if ch.id in self.glimpsed else levels[ch.id])}"
            for ch in self.chunks
            if ch.id in levels
        ]
        latest = [f"[step {ch.id}] {ch.full}" for ch in self.chunks if ch.id not in levels]
        sections = [
            example_section(self.brief),
            f"Task: {self.goal}",
            "Earlier steps, condensed by relevance (`glimpse N` shows step N in full):\n" + "\n".join(older)
            if older
            else "",
            "Latest steps:\n" + ("\n".join(latest) if latest else "none yet"),
            "\n".join(self.notes),
            f"Current observation:\n{render_observation(obs)}",
        ]
        prompt = memory_prompt(
            self.brief,
            obs,
            sections,
            [self._glimpse_offer(levels)],
            max_json_retries=self.config.max_json_retries,
        )
        self.context_tokens = sum(self.tokens.count(m.content) for m in prompt.messages)
        return prompt

    def _summaries(self, full: str) -> ChunkSummary:
        prompt = Prompt(
            messages=(
                Message("system", SUMMARIZER_SYSTEM),
                Message("user", f"Task: {self.goal}\n\nStep:\n{full}"),
            ),
            max_tokens=self.config.summarizer_max_tokens,
        )
        summary = ask(self.model, prompt, ChunkSummary, role="summarizer", max_repairs=1)
        if isinstance(summary, StructuredFailure):
            # The original falls back to the full text when a summary is not ready.
            self.counts["summary_failures"] += 1
            return ChunkSummary(detailed=full, brief=full)
        self.counts["summaries"] += 1
        return summary

    def _glimpse(self, step: Step) -> Mapping[str, Any]:
        ids = meta_ids(step.decision.meta, "chunk_id")
        known = {ch.id for ch in self.chunks}
        self.counts["glimpse"] += 1
        if len(ids) != 1 or ids[0] not in known:
            self.counts["glimpse_invalid"] += 1
            self.notes.append(f"Glimpse request {step.decision.meta!r} named no earlier step; nothing shown.")
            return {"glimpse": ids, "valid": False}
        self.glimpsed.append(ids[0])
        return {"glimpse": ids[0], "valid": True}

    def update(self, step: Step) -> Mapping[str, Any] | None:
        if step.after is None:
            return self._glimpse(step)
        record = {**self.selection, "glimpsed": list(self.glimpsed)}
        self.glimpsed, self.notes = [], []
        if not step.after.done:
            self._add_chunk(step)
        record["embedding"] = {k: self.embedding[k] - self.embedding_reported[k] for k in self.embedding}
        record["embedding"]["cpu_seconds"] = round(self.encoder_cpu, 4)
        self.embedding_reported, self.encoder_cpu = dict(self.embedding), 0.0
        return record

    def _add_chunk(self, step: Step) -> None:
        action = action_json(step.decision.action)
        full = json.dumps(
            {"thought": step.decision.thought, "action": action, "observation": step.after.text},
            ensure_ascii=False,
        )
        summary = self._summaries(full)
        key = self._embed(full)
        self.chunks.append(Chunk(len(self.chunks) + 1, full, summary.detailed, summary.brief, action, key))

    def report(self) -> Mapping[str, Any]:
        levels = list(self.selection.get("granularity", {}).values())
        return {
            **self.counts,
            "meta_actions": {"glimpse": self.counts["glimpse"]},
            "embedding": dict(self.embedding),
            "encoder": dict(self.encoder.describe()),
            "chunks": len(self.chunks),
            "last_granularity": {g: levels.count(g) for g in GRANULARITIES},
        }
