"""A run folder as an inspect_ai eval log (`.eval`), so a run opens in `inspect view` and in any tool that reads
inspect's log format. The log is built from inspect_ai's own typed models and written with its
`write_eval_log`, so it is valid by construction.

What maps to what (docs/how-to/export.md has the table): one sample per episode (id = task id, input = the first
observation, target = the goal); the policy conversation as the sample's messages; every model call (policy and
the method's own roles: belief, sentinel, compressor…) as a ModelEvent carrying its role and exact prompt; each
environment step and each memory record as an InfoEvent inside a span per turn; scores `success` (bool, its
answer = the final action) and `score` (the benchmark's value); usage per role in `role_usage`; an episode error
as the sample's error. The eval's task is the benchmark, its model the run's model, its metadata the run's
labels, flags, fingerprint and resolved config, its results the success rate (accuracy) and the mean score.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pos_bench import __version__, events
from pos_bench.analysis.runs import (
    UNFINISHED,
    Run,
    episode_folder,
    episode_result,
    load_run,
    read_json,
    read_jsonl,
)
from pos_bench.extras import require
from pos_bench.runner.summary import POLICY_ROLE
from pos_bench.types import Usage, usage_from_json

TURN_EVENTS = (
    events.ParseFailure,
    events.MetaAction,
    events.Memory,
    events.Compaction,
    events.TurnSpent,
    events.ActionsDropped,
    events.Step,
)
"""Event kinds that carry the turn they belong to."""
EPISODE_EVENTS = (events.Reset, events.Score, events.Error)
"""Event kinds that belong to the episode, not to a turn."""


def read_events(run_dir: Path, task_id: str, trial: int = 0) -> list[events.Event]:
    """An episode's transcript events in order (the one place this module reads `events.jsonl`)."""
    return list(events.read(episode_folder(run_dir, task_id, trial) / "events.jsonl"))


def _when(seconds: float | None) -> datetime | None:
    return datetime.fromtimestamp(seconds, UTC) if seconds else None


def _text(action: Any) -> str:
    """An action as text: a command as it is, a tool call as its JSON."""
    return action if isinstance(action, str) else json.dumps(action, ensure_ascii=False, sort_keys=True)


def _usage(usage: Usage):
    from inspect_ai.model import ModelUsage

    inp, out = usage.input_tokens, usage.output_tokens
    return ModelUsage(input_tokens=inp, output_tokens=out, total_tokens=inp + out)


def _messages(prompt: Mapping[str, Any] | None) -> list:
    """A recorded prompt (the JSON of a `Prompt`) as inspect chat messages."""
    from inspect_ai.model import ChatMessageAssistant, ChatMessageSystem, ChatMessageUser

    kinds = {"system": ChatMessageSystem, "user": ChatMessageUser, "assistant": ChatMessageAssistant}
    return [kinds[m["role"]](content=str(m["content"])) for m in (prompt or {}).get("messages", ())]


def _policy_calls(episode: Iterable[events.Event]) -> list[events.Call]:
    return [e for e in episode if isinstance(e, events.Call) and e.role == POLICY_ROLE]


def conversation(episode: Iterable[events.Event]) -> list:
    """The policy's conversation: its first prompt in full, then per later call the newest message, each
    followed by the reply (methods rebuild the whole prompt each turn; the exact prompts are the ModelEvents)."""
    from inspect_ai.model import ChatMessageAssistant

    messages: list = []
    for call in _policy_calls(episode):
        sent = _messages(call.prompt)
        messages += sent if not messages else sent[-1:]
        messages.append(ChatMessageAssistant(content=call.reply, model=None))
    return messages


def turns_of(episode: list[events.Event]) -> list[int | None]:
    """The turn each event belongs to: its own `turn`, else that of the next event carrying one (a policy
    call precedes its step, the method's calls precede the step's memory record)."""
    turns: list[int | None] = [None] * len(episode)
    following: int | None = None
    for n in range(len(episode) - 1, -1, -1):
        e = episode[n]
        if isinstance(e, EPISODE_EVENTS):
            following = None
            continue
        if isinstance(e, TURN_EVENTS):
            following = e.turn
        turns[n] = following
    return turns


