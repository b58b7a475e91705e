"""Peak and Dependency of an episode's policy context, from the usage of each policy call (SPEC-BASE §2.5).

Peak is the largest policy input (system prompt included) of the episode. Dependency is ACON's measure of how
much generated text rests on how much context, Σ_t (n_in,t + 2·n_out,t)·n_out,t / 2 over the policy calls t
(retries and repairs included), reported in millions.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from pos_bench.types import Usage

POLICY_ROLE = "agent"
"""The role every method's policy calls carry (SPEC-BASE §2.5: the `agent` bucket)."""


@dataclass(frozen=True)
class ContextLoad:
    peak_input_tokens: int = 0
    """Largest input of one policy call."""
    dependency_m: float = 0.0
    """Σ_t (n_in,t + 2·n_out,t)·n_out,t / 2, divided by 10⁶."""


def context_load(calls: Iterable[tuple[str, Usage]]) -> ContextLoad:
    """Peak and Dependency of the policy calls among `calls` (role, usage of one call)."""
    policy = [u for role, u in calls if role == POLICY_ROLE]
    if not policy:
        return ContextLoad()
    dependency = sum((u.input_tokens + 2 * u.output_tokens) * u.output_tokens / 2 for u in policy)
    return ContextLoad(max(u.input_tokens for u in policy), dependency / 1e6)
