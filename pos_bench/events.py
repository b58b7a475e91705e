"""One typed record per transcript event kind, and the one way each crosses `events.jsonl`.

Written through `Transcript.write(event)` (`row`: the JSON object of one line) and read back through `read(path)`
or `parse(row)`. A line of a kind this module does not know is read as `Other`, and a field an older transcript
lacks takes its default, so transcripts written by earlier versions stay readable.
"""

from __future__ import annotations

import functools
import json
import re
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, ClassVar

from pos_bench.truth import Claim, Fact, Term, WorldTruth
from pos_bench.types import Usage, to_jsonable, usage_from_json


class DamagedFile(ValueError):
    """A run folder's file cannot be read as what it should be; the message is one line naming the file (and
    the line), for command-line tools to print before exiting with status 2."""


def text_lines(path: Path) -> Iterator[tuple[int, str]]:
    """The numbered lines of a UTF-8 text file; bytes that are not UTF-8 are a `DamagedFile` naming the line."""
    with path.open("rb") as f:
        for number, raw in enumerate(f, start=1):
            try:
                yield number, raw.decode("utf-8")
            except UnicodeDecodeError as error:
                raise DamagedFile(f"{path} line {number} is not UTF-8 text (byte {error.start})") from None


OMIT_NONE = {"omit_none": True}
"""Field metadata: the key is left out of the line when the value is None."""


@dataclass(frozen=True)
class Event:
    kind: ClassVar[str] = ""
    time: float | None = field(default=None, kw_only=True)
    """Seconds since the epoch; set when written."""

    @classmethod
    def decoded(cls, values: dict[str, Any]) -> dict[str, Any]:
        """The constructor arguments of a line's values: records nested in it rebuilt from JSON."""
        return values


@dataclass(frozen=True)
class Reset(Event):
    kind: ClassVar[str] = "reset"
    task: Any = None
    observation: Any = None
    cpu_seconds: float | None = field(default=None, metadata=OMIT_NONE)
    """This process's CPU time in the environment's reset (as `Step.cpu_seconds`)."""


@dataclass(frozen=True)
class Call(Event):
    """One model call through `Recorded`."""

    kind: ClassVar[str] = "call"
    role: str = "agent"
    prompt: Any = None
    reply: str = ""
    usage: Usage = field(default_factory=Usage)
    cached: bool = False
    seconds: float = 0.0
    served: str | None = field(default=None, metadata=OMIT_NONE)
    """The model revision the server reported, when it reported one."""
    cpu_seconds: float | None = field(default=None, metadata=OMIT_NONE)
    """This process's CPU time during the call (all its threads): an in-process model's own compute, which on a
    shared host is a fairer cost than `seconds`; with several thread-slot workers it includes theirs too."""

    @classmethod
    def decoded(cls, values: dict[str, Any]) -> dict[str, Any]:
        if isinstance(values.get("usage"), Mapping):
            values["usage"] = usage_from_json(values["usage"])
        return values


@dataclass(frozen=True)
class CallError(Event):
    kind: ClassVar[str] = "call_error"
    role: str = "agent"
    prompt: Any = None
    error: str = ""


@dataclass(frozen=True)
class ParseFailure(Event):
    kind: ClassVar[str] = "parse_failure"
    turn: int = 0
    attempt: int = 0
    problem: str = ""
    retry: str = ""
    """`json` or `missing_action`: which retry budget the repair draws on."""


@dataclass(frozen=True)
class ContextError(Event):
    """A method failure on the terminal transition (`update`) or in `report()` (`export`)."""

    kind: ClassVar[str] = "context_error"
    step: int = 0
    phase: str = ""
    error_type: str = ""
    error: str = ""
    traceback: str | None = field(default=None, metadata=OMIT_NONE)


@dataclass(frozen=True)
class MetaAction(Event):
    kind: ClassVar[str] = "meta_action"
    turn: int = 0
    decision: Any = None