def transcript(episode: list[events.Event], model: str) -> list:
    """inspect events for an episode: a span per turn holding its model calls, steps and memory records."""
    from inspect_ai.event import SpanBeginEvent, SpanEndEvent

    start = next((e.time for e in episode if e.time), 0.0)
    out: list = []
    span: str | None = None
    for n, (e, turn) in enumerate(zip(episode, turns_of(episode), strict=True)):
        at = e.time or start
        common = {"timestamp": _when(at), "working_start": max(0.0, at - start)}
        name = None if turn is None else f"turn-{turn}"
        if name != span:
            if span:
                out.append(SpanEndEvent(id=span, uuid=f"{span}-end", **common))
            if name:
                out.append(SpanBeginEvent(id=name, name=f"turn {turn}", type="turn", uuid=name, **common))
            span = name
        out.append(_event(e, model, uuid=f"e{n}", span_id=span, **common))
    if span:
        out.append(SpanEndEvent(id=span, uuid=f"{span}-end", timestamp=_when(episode[-1].time or start)))
    return out


def _model_event(e: events.Call | events.CallError, model: str, **common: Any):
    """A model call (or a failed one) as a ModelEvent with its role and exact prompt."""
    from inspect_ai.event import ModelEvent
    from inspect_ai.model import GenerateConfig, ModelOutput

    call = e if isinstance(e, events.Call) else None
    output = ModelOutput.from_content(model, call.reply if call else "")
    output.usage = _usage(call.usage if call else Usage())
    return ModelEvent(
        model=model,
        role=e.role,
        input=_messages(e.prompt),
        tools=[],
        tool_choice="none",
        config=GenerateConfig(max_tokens=(e.prompt or {}).get("max_tokens")),
        output=output,
        error=None if call else e.error,
        cache="read" if call and call.cached else None,
        **common,
    )


def _event(e: events.Event, model: str, **common: Any):
    """One pos_bench transcript event as an inspect event: a model call, an error, or an info record."""
    from inspect_ai.event import ErrorEvent, InfoEvent
    from inspect_ai.log import EvalError

    if isinstance(e, events.CALL_KINDS):
        return _model_event(e, model, **common)
    if isinstance(e, events.Error):
        error = EvalError(message=e.error, traceback=e.traceback or "", traceback_ansi="")
        return ErrorEvent(error=error, **common)
    if isinstance(e, events.Other):
        return InfoEvent(source=e.name, data=dict(e.data), metadata=None, **common)
    if isinstance(e, events.Compaction):
        return _compaction_event(e, **common)
    data = {k: v for k, v in events.row(e).items() if k not in ("kind", "time")}
    meta = {"turn": e.turn} if isinstance(e, TURN_EVENTS) else None
    return InfoEvent(source=e.kind, data=data, metadata=meta, **common)


def _compaction_event(e: events.Compaction, **common: Any):
    """A compaction of the policy conversation as inspect's own CompactionEvent; what inspect's event has no
    field for (the strategy, its fallback, the summary) goes into its metadata."""
    from inspect_ai.event import CompactionEvent

    meta = {
        "turn": e.turn,
        "strategy": e.strategy,
        "strategy_applied": e.applied,
        "trigger": e.trigger,
        "messages_before": e.messages_before,
        "messages_after": e.messages_after,
    }
    meta |= {
        k: v for k, v in (("fallback_reason", e.fallback_reason), ("summary", e.summary)) if v is not None
    }
    return CompactionEvent(
        type=e.type if e.type in ("summary", "edit", "trim") else "summary",
        role=POLICY_ROLE,
        tokens_before=e.tokens_before,
        tokens_after=e.tokens_after,
        source="inspect",
        metadata=meta,
        **common,
    )


