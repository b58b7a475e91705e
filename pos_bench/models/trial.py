"""`Trial`: the wrapper that marks every request of an episode with the episode's trial (`runner.trials`).

The mark (`Prompt.trial`) makes the trials of one task independent calls: from trial 1 on it is part of the
response-cache key (so a replay reproduces each trial, and trial 0 keeps the key it always had), and a provider
that takes a seed sends it as the seed."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from pos_bench.protocols import Model
from pos_bench.types import Prompt, Reply


class Trial:
    """Wraps a model so every prompt it passes on carries `trial`; outermost, before the cache sees the prompt."""

    def __init__(self, model: Model, trial: int):
        if trial < 0:
            raise ValueError(f"a trial index is ≥ 0, got {trial}")
        self.inner = model
        self.name = model.name
        self.trial = trial

    def describe(self) -> Mapping[str, Any]:
        return self.inner.describe()

    def generate(self, prompt: Prompt, *, role: str = "agent") -> Reply:
        return self.inner.generate(replace(prompt, trial=self.trial), role=role)