@dataclass(frozen=True)
class Memory(Event):
    """The record a method's `update` returned for a turn (for PoS, read it through `PosMemory`)."""

    kind: ClassVar[str] = "memory"
    turn: int = 0
    record: Any = None


@dataclass(frozen=True)
class Compaction(Event):
    """The policy conversation was compacted before a policy call (methods `compaction`, `compaction_memory`):
    what the policy sees from then on is the compacted conversation."""

    kind: ClassVar[str] = "compaction"
    turn: int = 0
    strategy: str = ""
    """The strategy configured (inspect's class name, e.g. `CompactionAuto`)."""
    type: str = "summary"
    """inspect's compaction type: summary, edit or trim."""
    applied: str = ""
    """The strategy that produced the compacted input (differs from `strategy` when one delegates)."""
    fallback_reason: str | None = None
    """Why a delegating strategy did not use its preferred delegate (auto: native was not available)."""
    trigger: str = "threshold"
    tokens_before: int = 0
    tokens_after: int = 0
    messages_before: int = 0
    messages_after: int = 0
    summary: str | None = None
    """The summary the strategy wrote into the conversation (summary strategy), else None."""


@dataclass(frozen=True)
class TurnSpent(Event):
    kind: ClassVar[str] = "turn_spent"
    turn: int = 0


@dataclass(frozen=True)
class ActionsDropped(Event):
    kind: ClassVar[str] = "actions_dropped"
    turn: int = 0
    dropped: Any = None


@dataclass(frozen=True)
class Step(Event):
    kind: ClassVar[str] = "step"
    turn: int = 0
    thought: str | None = None
    action: Any = None
    observation: Any = None
    cpu_seconds: float | None = field(default=None, metadata=OMIT_NONE)
    """This process's CPU time in the environment's step (all its threads, as `Call.cpu_seconds`), model calls
    the environment made and its truth read after the step (`loop.read_truth`) included (ClinDiag's provider):
    what the environment cost where the run played."""


@dataclass(frozen=True)
class Score(Event):
    kind: ClassVar[str] = "score"
    score: Any = None


@dataclass(frozen=True)
class Error(Event):
    """An exception at the episode boundary (the runner) or while rescoring."""

    kind: ClassVar[str] = "error"
    error: str = ""
    traceback: str | None = field(default=None, metadata=OMIT_NONE)


_fact = functools.lru_cache(maxsize=1 << 16)(Fact)
"""`Fact`, one object per distinct fact recently read: an older transcript's `truth` event restates the whole
world, so an episode reads the same facts at every step, and building them anew was most of the cost of reading
its truth."""


def _facts(rows: Iterable[Mapping[str, Any]]) -> tuple[Fact, ...]:
    return tuple(_fact(**r) for r in rows)