def _iso(seconds: float | None) -> str | None:
    when = _when(seconds)
    return when.isoformat() if when else None


def _row_usage(row: Mapping[str, Any], episode: Iterable[events.Event]) -> dict[str, Any]:
    """Tokens per role: the result's (what every table counts), else summed from the calls of a running episode."""
    from inspect_ai.model import ModelUsage

    if row.get("usage"):
        return {role: _usage(usage_from_json(u)) for role, u in row["usage"].items()}
    roles: dict[str, Any] = {}
    for e in episode:
        if isinstance(e, events.Call):
            roles[e.role] = roles.get(e.role, ModelUsage()) + _usage(e.usage)
    return roles


SAMPLE_FIELDS_ELSEWHERE = ("task_id", "success", "score", "usage", "error", "final_observation")
"""Result fields that have their own place in a sample; the others go into its metadata."""


def sample(run_dir: Path, row: Mapping[str, Any], model: str):
    """One episode as an EvalSample (`row` is its full result, or `{task_id, status}` of one with no result:
    `running` or `interrupted`, left unscored)."""
    from inspect_ai.log import EvalError, EvalSample
    from inspect_ai.model import ModelOutput, ModelUsage
    from inspect_ai.scorer import Score

    task_id = str(row["task_id"])
    trial = int(row.get("trial") or 0)
    episode = read_events(run_dir, task_id, trial)
    reset = next((e for e in episode if isinstance(e, events.Reset)), None)
    first = (reset.observation if reset else None) or {}
    steps = [e for e in episode if isinstance(e, events.Step)]
    replies = [call.reply for call in _policy_calls(episode)]
    final = _text(steps[-1].action) if steps else None
    running = row.get("status") in UNFINISHED
    scores = None
    if not running:
        explanation = row.get("error") or row.get("final_observation") or None
        success = Score(value=bool(row.get("success")), answer=final, explanation=explanation)
        scores = {"success": success, "score": Score(value=float(row.get("score") or 0.0), answer=final)}
    failure = next((e for e in reversed(episode) if isinstance(e, events.Error)), None)
    error = row.get("error")
    roles = _row_usage(row, episode)
    times = [float(e.time) for e in episode if e.time]
    return EvalSample(
        id=task_id,
        epoch=trial + 1,  # inspect's epochs are a sample's repeated plays: pos_bench's trials
        input=str(first.get("text", "")),
        target=str(first.get("goal", "")),
        messages=conversation(episode),
        output=ModelOutput.from_content(model, replies[-1] if replies else ""),
        scores=scores,
        metadata={k: v for k, v in row.items() if k not in SAMPLE_FIELDS_ELSEWHERE},
        events=transcript(episode, model) if episode else [],
        model_usage={model: sum(roles.values(), ModelUsage())},
        role_usage=roles,
        started_at=_iso(min(times)) if times else None,
        completed_at=None if running or not times else _iso(max(times)),
        total_time=row.get("seconds"),
        uuid=f"{run_dir.name}/{task_id}" + (f"@t{trial}" if trial else ""),
        error=(
            EvalError(
                message=str(error),
                traceback=(failure.traceback if failure else None) or "",
                traceback_ansi="",
            )
            if error
            else None
        ),
    )


def model_id(meta: Mapping[str, Any], run: Run) -> str:
    """inspect's `provider/model` from the run's model description, else the model label."""
    described = meta.get("model") or {}
    if described.get("provider") and described.get("model"):
        return f"{described['provider']}/{described['model']}"
    return run.model


