"""The compaction baseline's settings and the inspect_ai strategy object they select (issue 42)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from inspect_ai.model import (
    CompactionAuto,
    CompactionEdit,
    CompactionNative,
    CompactionStrategy,
    CompactionSummary,
    CompactionTrim,
)

from baselines.tokens import ENCODINGS

Strategy = Literal["summary", "edit", "trim", "auto", "native"]
STRATEGIES = ("summary", "edit", "trim", "auto", "native")

NATIVE_REFUSAL = (
    "strategy=native needs a provider that compacts on its own side (OpenAI Responses, Anthropic) reached "
    "through inspect_ai's own providers, and pos_bench's model layer talks to no such endpoint: use "
    "strategy=auto, which tries native and falls back to summary"
)


@dataclass(frozen=True)
class CompactionConfig:
    """Defaults are ALFWorld's; `conf/method_bench/compaction/<bench>.yaml` sets the others (docs/compaction.md)."""

    strategy: Strategy = "summary"
    """Which inspect_ai strategy compacts the policy conversation."""
    threshold: int | float = 1536
    """When to compact: tokens of the conversation (an int > 1), or a fraction (≤ 1.0) of `context_window`."""
    context_window: int | None = None
    """The policy model's context window, for a fractional threshold. None takes the window of a model that
    states one (`ContextLimited`, when the method is handed it directly; the runner's recording wrapper does
    not state it), else a fractional threshold is refused."""
    memory_tool: bool = False
    """Offer inspect's `memory` tool as a meta-action (method `compaction_memory`)."""
    memory_warning: bool = True
    """inspect's pre-compaction warning (at 90% of the threshold) when the memory tool is offered."""
    keep_tool_uses: int = 3
    """edit: the most recent observations kept verbatim; older ones are replaced by inspect's placeholder."""
    preserve: float = 0.8
    """trim: the share of conversation messages kept."""
    instructions: str | None = None
    """summary / auto: extra instructions inserted into inspect's summary prompt."""
    summary_max_tokens: int = 4096
    """Reply budget of one `compactor` call."""
    tokenizer: str = "o200k_base"
    """How the threshold counts tokens: `o200k_base` or `chars4` (baselines.tokens)."""
    max_json_retries: int = 2

    def __post_init__(self) -> None:
        checks = {
            "strategy": self.strategy in STRATEGIES,
            "threshold": isinstance(self.threshold, (int, float)) and self.threshold > 0,
            "context_window": self.context_window is None or self.context_window > 0,
            "keep_tool_uses": self.keep_tool_uses >= 0,
            "preserve": 0.0 < self.preserve <= 1.0,
            "summary_max_tokens": self.summary_max_tokens > 0,
            "tokenizer": self.tokenizer in ENCODINGS,
            "max_json_retries": self.max_json_retries >= 0,
        }
        bad = [name for name, ok in checks.items() if not ok]
        if bad:
            raise ValueError(
                f"bad compaction settings {', '.join(f'{n}={getattr(self, n)!r}' for n in bad)} "
                f"(strategy is one of {STRATEGIES}; threshold tokens > 1 or a fraction ≤ 1.0)"
            )

    def threshold_tokens(self, context_window: int | None) -> int:
        """The trigger in tokens: the threshold itself, or its fraction of the context window."""
        if isinstance(self.threshold, int) or self.threshold > 1.0:
            return int(self.threshold)
        window = self.context_window or context_window
        if window is None:
            raise ValueError(
                f"compaction threshold={self.threshold} is a fraction of the context window, and the model does "
                "not say its window: set method.context_window=<tokens>, or give the threshold in tokens"
            )
        return int(self.threshold * window)

    def strategy_object(self, threshold: int) -> CompactionStrategy:
        """inspect_ai's own strategy class for `strategy`, with this config's options."""
        warn = self.memory_tool and self.memory_warning
        if self.strategy == "summary":
            return CompactionSummary(threshold=threshold, memory=warn, instructions=self.instructions)
        if self.strategy == "edit":
            return CompactionEdit(threshold=threshold, memory=warn, keep_tool_uses=self.keep_tool_uses)
        if self.strategy == "trim":
            return CompactionTrim(threshold=threshold, memory=warn, preserve=self.preserve)
        if self.strategy == "auto":
            return CompactionAuto(threshold=threshold, instructions=self.instructions, memory=warn)
        return CompactionNative(threshold=threshold, instructions=self.instructions, memory=warn)
