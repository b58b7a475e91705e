"""The one agent loop. Every method on every benchmark is played by `play`.

Order of a step: benchmark observation → method builds the prompt → model → parsed decision →
benchmark step → method updates its memory (STYLE §5). A reply may hold up to the benchmark's
`max_actions_per_turn` actions; each executed action is one transition for the method (SPEC-POS §5.1).
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import time
import traceback
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, Literal

from pos_bench import events
from pos_bench.parse import ParseFailure, parse_decision
from pos_bench.prompting import capped, repair_request
from pos_bench.protocols import ClaimingMethod, Env, EventfulMethod, Method, Model, TruthfulEnv, implements
from pos_bench.transcript import Transcript
from pos_bench.truth import WorldTruth
from pos_bench.types import (
    Brief,
    Decision,
    EpisodeResult,
    Ledger,
    Message,
    Observation,
    Step,
    Task,
    to_jsonable,
)

Exhausted = Literal["spend_turn", "error"]
logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class RetryBudget:
    """What the loop does with a policy reply it cannot use (SPEC-BASE §2.1 items 4–5, SPEC-POS §5.1, §5.5).

    JSON repairs (`Prompt.max_json_retries`, set by the method) and missing-action retries are counted
    apart; what follows their exhaustion is a framework choice, recorded in `run.json`."""

    missing_action_retries: int = 1
    """Retries with the missing-action directive after a JSON reply without an executable action."""
    on_json_exhausted: Exhausted = "error"
    """After `max_json_retries` repairs still no JSON: `error` ends the episode as errored (SPEC-POS §5.5),
    `spend_turn` consumes the turn without an env step."""
    on_action_exhausted: Exhausted = "spend_turn"
    """After the missing-action retries still no action: `spend_turn` (SPEC-POS §5.1, T62) or `error`."""

    def __post_init__(self) -> None:
        if self.missing_action_retries < 0:
            raise ValueError(f"loop.missing_action_retries must be ≥ 0, got {self.missing_action_retries}")
        for name in ("on_json_exhausted", "on_action_exhausted"):
            if getattr(self, name) not in ("spend_turn", "error"):
                raise ValueError(f"loop.{name} must be 'spend_turn' or 'error', got {getattr(self, name)!r}")


class UnusableReply(RuntimeError):
    """A policy reply still unusable after its retries, under the `error` policy: the episode errors."""


def decide(
    method: Method,
    model: Model,
    obs: Observation,
    log: Transcript,
    turn: int,
    *,
    brief: Brief,
    budget: RetryBudget,
    tally: Tally | None = None,
) -> Decision | None:
    """Ask the method for its next decision, with JSON repairs and missing-action retries counted apart.

    `None` means the turn is spent; under the `error` policy an exhausted budget raises `UnusableReply`."""
    request = method.prompt(obs)
    if implements(method, EventfulMethod):
        for event in method.events(turn):
            log.write(event)
    if isinstance(request, Decision):
        return request
    prompt = request
    left = {False: prompt.max_json_retries, True: budget.missing_action_retries}
    attempt = 0
    while True:
        reply = model.generate(prompt, role="agent")
        parsed = parse_decision(
            reply.text,
            obs,
            prompt.meta_actions,
            max_actions=brief.max_actions_per_turn,
            no_tool_call_is_final=brief.no_tool_call_is_final,
        )
        if not isinstance(parsed, ParseFailure):
            return parsed
        missing_action = parsed.json_readable
        if tally is not None:
            tally.parse_failures += 1
        log.write(
            events.ParseFailure(
                turn=turn,
                attempt=attempt,
                problem=parsed.problem,
                retry="missing_action" if missing_action else "json",
            )
        )
        if left[missing_action] == 0:
            policy = budget.on_action_exhausted if missing_action else budget.on_json_exhausted
            if policy == "error":
                raise UnusableReply(
                    f"turn {turn}: policy reply unusable after its retries ({parsed.problem})"
                )
            return None
        left[missing_action] -= 1
        attempt += 1
        text = repair_request(
            parsed.problem, missing_action=missing_action, max_actions=brief.max_actions_per_turn
        )
        prompt = prompt.extended(Message("assistant", capped(reply.text)), Message("user", text))


def context_error(step: int, phase: str, error: Exception, log: Transcript) -> dict[str, Any]:
    """A method failure on the terminal transition (`update`) or in `report()` (`export`), kept on the result.
    `step` is the zero-based index of the last environment step, as SPEC-POS numbers steps (not the turn)."""
    record = {"step": step, "phase": phase, "error_type": type(error).__name__, "error": str(error)[:2000]}
    log.write(events.ContextError(**record, traceback=traceback.format_exc()))
    return record


@dataclass
class Tally:
    """The episode's counters while it is played; they end up in its `EpisodeResult`."""

    turn: int = 0
    steps: int = 0
    meta_actions: int = 0
    spent: int = 0
    meta_in_turn: int = 0
    context_errors: list[dict[str, Any]] = field(default_factory=list)
    valid: int = 0
    """Policy turns whose decision carried an action the environment ran."""
    parse_failures: int = 0
    tool_errors: int = 0

    def ledger(self) -> Ledger:
        """The turns' outcomes the loop sees; the serving failures are counted by the `Recorded` model."""
        return Ledger(valid=self.valid, parse_failure=self.parse_failures, tool_error=self.tool_errors)

    truth: WorldTruth | None = None
    """The environment's truth after the last step, when it reports one (`record_truth`)."""
    truth_unread: int = 0
    """Truth reads that raised (`record_truth`)."""


