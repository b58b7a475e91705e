"""Prompt tokens reused per turn: how much of each turn's prompts a server's prefix cache served instead of
evaluating them again, read from an episode's transcript (`events.jsonl`).

A `call` event's usage holds the prompt's tokens (`input_tokens`) and the part the server reported as reused
(`cached_input_tokens`: llama.cpp's `cache_n`, OpenAI's `cached_tokens`); the rest was evaluated. Calls are
grouped by the turn they serve: a policy call opens turn t (1-based), and the method's own calls after turn t's
environment step (belief update, Sentinel, summaries) belong to turn t too; calls before the first policy call
(a belief's initialisation) form turn 0.

A reply served by the run's response cache (`cache.mode`) reached no server, so it has no reuse to report: it is
counted apart (`TurnReuse.from_response_cache`) and left out of the tokens. To measure a server's prefix reuse on
every call, run with `cache.mode=off`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from pos_bench import events
from pos_bench.transcript import POLICY_ROLE


@dataclass(frozen=True)
class Tokens:
    """Prompt tokens and time of some calls."""

    calls: int = 0
    prompt: int = 0
    reused: int = 0
    wall_seconds: float = 0.0
    cpu_seconds: float | None = None
    """None when no call recorded its CPU time (transcripts written before it was kept)."""

    @property
    def evaluated(self) -> int:
        return self.prompt - self.reused

    @property
    def evaluated_share(self) -> float | None:
        """Evaluated ÷ prompt tokens; None for calls without a reported prompt size."""
        return self.evaluated / self.prompt if self.prompt else None

    def __add__(self, other: Tokens) -> Tokens:
        cpu = (
            None
            if self.cpu_seconds is None and other.cpu_seconds is None
            else (self.cpu_seconds or 0.0) + (other.cpu_seconds or 0.0)
        )
        return Tokens(
            self.calls + other.calls,
            self.prompt + other.prompt,
            self.reused + other.reused,
            self.wall_seconds + other.wall_seconds,
            cpu,
        )


@dataclass(frozen=True)
class TurnReuse:
    """One turn's calls, per role and summed."""

    turn: int
    """0: the method's calls before the first policy call; t ≥ 1: policy turn t and the updates after it."""
    roles: Mapping[str, Tokens] = field(default_factory=dict)
    from_response_cache: int = 0
    """Calls of this turn answered by the run's response cache (not in `roles`)."""

    @property
    def total(self) -> Tokens:
        return sum(self.roles.values(), Tokens())


def _of_call(call: events.Call) -> Tokens:
    return Tokens(1, call.usage.input_tokens, call.usage.cached_input_tokens, call.seconds, call.cpu_seconds)


def turn_reuse(log: Iterable[events.Event]) -> list[TurnReuse]:
    """The turns of one episode's events in order, each with its calls' tokens per role. A reply served by
    the response cache (no server saw the prompt) is only counted, in `from_response_cache`."""
    ended = 0  # turns whose environment step has been taken
    turns: dict[int, dict[str, Tokens]] = {}
    hits: dict[int, int] = {}
    for event in log:
        if isinstance(event, events.TURN_KINDS):
            ended = max(ended, event.turn + 1)
        elif isinstance(event, events.Call):
            turn = ended + 1 if event.role == POLICY_ROLE else ended
            roles = turns.setdefault(turn, {})
            if event.cached:
                hits[turn] = hits.get(turn, 0) + 1
            else:
                roles[event.role] = roles.get(event.role, Tokens()) + _of_call(event)
    return [TurnReuse(turn, roles, hits.get(turn, 0)) for turn, roles in sorted(turns.items())]


def episode_reuse(episode: Path) -> list[TurnReuse]:
    """`turn_reuse` of an episode folder's `events.jsonl`."""
    return turn_reuse(events.read(episode / "events.jsonl"))


def after_first(turns: Iterable[TurnReuse]) -> Tokens:
    """The policy turns after the first, summed (turn 0 and turn 1 pay for the prompts' stable parts)."""
    return sum((t.total for t in turns if t.turn >= 2), Tokens())
