"""ACON: a backbone-prompted compressor with a fixed guideline (SPEC-BASE §4; no guideline optimisation or
distillation, as in the PoS paper's adaptation).

History compression runs before a policy call: when the summary plus the steps older than the last
`preserve_last_k` exceed `t_hist` tokens, one `compressor` call rewrites them into a summary that replaces
them (rule `reset`). Observation compression runs after a non-terminal env step: an observation longer than
`t_obs` tokens is rewritten by one `compressor` call, and the rewrite replaces it everywhere it is shown.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from baselines.acon.guidelines import (
    COMPRESSOR_SYSTEM,
    DOMAINS,
    GUIDELINES,
    history_guideline,
    observation_guideline,
)
from baselines.tokens import ENCODINGS, TokenCounter
from pos_bench.prompting import example_section, policy_prompt, render_observation
from pos_bench.protocols import MethodBase, Model
from pos_bench.types import Brief, Message, Observation, Prompt, Step, Task, action_json


@dataclass(frozen=True)
class AconConfig:
    """Defaults are ALFWorld's (SPEC-BASE §4.5). Documented values for the other benchmarks:
    LOCA-Bench t_hist 4096 / t_obs 1024 / domain workspace; RCA-100 4096 / 1024 / incident;
    ClinDiag 4096 / 512 / clinical."""

    mode: Literal["unified", "history", "obs"] = "unified"
    """Which compressors run: both, history only, or observations only."""
    t_hist: int = 1024
    """T_hist in tokens; -1 compresses before every policy call that has something to compress."""
    t_obs: int = 256
    """T_obs in tokens; observations with more tokens are rewritten."""
    preserve_last_k: int = 1
    """Steps kept verbatim after the summary."""
    summary_rule: Literal["reset", "accumulate"] = "reset"
    """`reset`: the new summary replaces the old (which was one of its inputs); `accumulate`: each summary
    covers only its own span and is appended after the previous ones."""
    guideline: Literal["domain", "base", "ut", "utco"] = "domain"
    domain: Literal["household", "workspace", "incident", "clinical"] = "household"
    """Domain items for `guideline=domain`."""
    min_turns_between: int = 0
    """Executed steps required between two history compressions (0 = off)."""
    history_summary_in_obs: bool = False
    """Show the history summary to the observation compressor (the authors found it hurt)."""
    compressor_max_tokens: int = 4096
    tokenizer: str = "o200k_base"
    """`o200k_base` (bundled BPE) or `chars4` (characters / 4)."""
    max_json_retries: int = 2

    def __post_init__(self) -> None:
        checks = {
            "mode": self.mode in ("unified", "history", "obs"),
            "t_hist": self.t_hist == -1 or self.t_hist > 0,
            "t_obs": self.t_obs > 0,
            "preserve_last_k": self.preserve_last_k >= 0,
            "summary_rule": self.summary_rule in ("reset", "accumulate"),
            "guideline": self.guideline in GUIDELINES,
            "domain": self.domain in DOMAINS,
            "min_turns_between": self.min_turns_between >= 0,
            "compressor_max_tokens": self.compressor_max_tokens > 0,
            "tokenizer": self.tokenizer in ENCODINGS,
            "max_json_retries": self.max_json_retries >= 0,
        }
        bad = [name for name, ok in checks.items() if not ok]
        if bad:
            raise ValueError(f"bad ACON settings {', '.join(f'{n}={getattr(self, n)!r}' for n in bad)}")


def after_heading(text: str, heading: str) -> str:
    """The text after the last line naming `heading` (case-insensitive), else the whole reply."""
    words = heading.lstrip("# ").strip()
    matches = list(re.finditer(rf"^[#*\s]*{re.escape(words)}[*:\s]*$", text, re.IGNORECASE | re.MULTILINE))
    return (text[matches[-1].end() :] if matches else text).strip()


def role_tagged(steps: list[dict[str, Any]]) -> str:
    """Steps as a session transcript: the agent's decision, then the environment's reply."""
    lines = []
    for step in steps:
        decision = json.dumps({"thought": step["thought"], "action": step["action"]}, ensure_ascii=False)
        lines += [f"assistant: {decision}", f"user: {step['observation']}"]
    return "\n".join(lines)


class Acon(MethodBase):
    def __init__(self, model: Model, **settings: Any):
        self.model = model
        self.config = AconConfig(**settings)
        self.tokens = TokenCounter(self.config.tokenizer)
        self.steps: list[dict[str, Any]] = []
        """Steps not yet folded into a summary (observations already compressed where needed)."""
        self.summaries: list[str] = []
        self.executed = 0
        self.last_compression_at: int | None = None
        self.shown: tuple[str, str] | None = None
        """(raw, compressed) text of the latest observation when it was compressed."""
        self.pending: dict[str, Any] = {}
        self.counts = {"history_compressions": 0, "observation_compressions": 0, "empty_compressions": 0}

    def start(self, task: Task, brief: Brief, first: Observation) -> None:
        self.brief = brief
        self.goal = first.goal

    @property
    def summary(self) -> str:
        return "\n\n".join(self.summaries)

    def _compress(self, guideline: str, body: str) -> str:
        prompt = Prompt(
            messages=(Message("system", COMPRESSOR_SYSTEM), Message("user", f"{guideline}\n\n{body}")),
            max_tokens=self.config.compressor_max_tokens,
        )
        return self.model.generate(prompt, role="compressor").text

    def _maybe_compress_history(self) -> None:
        c = self.config
        k = c.preserve_last_k
        span = self.steps[: len(self.steps) - k]
        if not span or c.mode == "obs":
            return
        if (
            self.last_compression_at is not None
            and self.executed - self.last_compression_at < c.min_turns_between
        ):
            return
        previous = self.summary if c.summary_rule == "reset" else ""
        size = self.tokens.count(previous + role_tagged(span))
        if c.t_hist != -1 and size <= c.t_hist:
            return
        body = (
            f"User instruction:\n{self.goal}\n\nPrevious summary:\n<previous_summary>\n{previous}\n"
            f"</previous_summary>\n\nInteraction history:\n{role_tagged(span)}"
        )
        new = after_heading(self._compress(history_guideline(c.guideline, c.domain), body), "history summary")
        if not new:
            self.counts["empty_compressions"] += 1
            self.pending["history"] = {"steps": len(span), "tokens": size, "empty": True}
            return
        self.summaries = [new] if c.summary_rule == "reset" else [*self.summaries, new]
        self.steps = self.steps[len(span) :]
        self.last_compression_at = self.executed
        self.counts["history_compressions"] += 1
        self.pending["history"] = {
            "steps": len(span),
            "tokens": size,
            "summary_tokens": self.tokens.count(new),
        }

    def prompt(self, obs: Observation) -> Prompt:
        self._maybe_compress_history()
        current = obs
        if self.shown is not None and obs.text == self.shown[0]:
            current = dataclasses.replace(obs, text=self.shown[1])
        recent = json.dumps(self.steps, indent=1, ensure_ascii=False) if self.steps else "none yet"
        sections = [
            example_section(self.brief),
            f"Task: {self.goal}",
            f"Summary of the earlier steps:\n{self.summary}" if self.summaries else "",
            ("Latest steps:\n" if self.summaries else "Previous steps:\n") + recent,
            f"Current observation:\n{render_observation(current)}",  # last: it changes every turn
        ]
        return policy_prompt(
            self.brief,
            obs,
            sections,
            max_json_retries=self.config.max_json_retries,
        )

    def _observation_text(self, after: Observation) -> str:
        c = self.config
        size = self.tokens.count(after.text)
        if c.mode == "history" or after.done or size <= c.t_obs:
            return after.text
        session = role_tagged(self.steps) or "(no steps yet)"
        if c.history_summary_in_obs and self.summaries:
            session = f"Summary of earlier steps:\n{self.summary}\n\n{session}"
        body = (
            f"User instruction:\n{self.goal}\n\nInteraction history:\n{session}\n\n"
            f"Current observation:\n{after.text}"
        )
        refined = after_heading(
            self._compress(observation_guideline(c.guideline), body), "refined observation"
        )
        if not refined:
            self.counts["empty_compressions"] += 1
            self.pending["observation"] = {"tokens": size, "empty": True}
            return after.text
        self.counts["observation_compressions"] += 1
        self.pending["observation"] = {"tokens": size, "compressed_tokens": self.tokens.count(refined)}
        return refined

    def update(self, step: Step) -> Mapping[str, Any] | None:
        if step.after is None:
            return None
        text = self._observation_text(step.after)
        self.shown = (step.after.text, text) if text != step.after.text else None
        self.steps.append(
            {
                "thought": step.decision.thought,
                "action": action_json(step.decision.action),
                "observation": text,
            }
        )
        self.executed += 1
        record, self.pending = self.pending, {}
        return record or None

    def report(self) -> Mapping[str, Any]:
        c = self.config
        return {
            **self.counts,
            "t_hist": c.t_hist,
            "t_obs": c.t_obs,
            "guideline": c.guideline,
            "domain": c.domain,
            "tokenizer": c.tokenizer,
            "summary_tokens": self.tokens.count(self.summary),
            "steps_verbatim": len(self.steps),
        }
