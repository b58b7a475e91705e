"""The four small interfaces every plug-in implements. Signatures and contracts only."""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol, Self, runtime_checkable

from pos_bench.events import Event
from pos_bench.truth import Claim, WorldTruth
from pos_bench.types import Action, Brief, Decision, Observation, Prompt, Reply, Score, Step, Task, Upstream


@runtime_checkable
class Model(Protocol):
    """Turns a prompt into a reply. Methods label each call with a `role` for per-role accounting."""

    name: str

    def describe(self) -> Mapping[str, Any]:
        """Identity and settings recorded in run metadata (provider, model id, runtime, temperature…)."""
        ...

    def generate(self, prompt: Prompt, *, role: str = "agent") -> Reply: ...


@runtime_checkable
class ContextLimited(Protocol):
    """A model whose context window is fixed and known, and which can count a prompt's tokens without
    answering it (the embedded model). Pre-flight uses it to stop a run whose first prompt cannot fit."""

    @property
    def context_window(self) -> int:
        """Tokens the model can attend to: prompt and reply together."""
        ...

    def count_tokens(self, prompt: Prompt) -> int: ...


@runtime_checkable
class Env(Protocol):
    """One playable instance of a benchmark. May call its model for benchmark roles (provider, judge)."""

    def reset(self, task: Task) -> Observation:
        """Load `task` and return the first observation (no action taken)."""
        ...

    def step(self, action: Action) -> Observation:
        """Execute one action. A malformed or unknown action yields an explanatory observation."""
        ...

    def score(self) -> Score:
        """The outcome of the episode played since the last reset."""
        ...

    def close(self) -> None: ...


@runtime_checkable
class TruthfulEnv(Env, Protocol):
    """An environment that knows the ground truth of its world (issue 28); the truth does not depend on who
    plays. Benchmarks whose environments lack this method have no truth to score memories against."""

    def truth(self) -> WorldTruth | None:
        """The world as it is now (after the last reset or step); None when the benchmark's `truth` setting
        turned it off."""
        ...


@runtime_checkable
class Benchmark(Protocol):
    brief: Brief
    max_turns: int

    def tasks(self) -> Sequence[Task]:
        """The evaluation tasks in their fixed order, already sliced by start / limit."""
        ...

    def make_env(self, model: Model) -> Env:
        """A fresh environment; `model` serves benchmark-side roles and is recorded like any other."""
        ...


@runtime_checkable
class ExpertBenchmark(Benchmark, Protocol):
    """A benchmark with a planner expert of its own (ALFWorld's PDDL planner, the toy household's oracle).

    Only `method=expert` asks for it: the plan can cost far more than an engine step.
    """

    def make_expert_env(self, model: Model) -> Env:
        """Like `make_env`, but every observation carries the expert's remaining plan in `info["plan"]`."""
        ...


@runtime_checkable
class ComputeBoundBenchmark(Benchmark, Protocol):
    """A benchmark whose environments compute their steps in the worker rather than wait (ALFWorld's engine):
    the runner lets at most as many of their steps run at once as the host has cores (`runner/env_slots.py`)."""

    compute_bound: bool


Gate = Callable[[], AbstractContextManager[object]]
"""A compute slot, held while an environment steps (`loop.play`'s `env_gate`; `runner/env_slots.py`)."""

_PLAYING: contextvars.ContextVar[Gate] = contextvars.ContextVar("env_gate", default=contextlib.nullcontext)


@contextlib.contextmanager
def playing_under(gate: Gate) -> Iterator[None]:
    """While an episode plays (the runner sets it): `local_compute()` in this thread holds `gate`."""
    token = _PLAYING.set(gate)
    try:
        yield
    finally:
        _PLAYING.reset(token)


def local_compute() -> AbstractContextManager[object]:
    """What a method holds while a model of its own computes in the worker (PACE's encoder): a slot of the
    episode's gate, as an environment step takes, or nothing outside an episode."""
    return _PLAYING.get()()


