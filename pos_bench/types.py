"""The records that cross module boundaries: tasks, observations, prompts, replies, decisions, results.

Everything here is a frozen dataclass holding plain values, so it pickles across worker processes and
serialises to JSON with `to_jsonable`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal


@dataclass(frozen=True)
class ToolCall:
    """A function-style action for tool benchmarks (ClinDiag, RCA-100, LOCA)."""

    name: str
    arguments: Mapping[str, Any] = field(default_factory=dict)


Action = str | ToolCall
"""A command string (ALFWorld) or a tool call."""


def action_json(action: Action | None) -> Any:
    """An action as memories and prompts show it: the command itself, or a tool call's name and arguments."""
    return (
        {"name": action.name, "arguments": dict(action.arguments)} if isinstance(action, ToolCall) else action
    )


@dataclass(frozen=True)
class Task:
    """One episode to play. `source` locates its data (a game file, a case directory)."""

    id: str
    source: str = ""
    meta: Mapping[str, Any] = field(default_factory=dict)
    """Benchmark facts about the task that the summary may group by (e.g. task type, subset)."""
    trial: int = 0
    """Which repetition of the task this episode is (`runner.trials`); 0 is the first, the only one by default."""


@dataclass(frozen=True)
class Brief:
    """What a benchmark tells every method about itself; identical for every method (SPEC-BASE §2.3)."""

    system: str
    """The policy system prompt."""
    example: str = ""
    """A short, fictional format-only example shown before the task (every method, PoS included)."""
    reasoning_hint: str = ""
    """A one-sentence reasoning hint shown by the history-based baselines and not under PoS (SPEC-BASE §2.3:
    RCA-100's hint in place of a format example; SPEC-POS §9.1)."""
    final_turn_note: str = ""
    """Added to the observation on the last turn; empty for benchmarks without one."""
    mode: Literal["execution", "diagnostic"] = "execution"
    """PoS task mode (SPEC-POS §14)."""
    policy_max_tokens: int = 512
    """Reply budget of a policy call (SPEC-BASE §3: ALFWorld 512, the others 4096)."""
    max_actions_per_turn: int = 1
    """Actions one policy reply may hold, executed in order (SPEC-BASE §2.2: RCA-100 3, the others 1). Above 1
    the reply holds an `"actions"` list instead of one `"action"`."""
    no_tool_call_is_final: bool = False
    """A reply whose action is not a tool call (absent, null or plain text) is the agent's final answer: it
    goes to the environment as a plain-text action, which grades the episode (LOCA-Bench, as upstream does).
    Otherwise such a reply gets the missing-action retry."""

    def __post_init__(self) -> None:
        if self.max_actions_per_turn < 1:
            raise ValueError(f"max_actions_per_turn must be ≥ 1, got {self.max_actions_per_turn}")


@dataclass(frozen=True)
class Observation:
    """What the agent sees after reset or after an action."""

    text: str
    actions: tuple[str, ...] = ()
    """Admissible command strings (command benchmarks)."""
    tools: tuple[Mapping[str, Any], ...] = ()
    """OpenAI function-tool schemas (tool benchmarks)."""
    done: bool = False
    goal: str = ""
    """The task string; set on every observation so methods never parse it out of text."""
    notes: tuple[str, ...] = ()
    """Notes the loop adds, such as the final-turn directive."""
    info: Mapping[str, Any] = field(default_factory=dict)
    tool_error: bool = False
    """The action reached the environment and failed there (a tool raised, a call it could not run): a
    `tool_error` in the episode's failure ledger."""


@dataclass(frozen=True)
class Message:
    role: Literal["system", "user", "assistant"]
    content: str


@dataclass(frozen=True)
class Prompt:
    """A model request: messages plus an optional JSON schema the reply must follow."""

    messages: tuple[Message, ...]
    schema: Mapping[str, Any] | None = None
    """JSON schema for structured output (from a pydantic model)."""
    max_tokens: int | None = None
    meta_actions: tuple[str, ...] = ()
    """Names of method meta-actions (e.g. `glimpse`) that the loop answers without an env step."""
    max_json_retries: int = 1
    """JSON repair requests the loop may send when a policy reply holds no JSON object (the missing-action
    retry is counted apart, by the loop's `RetryBudget`)."""
    trial: int = 0
    """The episode's trial (`Task.trial`): part of the cache key from trial 1 on, and the seed of providers that
    take one, so the trials of a task are independent calls."""

    def extended(self, *messages: Message) -> Prompt:
        return dataclasses.replace(self, messages=self.messages + tuple(messages))


