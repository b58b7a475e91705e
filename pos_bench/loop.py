"""The one agent loop. Every method on every benchmark is played by `play`.

Order of a step: benchmark observation → method builds the prompt → model → parsed decision →
benchmark step → method updates its memory (STYLE §5).
"""

from __future__ import annotations

import dataclasses
import time
import traceback
from typing import Any

from pos_bench.parse import ParseFailure, parse_decision
from pos_bench.prompting import REPAIR_REQUEST
from pos_bench.protocols import Env, Method, Model
from pos_bench.transcript import Transcript
from pos_bench.types import Brief, Decision, EpisodeResult, Message, Observation, Step, Task


def decide(method: Method, model: Model, obs: Observation, log: Transcript, turn: int) -> Decision | None:
    """Ask the method for its next decision; repair a reply without an executable action at most
    `prompt.max_repairs` times. `None` means the turn is spent."""
    request = method.prompt(obs)
    if isinstance(request, Decision):
        return request
    prompt = request
    for attempt in range(prompt.max_repairs + 1):
        reply = model.generate(prompt, role="agent")
        parsed = parse_decision(reply.text, obs, prompt.meta_actions)
        if not isinstance(parsed, ParseFailure):
            return parsed
        log.write("parse_failure", turn=turn, attempt=attempt, problem=parsed.problem)
        repair = Message("user", REPAIR_REQUEST.format(problem=parsed.problem))
        prompt = prompt.extended(Message("assistant", reply.text), repair)
    return None


def context_error(turn: int, phase: str, error: Exception, log: Transcript) -> dict[str, Any]:
    """A method failure on the terminal transition (`update`) or in `report()` (`export`), kept on the result."""
    record = {"step": turn, "phase": phase, "error_type": type(error).__name__, "error": str(error)[:2000]}
    log.write("context_error", **record, traceback=traceback.format_exc())
    return record


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
) -> EpisodeResult:
    """Play one episode to `done` or the turn budget. Exceptions propagate to the runner.

    Meta-actions (memory operations) do not consume a turn, but more than `max_meta_per_turn` of
    them in one turn spend it, so a method cannot stall the episode.
    """
    started = time.perf_counter()
    obs = env.reset(task)
    log.write("reset", task=task, observation=obs)
    method.start(task, brief, obs)
    turn = steps = meta_actions = spent = meta_in_turn = 0
    context_errors: list[dict[str, Any]] = []
    while turn < max_turns and not obs.done:
        if turn == max_turns - 1 and brief.final_turn_note and brief.final_turn_note not in obs.notes:
            obs = dataclasses.replace(obs, notes=(*obs.notes, brief.final_turn_note))
        decision = decide(method, model, obs, log, turn)
        is_meta = decision is not None and decision.action is None and decision.meta is not None
        if is_meta and meta_in_turn < max_meta_per_turn:
            meta_actions += 1
            meta_in_turn += 1
            log.write("meta_action", turn=turn, decision=decision)
            record = method.update(Step(turn, obs, decision, None))
            if record:
                log.write("memory", turn=turn, record=record)
            continue
        meta_in_turn = 0
        if decision is None or decision.action is None:
            spent += 1
            log.write("turn_spent", turn=turn)
            turn += 1
            continue
        after = env.step(decision.action)
        steps += 1
        log.write("step", turn=turn, thought=decision.thought, action=decision.action, observation=after)
        try:
            record = method.update(Step(turn, obs, decision, after))
        except Exception as error:  # SPEC-POS §5.5: only a terminal transition keeps its outcome
            if not (after.done or turn == max_turns - 1):
                raise
            record = None
            context_errors.append(context_error(turn, "update", error, log))
        if record:
            log.write("memory", turn=turn, record=record)
        obs = after
        turn += 1
    score = env.score()
    try:
        report = dict(method.report())
    except Exception as error:  # noqa: BLE001 - SPEC-POS §5.5: a failed export keeps the outcome
        report = {}
        context_errors.append(context_error(turn, "export", error, log))
    result = EpisodeResult(
        task_id=task.id,
        status="done",
        success=score.success,
        score=score.value,
        extras=dict(score.extras),
        turns=turn,
        steps=steps,
        meta_actions=meta_actions,
        spent_turns=spent,
        report=report,
        context_errors=tuple(context_errors),
        final_observation=obs.text,
        task_meta=dict(task.meta),
        seconds=round(time.perf_counter() - started, 3),
    )
    log.write("score", score=score)
    return result