@dataclass(frozen=True)
class Truth(Event):
    """The environment's ground truth after step `step` (-1: after the reset; steps are zero-based, as PoS
    numbers them), written for every method when the environment knows it (issue 28). The world's facts,
    names, goal, vocabulary and name shape are written when they differ from the episode's previous truth event
    and left out (None) otherwise: read them back through `truths`.

    The facts were written whole at every step. The world mostly stays as it was (ALFWorld: 49 steps in 50 of a
    raw episode against the stand-in), so most truth lines restated some 2 kB, and sorting and writing them
    was the largest share of the CPU a step's lines cost. An older transcript, whose every line has its facts,
    reads as before."""

    kind: ClassVar[str] = "truth"
    step: int = -1
    facts: tuple[Fact, ...] | None = field(default=None, metadata=OMIT_NONE)
    entities: tuple[str, ...] | None = field(default=None, metadata=OMIT_NONE)
    goal: tuple[Fact, ...] | None = field(default=None, metadata=OMIT_NONE)
    terms: tuple[Term, ...] | None = field(default=None, metadata=OMIT_NONE)
    entity_shape: str | None = field(default=None, metadata=OMIT_NONE)

    @classmethod
    def of(cls, step: int, world: WorldTruth, previous: WorldTruth | None = None) -> Truth:
        """The event for `world`, leaving out what is unchanged since `previous`."""
        p = previous

        def changed(mine: Any, theirs: Any) -> bool:
            return p is None or mine != theirs

        return cls(
            step=step,
            facts=tuple(sorted(world.facts)) if changed(world.facts, p and p.facts) else None,
            entities=tuple(sorted(world.entities)) if changed(world.entities, p and p.entities) else None,
            goal=tuple(sorted(world.goal)) if changed(world.goal, p and p.goal) else None,
            terms=world.terms if changed(world.terms, p and p.terms) else None,
            entity_shape=world.entity_shape if changed(world.entity_shape, p and p.entity_shape) else None,
        )

    def world(self, previous: WorldTruth | None = None) -> WorldTruth:
        """The truth this event states, what it leaves out taken from `previous` (the episode's last)."""
        p = previous or WorldTruth(facts=frozenset(), entities=frozenset())
        return WorldTruth(
            facts=p.facts if self.facts is None else frozenset(self.facts),
            entities=p.entities if self.entities is None else frozenset(self.entities),
            goal=p.goal if self.goal is None else frozenset(self.goal),
            terms=p.terms if self.terms is None else self.terms,
            entity_shape=p.entity_shape if self.entity_shape is None else self.entity_shape,
        )

    def restates(self, other: Truth) -> bool:
        """Whether this truth says what `other` said, at another step (a world that stayed as it was): it says
        nothing new, or it says again all that `other` said (an older transcript's way)."""
        return self.says_nothing_new() or replace(self, step=other.step, time=other.time) == other

    def says_nothing_new(self) -> bool:
        return (self.facts, self.entities, self.goal, self.terms, self.entity_shape) == (None,) * 5

    @classmethod
    def decoded(cls, values: dict[str, Any]) -> dict[str, Any]:
        if values.get("facts") is not None:
            values["facts"] = _facts(values["facts"])
        if values.get("goal") is not None:
            values["goal"] = _facts(values["goal"])
        if values.get("entities") is not None:
            values["entities"] = tuple(values["entities"])
        if values.get("terms") is not None:
            values["terms"] = tuple(
                Term(t["attribute"], t["value"], tuple(t["phrases"])) for t in values["terms"]
            )
        return values


@dataclass(frozen=True)
class TruthUnread(Event):
    """The environment's truth could not be read after step `step` (numbered as `Truth`): that step has no
    truth, and the episode plays on (`loop.record_truth`)."""

    kind: ClassVar[str] = "truth_unread"
    step: int = -1
    error: str = ""
    traceback: str | None = field(default=None, metadata=OMIT_NONE)


@dataclass(frozen=True)
class Claims(Event):
    """What the method's memory states about the world after step `step` (numbered as `Truth`), written where
    the environment reports its truth; a method that keeps no state (raw history, ACON, PACE) says so once,
    at the reset, with `keeps_state=False`. A memory operation rewrites its step's claims: the last counts."""

    kind: ClassVar[str] = "claims"
    step: int = -1
    claims: tuple[Claim, ...] = ()
    keeps_state: bool = True

    @classmethod
    def decoded(cls, values: dict[str, Any]) -> dict[str, Any]:
        values["claims"] = tuple(Claim(**c) for c in values.get("claims") or ())
        return values


def truths(stream: Iterable[Event]) -> dict[int, WorldTruth]:
    """Step → the truth after it, from an episode's events (each `Truth` completed by the one before)."""
    out: dict[int, WorldTruth] = {}
    last, before = None, None
    for event in stream:
        if isinstance(event, Truth):
            restated = before is not None and last is not None and event.restates(before)
            last = out[event.step] = last if restated else event.world(last)
            before = event
    return out