@dataclass(frozen=True)
class Usage:
    input_tokens: int = 0
    """Every prompt token sent, the cached ones included."""
    output_tokens: int = 0
    calls: int = 0
    cached_input_tokens: int = 0
    """Input tokens the server served from its prefix cache, as it reports them (OpenAI-compatible
    `usage.prompt_tokens_details.cached_tokens`, Anthropic `cache_read_input_tokens`); part of `input_tokens`."""
    cache_write_tokens: int = 0
    """Input tokens written to the provider's prompt cache (Anthropic `cache_creation_input_tokens`); part of
    `input_tokens`."""

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.calls + other.calls,
            self.cached_input_tokens + other.cached_input_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
        )


@dataclass(frozen=True)
class Reply:
    text: str
    usage: Usage = Usage()
    cached: bool = False
    """True when the reply came from the response cache instead of the provider."""
    served: str | None = None
    """The model revision the server says answered (OpenAI-compatible: the response's `model`, plus its
    `system_fingerprint`), when it says; kept with a cached reply."""
    refused: str | None = None
    """Only on a response-cache row: the class name of the `RequestRefused` error the request met, whose
    message is `text`. The cache raises it again instead of answering, so a replay fails where the recording did."""


@dataclass(frozen=True)
class Decision:
    """A parsed policy reply. `action is None` with `meta` set is a memory operation (no env step)."""

    thought: str
    action: Action | None
    meta: Action | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)
    """Method-specific reply fields (a subgoal, a reflection, a passport)."""
    then: tuple[Action, ...] = ()
    """The further actions of a multi-action reply, executed after `action` in order (SPEC-BASE §2.2)."""

    @property
    def actions(self) -> tuple[Action, ...]:
        """Every action of the reply in execution order; empty for a memory operation or a spent turn."""
        return () if self.action is None else (self.action, *self.then)

    def only(self, action: Action) -> Decision:
        """This reply seen as the transition of one of its actions (what a method's `update` receives)."""
        return dataclasses.replace(self, action=action, then=())


@dataclass(frozen=True)
class Step:
    """One executed action (a transition) as the method sees it after the fact. `after is None` for a
    meta-action. A multi-action turn yields one Step per executed action, all with the same `turn`."""

    turn: int
    before: Observation
    decision: Decision
    """The reply narrowed to this step's action (`Decision.only`)."""
    after: Observation | None
    last_of_turn: bool = True
    """False while further actions of the same reply are still to run."""


@dataclass(frozen=True)
class Upstream:
    """The outside code a benchmark runs on (a user's checkout): recorded in run.json and the fingerprint."""

    repository: str
    commit: str | None
    known: bool
    """Whether `commit` is one the benchmark documents."""
    about: str
    """What is known of that commit ("" when unknown)."""
    configs_match: bool | None
    """Whether its task configurations equal the staged ones (None when they could not be read)."""
    configs_digest: str | None
    note: str = ""
    """A sentence to print before the run when something is off (an unknown commit)."""


@dataclass(frozen=True)
class Score:
    """The benchmark's verdict on an episode; `extras` are flat numbers the summary averages."""

    success: bool
    value: float
    extras: Mapping[str, float | int | bool | None] = field(default_factory=dict)


@dataclass(frozen=True)
class Ledger:
    """What became of an episode's policy turns (issue 24): a serving problem must never read as a failed
    method. One count per policy request that ended a way other than a valid action."""

    valid: int = 0
    """Policy turns that produced an action the environment ran."""
    parse_failure: int = 0
    """Replies the parser could not use (each repair or retry attempt counts)."""
    refused: int = 0
    """Requests the server refused as such (HTTP 4xx other than 429, a schema it cannot compile)."""
    overflow: int = 0
    """Requests refused because the prompt exceeds the model's context."""
    timeout: int = 0
    """Policy calls that ran out of time (after their retries)."""
    tool_error: int = 0
    """Actions the environment ran and reported as failed (`Observation.tool_error`)."""

    def __add__(self, other: Ledger) -> Ledger:
        return Ledger(
            *(a + b for a, b in zip(dataclasses.astuple(self), dataclasses.astuple(other), strict=True))
        )


Unplayed = Literal["refused", "overflow"]