def play(
    task: Task,
    env: Env,
    method: Method,
    model: Model,
    *,
    brief: Brief,
    max_turns: int,
    log: Transcript,
    max_meta_per_turn: int = 3,
    budget: RetryBudget = RetryBudget(),
    tally: Tally | None = None,
    env_gate: Callable[[], AbstractContextManager[object]] = contextlib.nullcontext,
) -> EpisodeResult:
    """Play one episode to `done` or the turn budget. Exceptions propagate to the runner, which keeps
    `tally` (the counts so far) for the errored episode's failure ledger.

    Meta-actions (memory operations) do not consume a turn, but more than `max_meta_per_turn` of
    them in one turn spend it, so a method cannot stall the episode. A reply's actions run in order,
    at most `brief.max_actions_per_turn` of them, and the turn stops early when one ends the episode.

    `env_gate` is held around every reset and step (the runner's limit on steps computing at once,
    `runner/env_slots.py`).
    """
    started = time.perf_counter()
    with env_gate():
        cpu = time.process_time()
        obs = env.reset(task)
        world = read_truth(env)
        cpu = round(time.process_time() - cpu, 4)
    shown = to_jsonable(task)
    if not task.trial:
        del shown["trial"]  # trial 0 (every one-trial run) keeps the transcript it always wrote
    log.write(events.Reset(task=shown, observation=obs, cpu_seconds=cpu))
    method.start(task, brief, obs)
    tally = Tally() if tally is None else tally
    record_truth(world, -1, tally, log)
    record_claims(method, -1, tally, log)
    while tally.turn < max_turns and not obs.done:
        last_turn = tally.turn == max_turns - 1
        obs = with_final_note(obs, brief) if last_turn else obs
        decision = decide(method, model, obs, log, tally.turn, brief=brief, budget=budget, tally=tally)
        is_meta = decision is not None and decision.action is None and decision.meta is not None
        if is_meta and tally.meta_in_turn < max_meta_per_turn:
            memory_operation(method, decision, obs, tally, log)
            continue
        tally.meta_in_turn = 0
        if decision is None or decision.action is None:
            tally.spent += 1
            log.write(events.TurnSpent(turn=tally.turn))
        else:
            tally.valid += 1
            obs = act(
                env, method, decision, obs, tally, log, brief=brief, last_turn=last_turn, env_gate=env_gate
            )
        tally.turn += 1
    return finish(task, env, method, obs, tally, log, started=started)


def with_final_note(obs: Observation, brief: Brief) -> Observation:
    """On the last turn, the benchmark's final-turn note joins the observation (once)."""
    if brief.final_turn_note and brief.final_turn_note not in obs.notes:
        return dataclasses.replace(obs, notes=(*obs.notes, brief.final_turn_note))
    return obs


def read_truth(env: Env) -> WorldTruth | Exception | None:
    """The environment's truth now, when it knows it and its benchmark's `truth` setting left it on (issue 28).
    Read under the environment slot, right after the reset or step, and counted in its `cpu_seconds`: the
    engine works out its own state, as much environment work as the step. A read that raises is returned, not
    raised: the truth is an instrument beside the episode (an engine state its reader does not know, say), so
    its failure costs that step's truth, never the step's line or the episode (`record_truth`)."""
    if not implements(env, TruthfulEnv):
        return None
    try:
        return env.truth()
    except Exception as error:  # noqa: BLE001 - recorded as a `truth_unread` event by `record_truth`
        return error