def claims(stream: Iterable[Event]) -> dict[int, tuple[Claim, ...]] | None:
    """Step → the claims held after it, from an episode's events; None when the method keeps no state or no
    claims were recorded."""
    out: dict[int, tuple[Claim, ...]] = {}
    for event in stream:
        if isinstance(event, Claims):
            if not event.keeps_state:
                return None
            out[event.step] = event.claims
    return out or None


@dataclass(frozen=True)
class Other(Event):
    """A line of a kind this version does not write."""

    name: str = ""
    data: Mapping[str, Any] = field(default_factory=dict)


KINDS: dict[str, type[Event]] = {
    cls.kind: cls
    for cls in (
        Reset,
        Call,
        CallError,
        ParseFailure,
        ContextError,
        MetaAction,
        Memory,
        Compaction,
        TurnSpent,
        ActionsDropped,
        Step,
        Score,
        Error,
        Truth,
        TruthUnread,
        Claims,
    )
}
TURN_KINDS = (Step, TurnSpent)
"""Events that end a turn (progress counts them)."""
CALL_KINDS = (Call, CallError)


@functools.cache
def written_fields(kind: type[Event]) -> tuple[tuple[str, bool], ...]:
    """The fields a line of event class `kind` holds, in order, each with whether it is left out when None."""
    return tuple((f.name, bool(f.metadata.get("omit_none"))) for f in fields(kind) if f.name != "time")


def row(event: Event, *, now: float | None = None) -> dict[str, Any]:
    """The JSON object of one `events.jsonl` line: kind, time, then the event's fields as plain values."""
    return {name: to_jsonable(value) for name, value in shallow_row(event, now=now).items()}


def shallow_row(event: Event, *, now: float | None = None) -> dict[str, Any]:
    """`row` with the field values as they are: `json.dumps(shallow_row(e), default=json_value)` writes the text
    of `row(e)` while the encoder, not Python, walks the lists and dicts of plain values (an action list, a
    schema), and only records meet Python (`json_value`)."""
    out: dict[str, Any] = {"kind": event.kind, "time": round(time.time() if now is None else now, 3)}
    for name, omit_none in written_fields(type(event)):
        value = getattr(event, name)
        if value is None and omit_none:
            continue
        out[name] = value
    return out


def parse(data: Mapping[str, Any]) -> Event:
    """The typed event of one line's JSON object."""
    kind = str(data.get("kind", ""))
    cls = KINDS.get(kind)
    if cls is None:
        rest = {k: v for k, v in data.items() if k not in ("kind", "time")}
        return Other(name=kind, data=rest, time=data.get("time"))
    values = {f.name: data[f.name] for f in fields(cls) if f.name in data}
    return cls(**cls.decoded(values))


def parse_all(rows: Iterable[Mapping[str, Any]]) -> list[Event]:
    return [parse(r) for r in rows]


def read(path: Path, kinds: tuple[type[Event], ...] | None = None) -> Iterator[Event]:
    """The events of an `events.jsonl` file, in order; none when the file is absent. A line that is not a
    JSON object (the torn last line of a killed run) is skipped.

    `kinds` keeps only the events of those types. A reader that needs a few kinds should say so: the line of
    another known kind is then skipped before its JSON is decoded (`line_kind`), and decoding is most of the
    cost of a transcript, whose bulk is the prompts of its `call` lines. Every line is still checked as UTF-8.

    An older transcript's `truth` restates the whole world at every step, and the world mostly stays as it was
    (ALFWorld: 24 steps in 25): a truth line that says, from its facts on, what the last one said is not decoded
    again, only its step and time; its event shares the last one's facts. (A truth written now leaves out what
    did not change, `Truth`.)"""
    skip = frozenset() if kinds is None else frozenset(KINDS) - {cls.kind for cls in kinds}
    said: tuple[str, Truth] | None = None
    """The last truth: its line from its facts on, and its event."""
    for line in kept_lines(path, skip):
        start = TRUTH_START.match(line)
        if start and said and line[start.end() :] == said[0]:
            head = json.loads(line[: start.end() - 2] + "}")
            event: Event = replace(said[1], step=head["step"], time=head["time"])
        else:
            data = json_object(line)
            if data is None:
                continue
            event = parse(data)
            if start and isinstance(event, Truth):
                said = (line[start.end() :], event)
        if kinds is None or isinstance(event, kinds):
            yield event