@dataclass(frozen=True)
class EpisodeResult:
    """One finished (or failed) episode, as appended to `results.jsonl`."""

    task_id: str
    status: Literal["done", "error"]
    success: bool = False
    score: float = 0.0
    extras: Mapping[str, Any] = field(default_factory=dict)
    turns: int = 0
    """Policy turns used (policy calls that were not memory operations, spent turns included)."""
    steps: int = 0
    """Environment actions executed (up to `max_actions_per_turn` per turn)."""
    meta_actions: int = 0
    spent_turns: int = 0
    """Turns consumed without an executable action."""
    usage: Mapping[str, Usage] = field(default_factory=dict)
    """Token usage per role."""
    peak_input_tokens: int = 0
    """Peak: the largest policy-call input of the episode (SPEC-BASE §2.5)."""
    dependency_m: float = 0.0
    """ACON's Dependency of the policy calls, in millions (SPEC-BASE §2.5)."""
    report: Mapping[str, Any] = field(default_factory=dict)
    """The method's own end-of-episode summary."""
    final_observation: str = ""
    task_meta: Mapping[str, Any] = field(default_factory=dict)
    error: str | None = None
    seconds: float = 0.0
    served: tuple[str, ...] = ()
    """The model revisions the servers reported for this episode's replies (more than one: the endpoint
    changed under the run)."""
    context_errors: tuple[Mapping[str, Any], ...] = ()
    """Method failures on the terminal transition or in `report()` that kept the env outcome (SPEC-POS §5.5):
    `{step, phase: update | export, error_type, error}`."""
    ledger: Ledger = Ledger()
    """The policy turns by outcome: valid action, parse failure, refused, overflow, timeout, tool error."""
    unplayed: Unplayed | None = None
    """Set when the model never got to act: the serving stack refused (or overflowed on) the first policy
    request. Such an episode is kept out of success rates and shown apart (it measures the serving, not the
    method)."""
    trial: int = 0
    """The repetition of `task_id` this row records; a row is keyed by (task_id, trial)."""


_PLAIN = frozenset({str, int, float, bool, type(None)})


CACHE_COUNTS = ("cached_input_tokens", "cache_write_tokens")


_FIELD_NAMES: dict[type, tuple[str, ...]] = {}
"""The field names of each dataclass met, in order (`dataclasses.fields` builds its tuple anew at every call)."""


def field_names(kind: type) -> tuple[str, ...]:
    """The field names of dataclass `kind`, in order."""
    names = _FIELD_NAMES.get(kind)
    if names is None:
        names = _FIELD_NAMES[kind] = tuple(f.name for f in dataclasses.fields(kind))
    return names


def to_jsonable(value: Any) -> Any:
    """Turn records (and containers of them) into JSON-ready values."""
    kind = type(value)
    if kind in _PLAIN:
        return value
    if kind is dict:  # the common containers first: a transcript event is thousands of these
        return {k if type(k) is str else str(k): to_jsonable(v) for k, v in value.items()}
    if kind is list or kind is tuple:
        return [to_jsonable(v) for v in value]
    if kind is Usage:  # cache counts only when a server reported some: older files read back as written
        counts = {name: getattr(value, name) for name in field_names(Usage)}
        return {k: v for k, v in counts.items() if v or k not in CACHE_COUNTS}
    if kind in _FIELD_NAMES or (dataclasses.is_dataclass(value) and not isinstance(value, type)):
        return {name: to_jsonable(getattr(value, name)) for name in field_names(kind)}
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    if isinstance(value, Mapping):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted((to_jsonable(v) for v in value), key=repr)
    return value


def json_value(value: Any) -> Any:
    """The `default` of `json.dumps` that writes what `to_jsonable` makes of `value`, one level at a time: the
    encoder calls it for each value it cannot write itself (a record, a set, a mapping that is not a dict) and
    walks what it returns. A value that is none of these is written as its `str`."""
    kind = type(value)
    if kind is Usage:
        return to_jsonable(value)
    if kind in _FIELD_NAMES or (dataclasses.is_dataclass(value) and not isinstance(value, type)):
        return {name: getattr(value, name) for name in field_names(kind)}
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    if isinstance(value, Mapping):
        return {str(k): v for k, v in value.items()}
    if isinstance(value, (set, frozenset)):
        return sorted((to_jsonable(v) for v in value), key=repr)
    return str(value)


ROW_OMITS = ("report", "final_observation", "seconds")
"""`EpisodeResult` fields kept in the episode's `result.json` only, never in the compact `results.jsonl` row."""


def result_row(result: EpisodeResult) -> dict[str, Any]:
    """The compact `results.jsonl` row of a result: outcome, counts, tokens per role, error."""
    row = {k: v for k, v in to_jsonable(result).items() if k not in ROW_OMITS}
    if not row["served"]:
        del row["served"]  # models that report no revision (scripted, embedded) leave rows as they were
    if not row["trial"]:
        del row["trial"]  # a one-trial run (and trial 0 of any run) writes the rows it always wrote
    return row


def usage_from_json(data: Mapping[str, Any]) -> Usage:
    names = [f.name for f in dataclasses.fields(Usage)]
    return Usage(*(int(data.get(name, 0)) for name in names))


def result_from_json(data: Mapping[str, Any]) -> EpisodeResult:
    """Inverse of `to_jsonable` for a results.jsonl line."""
    fields = {f.name for f in dataclasses.fields(EpisodeResult)}
    values = {k: v for k, v in data.items() if k in fields}
    values["usage"] = {role: usage_from_json(u) for role, u in data.get("usage", {}).items()}
    values["context_errors"] = tuple(data.get("context_errors", ()))
    values["served"] = tuple(data.get("served", ()))
    values["ledger"] = Ledger(**data.get("ledger", {}))
    return EpisodeResult(**values)