def record_truth(world: WorldTruth | Exception | None, step: int, tally: Tally, log: Transcript) -> None:
    """The truth read after `step` (-1: the reset) as a transcript event. A read that raised is recorded as
    `truth_unread` and leaves the episode with no current truth, so the claims after that step are not
    recorded against an older one (they are scored only beside a truth of their own step); the next read is
    written whole. The episode's first failed read is also a warning."""
    if world is None:
        return
    if isinstance(world, Exception):
        error = f"{type(world).__name__}: {world}"
        log.write(
            events.TruthUnread(step=step, error=error, traceback="".join(traceback.format_exception(world)))
        )
        if not tally.truth_unread:
            logger.warning("the environment's truth could not be read after step %d (%s)", step, error[:300])
        tally.truth_unread += 1
        tally.truth = None
        return
    log.write(events.Truth.of(step, world, tally.truth))
    tally.truth = world


def record_claims(method: Method, step: int, tally: Tally, log: Transcript) -> None:
    """What the method's memory claims after `step`, beside a recorded truth (nothing to score them against
    otherwise); a method that keeps no state says so once, at the reset."""
    if tally.truth is None:
        return
    if implements(method, ClaimingMethod):
        log.write(events.Claims(step=step, claims=method.claims()))
    elif step == -1:
        log.write(events.Claims(step=step, keeps_state=False))


def memory_operation(
    method: Method, decision: Decision, obs: Observation, tally: Tally, log: Transcript
) -> None:
    """A decision with no action: the method updates its memory; the environment is not stepped."""
    tally.meta_actions += 1
    tally.meta_in_turn += 1
    log.write(events.MetaAction(turn=tally.turn, decision=decision))
    record = method.update(Step(tally.turn, obs, decision, None))
    if record:
        log.write(events.Memory(turn=tally.turn, record=record))
    if implements(method, ClaimingMethod):
        record_claims(method, tally.steps - 1, tally, log)


def act(
    env: Env,
    method: Method,
    decision: Decision,
    obs: Observation,
    tally: Tally,
    log: Transcript,
    *,
    brief: Brief,
    last_turn: bool,
    env_gate: Callable[[], AbstractContextManager[object]] = contextlib.nullcontext,
) -> Observation:
    """Run the decision's actions in order (at most `brief.max_actions_per_turn`), the method updating after
    each; returns the observation after the last one run."""
    turn = tally.turn
    actions = decision.actions[: brief.max_actions_per_turn]
    if len(decision.actions) > len(actions):
        log.write(events.ActionsDropped(turn=turn, dropped=decision.actions[len(actions) :]))
    for index, action in enumerate(actions):
        with env_gate():
            cpu = time.process_time()
            after = env.step(action)
            world = read_truth(env)
            cpu = round(time.process_time() - cpu, 4)
        tally.steps += 1
        tally.tool_errors += after.tool_error
        last = after.done or index == len(actions) - 1
        log.write(
            events.Step(
                turn=turn, thought=decision.thought, action=action, observation=after, cpu_seconds=cpu
            )
        )
        record_truth(world, tally.steps - 1, tally, log)
        try:
            record = method.update(Step(turn, obs, decision.only(action), after, last_of_turn=last))
        except Exception as error:  # SPEC-POS §5.5: only a terminal transition keeps its outcome
            if not (after.done or (last and last_turn)):
                raise
            record = None
            tally.context_errors.append(context_error(tally.steps - 1, "update", error, log))
        if record:
            log.write(events.Memory(turn=turn, record=record))
        record_claims(method, tally.steps - 1, tally, log)
        obs = after
        if after.done:
            break
    return obs


def finish(
    task: Task, env: Env, method: Method, obs: Observation, tally: Tally, log: Transcript, *, started: float
) -> EpisodeResult:
    """Score the episode, take the method's report and write the `score` event."""
    score = env.score()
    try:
        report = dict(method.report())
    except Exception as error:  # noqa: BLE001 - SPEC-POS §5.5: a failed export keeps the outcome
        report = {}
        tally.context_errors.append(context_error(tally.steps - 1, "export", error, log))
    result = EpisodeResult(
        task_id=task.id,
        status="done",
        success=score.success,
        score=score.value,
        extras=dict(score.extras),
        turns=tally.turn,
        steps=tally.steps,
        meta_actions=tally.meta_actions,
        spent_turns=tally.spent,
        report=report,
        context_errors=tuple(tally.context_errors),
        ledger=tally.ledger(),
        final_observation=obs.text,
        task_meta=dict(task.meta),
        seconds=round(time.perf_counter() - started, 3),
        trial=task.trial,
    )
    log.write(events.Score(score=score))
    return result