LINE_START = '{"kind": "'
"""How `Transcript.write` begins every line: `row` puts the kind first, `json.dumps` keeps that order."""

TRUTH_START = re.compile(r'\{"kind": "truth", "time": [-+0-9.eE]+, "step": -?[0-9]+, ')
"""A `truth` line as `Transcript.write` lays it out, up to its facts (`row` writes the fields in order)."""


def line_kind(line: str) -> str | None:
    """The kind of an `events.jsonl` line read from its start, without decoding its JSON (a JSON string holds
    no bare quote, so the kind ends at the next one); None for a line laid out otherwise."""
    if not line.startswith(LINE_START):
        return None
    end = line.find('"', len(LINE_START))
    kind = line[len(LINE_START) : end]
    return kind if end > 0 and "\\" not in kind else None


def kept_lines(path: Path, skip: frozenset[str] = frozenset()) -> Iterator[str]:
    """The lines of a JSON-lines file but those whose `line_kind` is in `skip`; none when it is absent. Bytes
    that are not UTF-8 are a `DamagedFile`, on any line."""
    if not path.is_file():
        return
    for _, line in text_lines(path):
        if not (skip and line_kind(line) in skip):
            yield line


def json_object(line: str) -> dict[str, Any] | None:
    """A line's JSON object; None for a line that is not one (the torn last line of a killed run)."""
    try:
        data = json.loads(line)
    except (json.JSONDecodeError, RecursionError):
        return None
    return data if isinstance(data, dict) else None


def json_objects(path: Path, skip: frozenset[str] = frozenset()) -> Iterator[dict[str, Any]]:
    """The JSON objects of a JSON-lines file, in order (`kept_lines`, `json_object`): a line that is not a JSON
    object is skipped."""
    for line in kept_lines(path, skip):
        data = json_object(line)
        if data is not None:
            yield data


@dataclass(frozen=True)
class PosMemory:
    """The parts of PoS's memory record (`Memory.record`) that the report and the analysis read."""

    step: int | None = None
    status: str | None = None
    context_error: Any = None
    audit: list[Mapping[str, Any]] = field(default_factory=list)
    progress: float | None = None
    health: Mapping[str, Any] | None = None
    """The health record of `pos.health` (health_score, trapped, trapping_pattern, gap_dimension …)."""
    recovery: Mapping[str, Any] | None = None
    recovery_ended: list[Mapping[str, Any]] = field(default_factory=list)
    active_gap: Mapping[str, Any] | None = None
    """The committed belief's Active Gap (written under the key `frontier`)."""
    has_active_gap: bool = False
    belief_text: str | None = None

    @classmethod
    def of(cls, record: Any) -> PosMemory | None:
        """The PoS view of a memory record, or None when the record is another method's."""
        if not isinstance(record, Mapping) or ("status" not in record and "context_error" not in record):
            return None
        committed = record.get("committed_belief") or {}
        return cls(
            step=record.get("step"),
            status=record.get("status"),
            context_error=record.get("context_error"),
            audit=list(record.get("audit") or []),
            progress=(record.get("progress") or {}).get("progress"),
            health=record.get("health") or None,
            recovery=record.get("recovery") or None,
            recovery_ended=list(record.get("recovery_ended") or []),
            active_gap=committed.get("frontier"),
            has_active_gap="frontier" in committed,
            belief_text=record.get("belief_text") or None,
        )