def results(samples: list):
    """Success rate as `accuracy` and the mean score, over the episodes that finished (errors count as failures)."""
    from inspect_ai.log import EvalMetric, EvalResults, EvalScore

    scored = [s.scores for s in samples if s.scores]
    n = max(len(scored), 1)

    def score(name: str, metric: str, value: float) -> EvalScore:
        return EvalScore(
            name=name,
            scorer=name,
            scored_samples=len(scored),
            unscored_samples=len(samples) - len(scored),
            metrics={metric: EvalMetric(name=metric, value=value)},
        )

    return EvalResults(
        total_samples=len(samples),
        completed_samples=len(scored),
        scores=[
            score("success", "accuracy", sum(bool(s["success"].value) for s in scored) / n),
            score("score", "mean", sum(float(s["score"].value) for s in scored) / n),
        ],
    )


def episode_rows(run: Run) -> list[dict[str, Any]]:
    """Each episode's full result (result.json over its results.jsonl row), or `{task_id, status}` (`running` or
    `interrupted`, as the runs index decides) of one with no result."""
    recorded = {
        (str(r.get("task_id")), int(r.get("trial") or 0)): r for r in read_jsonl(run.folder / "results.jsonl")
    }
    return [
        episode_result(run.folder, recorded[(t, k)])
        if (t, k) in recorded
        else {"task_id": t, "trial": k, "status": status}
        for t, k, status in zip(
            map(str, run.episodes["task_id"]),
            map(int, run.episodes["trial"]),
            run.episodes["status"],
            strict=True,
        )
    ]


def eval_log(run: Run):
    """The whole run as an EvalLog; an unfinished run keeps status `started`."""
    from inspect_ai import __version__ as inspect_version
    from inspect_ai.log import EvalConfig, EvalDataset, EvalLog, EvalSpec, EvalStats
    from inspect_ai.model import ModelUsage

    meta = read_json(run.folder / "run.json")
    model = model_id(meta, run)
    samples = [sample(run.folder, row, model) for row in episode_rows(run)]
    starts = [s.started_at for s in samples if s.started_at]
    unfinished = bool({"in progress", "interrupted"} & set(run.flags))
    ends = [s.completed_at for s in samples if s.completed_at]
    roles: dict[str, Any] = {}
    for s in samples:
        for role, usage in s.role_usage.items():
            roles[role] = roles.get(role, ModelUsage()) + usage
    spec = EvalSpec(
        eval_id=run.fingerprint[:22],
        run_id=run.fingerprint[:22],
        created=min(starts) if starts else datetime.now(UTC).isoformat(),
        task=run.bench,
        task_display_name=run.name,
        solver=run.method,
        tags=[run.method, *run.flags],
        dataset=EvalDataset(
            name=run.bench,
            samples=len({s.id for s in samples}),
            sample_ids=list(dict.fromkeys(s.id for s in samples)),
        ),
        model=model,
        model_args=dict(meta.get("model") or {}),
        config=EvalConfig(epochs=int(run.episodes["trial"].max()) + 1 if len(run.episodes) else 1),
        packages={"pos_bench": __version__, "inspect_ai": inspect_version},
        metadata={
            "labels": meta.get("labels") or {},
            "flags": list(run.flags),
            "fingerprint": run.fingerprint,
            "identity": meta.get("identity") or {},
            "config": meta.get("config") or {},
            "run_folder": str(run.folder),
        },
    )
    return EvalLog(
        status="started" if unfinished else "success",
        eval=spec,
        results=results(samples),
        stats=EvalStats(
            started_at=min(starts) if starts else "",
            completed_at=max(ends) if ends and not unfinished else "",
            model_usage={model: sum(roles.values(), ModelUsage())},
            role_usage=roles,
        ),
        samples=samples,
    )


def write_inspect_log(run_dir: Path, path: Path) -> Path:
    """Write `run_dir` as the inspect_ai log `path` (`.eval`); returns the path."""
    require("inspect", "inspect_ai", what="Exporting a run as an inspect_ai log")
    from inspect_ai.log import write_eval_log

    path.parent.mkdir(parents=True, exist_ok=True)
    write_eval_log(eval_log(load_run(run_dir)), str(path), format="eval")
    return path