@runtime_checkable
class LabelledBenchmark(Benchmark, Protocol):
    """A benchmark with a setting that decides what its scores mean (ClinDiag's judge): `labels` joins the
    run's labels, so run.json, the summary and every table row show it."""

    labels: Mapping[str, str]


@runtime_checkable
class SourcedBenchmark(Benchmark, Protocol):
    """A benchmark that runs on outside code the user supplies (LOCA-bench's checkout): which code it was is
    part of the run's identity (run.json's `upstream`, and the fingerprint)."""

    def upstream(self) -> Upstream:
        """The outside code's identity; asked once per run, before the first episode."""
        ...


@runtime_checkable
class RescorableBenchmark(Benchmark, Protocol):
    """A benchmark whose score is a function of the episode's transcript, so a run can be judged again."""

    def score_transcript(self, task: Task, events: Sequence[Event], model: Model) -> Score:
        """Score the episode `events` (its events.jsonl, read by `pos_bench.events.read`) record; `model` serves
        benchmark roles only."""
        ...


@runtime_checkable
class Method(Protocol):
    """An agent's memory: builds the policy prompt and updates itself from each transition.

    One instance per episode (the runner builds it from a `_partial_` factory), used as a context manager.
    """

    def __enter__(self) -> Self: ...

    def __exit__(self, *exc: object) -> None: ...

    def unsupported(self, first: Observation) -> str | None:
        """One sentence saying why this method cannot play an episode that opens with `first` (e.g. it needs
        commands and the benchmark offers tools), or None. The runner asks before the first episode, so an
        unsupported benchmark × method pair stops the run at once instead of failing every episode."""
        ...

    def start(self, task: Task, brief: Brief, first: Observation) -> None: ...

    def prompt(self, obs: Observation) -> Prompt | Decision:
        """The next policy prompt, or a ready decision for a policy that needs no model."""
        ...

    def update(self, step: Step) -> Mapping[str, Any] | None:
        """Absorb a transition; return what the transcript should show for it."""
        ...

    def report(self) -> Mapping[str, Any]:
        """End-of-episode record stored in `result.json` (e.g. the final belief)."""
        ...


@runtime_checkable
class ClaimingMethod(Method, Protocol):
    """A method that keeps a state of the world and can say what it claims (issue 28). Methods without this
    capability (raw history, ACON, PACE) keep no state: there is nothing to score."""

    def claims(self) -> tuple[Claim, ...]:
        """What the memory states about the world now, after the last `start` or `update`."""
        ...


@runtime_checkable
class EventfulMethod(Method, Protocol):
    """A method whose `prompt` can do something the transcript must show as its own event (a compaction of
    the policy conversation): the loop asks right after each `prompt` and writes what it gets, in order."""

    def events(self, turn: int) -> Sequence[Event]:
        """The events since the last call, stamped with `turn`; each is returned once."""
        ...


_IMPLEMENTS: dict[tuple[type, type], bool] = {}


def implements(obj: object, protocol: type) -> bool:
    """`isinstance(obj, protocol)` for a runtime-checkable protocol of methods, decided once per class of `obj`.

    Python checks such a protocol by looking up each of its members on the object, some 15 µs in 3.11, and the
    loop asks at every call and step whether its method claims or makes events and whether its environment
    knows its truth. Every instance of a class answers alike when the protocol names only methods, which a
    class defines for all its instances (a wrapper that forwards unknown names to another object, `__getattr__`,
    would not: none of the protocols asked here is met that way)."""
    key = (type(obj), protocol)
    found = _IMPLEMENTS.get(key)
    if found is None:
        found = _IMPLEMENTS[key] = isinstance(obj, protocol)
    return found


class MethodBase:
    """Defaults shared by methods: context-manager plumbing and an empty report."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def unsupported(self, first: Observation) -> str | None:
        return None

    def report(self) -> Mapping[str, Any]:
        return {}
