"""LongHorizon-Harness ported to the step-wise loop (SPEC-BASE §7.2): a manager plans each round, the policy
(the executor) plays the round, an auditor checks the executor's claims against the round's raw observations.

A round is at most `steps_per_round` executor turns. The manager is called in `prompt()` when a round opens,
the auditor in `update()` when it closes (full, or the environment ended the episode). The executor sees only
the task, the audited task state, the contract, its subtask, the related audit reports and its own pairs of
this round: no raw history crosses a round boundary. Only facts the auditor verified, each citing the round and
step whose observation shows it, enter the task state. Manager and auditor calls consume no turns.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from typing import Any

from baselines.lh_harness.records import (
    AUDITOR_SYSTEM,
    CONTRACT_RULES,
    DONE_NOTE,
    EXECUTOR_RULES,
    FINAL_STATE_GUARD,
    MANAGER_SYSTEM,
    AuditReport,
    CitedFact,
    CountedCalls,
    LedgerFact,
    ManagerPlan,
    Round,
    TaskState,
    clip_tail,
    render_audit,
)
from pos_bench.prompting import example_section, policy_prompt, render_observation
from pos_bench.protocols import MethodBase, Model
from pos_bench.structured import StructuredFailure, ask
from pos_bench.truth import Claim
from pos_bench.types import Brief, Message, Observation, Prompt, Step, Task, action_json


class LongHorizonHarness(MethodBase):
    def __init__(
        self,
        model: Model,
        *,
        steps_per_round: int = 5,
        max_rounds: int | None = None,
        history_clip_chars: int = 36_000,
        executor_output_clip_chars: int = 24_000,
        auditor_probes: bool = False,
        header_repair_calls: int = 1,
        max_json_retries: int = 2,
        role_max_tokens: int = 2048,
    ):
        if steps_per_round < 1 or (max_rounds is not None and max_rounds < 1):
            raise ValueError(
                f"need steps_per_round ≥ 1 and max_rounds ≥ 1 or null; got {steps_per_round}, {max_rounds}"
            )
        if min(history_clip_chars, executor_output_clip_chars, role_max_tokens) < 1:
            raise ValueError("history_clip_chars, executor_output_clip_chars and role_max_tokens must be ≥ 1")
        if header_repair_calls < 0 or max_json_retries < 0:
            raise ValueError(f"repair counts must be ≥ 0, got {header_repair_calls}, {max_json_retries}")
        if auditor_probes:
            raise ValueError(
                "lh_harness.auditor_probes=true is not implemented in this port: the auditor judges the round's "
                "raw observations only (SPEC-BASE §7.2 default)"
            )
        self.model = CountedCalls(model)
        self.steps_per_round = steps_per_round
        self.max_rounds = max_rounds
        self.history_clip_chars = history_clip_chars
        self.executor_output_clip_chars = executor_output_clip_chars
        self.header_repair_calls = header_repair_calls
        self.max_json_retries = max_json_retries
        self.role_max_tokens = role_max_tokens
        self.audits: dict[int, AuditReport] = {}
        self.ledger: list[LedgerFact] = []
        self.plan: ManagerPlan | None = None
        self.round: Round | None = None
        self.rounds = 0
        self.feedback: list[str] = []
        self.counts: Counter[str] = Counter()

    def start(self, task: Task, brief: Brief, first: Observation) -> None:
        self.brief = brief
        self.goal = first.goal

    # --- manager -------------------------------------------------------------------------------------

    def _state_text(self) -> str:
        facts = "\n".join(f"- [round {f.round}, step {f.step}] {f.fact}" for f in self.ledger) or "- none yet"
        lines = [f"Auditor-verified facts:\n{clip_tail(facts, self.history_clip_chars)}"]
        if self.plan is not None:
            state = self.plan.task_state
            cited = [f"- {c.fact} (rounds {', '.join(map(str, c.rounds))})" for c in state.completed]
            for title, items in (
                ("Completed", cited),
                ("Incomplete", [f"- {x}" for x in state.incomplete]),
                ("Blockers / risks", [f"- {x}" for x in state.blockers]),
                ("Untrusted (not verified)", [f"- {x}" for x in state.untrusted]),
            ):
                if items:
                    lines.append(f"{title}:\n" + "\n".join(items))
        return "\n".join(lines)

    def _audit_history(self) -> str:
        text = "\n\n".join(render_audit(i, r) for i, r in sorted(self.audits.items()))
        return clip_tail(text, self.history_clip_chars) if text else "none yet"

    def _manager_prompt(self, index: int) -> Prompt:
        budget = (
            f"at most {self.max_rounds} rounds"
            if self.max_rounds
            else "no round limit; the turn budget ends the episode"
        )
        sections = [
            f"Task: {self.goal}",
            CONTRACT_RULES,
            FINAL_STATE_GUARD,
            f"Current contract: {self.plan.contract if self.plan else 'none yet (write it)'}",
            f"Previous task state:\n{self._state_text()}",
            f"Auditor reports by round:\n{self._audit_history()}",
            "Harness feedback: " + (" ".join(self.feedback) or "none"),
            f"This is round {index} ({budget}); a round is at most {self.steps_per_round} executor actions.",
            (
                "Reply with the JSON object: task_state {completed: [{fact, rounds}], incomplete, blockers, untrusted}, "
                "contract, next (act / done / blocked), subtask, acceptance_criteria, related_rounds."
            ),
        ]
        return Prompt(
            messages=(Message("system", MANAGER_SYSTEM), Message("user", "\n\n".join(sections))),
            max_tokens=self.role_max_tokens,
        )

    def _admit(self, plan: ManagerPlan) -> ManagerPlan:
        """Enforce the ledger rule on a manager plan: completed facts must cite rounds whose audit verified
        facts (others are demoted to untrusted), and `done` needs an audit header complete / clean / aligned."""
        verified_rounds = {f.round for f in self.ledger}
        completed: list[CitedFact] = []
        demoted: list[str] = []
        for item in plan.task_state.completed:
            rounds = [r for r in item.rounds if r in verified_rounds]
            if rounds:
                completed.append(CitedFact(fact=item.fact, rounds=rounds))
            else:
                demoted.append(item.fact)
        self.counts["uncited_facts_demoted"] += len(demoted)
        state = plan.task_state.model_copy(
            update={"completed": completed, "untrusted": plan.task_state.untrusted + demoted}
        )
        route = plan.next
        clean = any(
            (r.status, r.integrity, r.contract_audit) == ("complete", "clean", "aligned")
            for r in self.audits.values()
        )
        if route == "done" and not clean:
            route = "act"
            self.counts["done_overruled"] += 1
            self.feedback.append(
                "Your last 'done' was overruled: no audit header reads complete / clean / aligned."
            )
        related = [r for r in plan.related_rounds if r in self.audits]
        return plan.model_copy(update={"task_state": state, "next": route, "related_rounds": related})

    def _open_round(self, obs: Observation) -> Round:
        self.rounds += 1
        if self.max_rounds is None or self.rounds <= self.max_rounds:
            request = self._manager_prompt(self.rounds)
            feedback, self.feedback = self.feedback, []
            reply = ask(self.model, request, ManagerPlan, role="manager", max_repairs=self.max_json_retries)
            self.counts["manager_calls"] += 1
            if isinstance(reply, StructuredFailure):
                self.counts["manager_failures"] += 1
                self.feedback = [
                    *feedback,
                    f"Your previous reply was unusable ({reply.problem[:200]}); the old plan was kept.",
                ]
            else:
                self.plan = self._admit(reply)
        if self.plan is None:
            self.plan = ManagerPlan(
                task_state=TaskState(completed=[], incomplete=[self.goal], blockers=[], untrusted=[]),
                contract="",
                next="act",
                subtask=self.goal,
                acceptance_criteria=[],
                related_rounds=[],
            )
        return Round(self.rounds, self.plan, obs.text)

    # --- executor ------------------------------------------------------------------------------------

    def prompt(self, obs: Observation) -> Prompt:
        if self.round is not None and self.round.turns >= self.steps_per_round:
            self._close_round()  # the round's last turn was spent without an action, so update() never ran
        if self.round is None:
            self.round = self._open_round(obs)
        self.round.turns += 1
        plan = self.round.plan
        criteria = "\n".join(f"- {c}" for c in plan.acceptance_criteria) or "- none given"
        related = "\n\n".join(render_audit(i, self.audits[i]) for i in plan.related_rounds)
        pairs = [{"action": action_json(a), "observation": o} for _, a, o in self.round.pairs]
        sections = [
            example_section(self.brief),
            f"Task: {self.goal}",
            EXECUTOR_RULES,
            f"Audited task state:\n{self._state_text()}",
            f"Contract: {plan.contract or 'none yet'}",
            (
                f"Subtask (round {self.round.index}, action {self.round.turns} of at most {self.steps_per_round}): "
                f"{plan.subtask}\nAcceptance criteria:\n{criteria}"
            ),
            DONE_NOTE if plan.next == "done" else "",
            f"Related audit reports:\n{clip_tail(related, self.history_clip_chars)}" if related else "",
            "This round's steps so far:\n"
            + (json.dumps(pairs, indent=1, ensure_ascii=False) if pairs else "none yet"),
            f"Current observation:\n{render_observation(obs)}",
        ]
        return policy_prompt(
            self.brief,
            obs,
            sections,
            max_json_retries=self.max_json_retries,
        )

    def update(self, step: Step) -> Mapping[str, Any] | None:
        if step.after is None or self.round is None:
            return None
        self.round.pairs.append((step.decision.thought, step.decision.action, step.after.text))
        # a round ends with a turn, never between the actions of one multi-action reply (SPEC-BASE §7.2)
        if step.after.done or (step.last_of_turn and self.round.turns >= self.steps_per_round):
            return self._close_round()
        return None

    # --- auditor -------------------------------------------------------------------------------------

    def _auditor_prompt(self, current: Round) -> Prompt:
        claims = "\n".join(
            f"step {i}: thought: {t or '(none)'} | action: {json.dumps(action_json(a), ensure_ascii=False)}"
            for i, (t, a, _) in enumerate(current.pairs, 1)
        )
        observations = "\n".join(
            f"[{i}] {o}" for i, o in enumerate([current.opening, *(o for _, _, o in current.pairs)])
        )
        criteria = "; ".join(current.plan.acceptance_criteria) or "none given"
        related = "\n\n".join(render_audit(i, self.audits[i]) for i in current.plan.related_rounds)
        sections = [
            f"Task: {self.goal}",
            FINAL_STATE_GUARD,
            f"Current task state (background only, not evidence):\n{self._state_text()}",
            f"Contract: {current.plan.contract or 'none'}",
            f"Subtask of round {current.index}: {current.plan.subtask}\nAcceptance criteria: {criteria}",
            f"Executor output (its claims):\n{clip_tail(claims, self.executor_output_clip_chars)}",
            f"Raw observations of this round ([0] is where the round started):\n{observations}",
            f"Related audit reports:\n{related}" if related else "",
            (
                "Reply with the JSON object: status, integrity, contract_audit, verified_facts [{fact, step}] (step = "
                "the numbered observation showing the fact), evidence (short quotes), gaps, state_update."
            ),
        ]
        return Prompt(
            messages=(
                Message("system", AUDITOR_SYSTEM),
                Message("user", "\n\n".join(s for s in sections if s)),
            ),
            max_tokens=self.role_max_tokens,
        )

    def _close_round(self) -> Mapping[str, Any]:
        current, self.round = self.round, None
        assert current is not None
        if self.max_rounds is not None and current.index > self.max_rounds:
            self.counts["unaudited_steps"] += len(current.pairs)
            return {"round": current.index, "audit": None, "reason": "past max_rounds"}
        before = self.model.calls["auditor"]
        report = ask(
            self.model,
            self._auditor_prompt(current),
            AuditReport,
            role="auditor",
            max_repairs=self.header_repair_calls,
        )
        self.counts["auditor_calls"] += 1
        self.counts["auditor_repairs"] += self.model.calls["auditor"] - before - 1
        if isinstance(report, StructuredFailure):
            self.counts["audit_failures"] += 1
            self.feedback.append(f"The audit of round {current.index} failed; its claims stay unverified.")
            return {"round": current.index, "audit": None, "problem": report.problem}
        cited = [f for f in report.verified_facts if 0 <= f.step <= len(current.pairs)]
        self.counts["uncited_facts_rejected"] += len(report.verified_facts) - len(cited)
        self.audits[current.index] = report.model_copy(update={"verified_facts": cited})
        admitted = [LedgerFact(f.fact, current.index, f.step) for f in cited]
        self.ledger.extend(admitted)
        return {"round": current.index, "audit": self.audits[current.index], "admitted": admitted}

    def report(self) -> Mapping[str, Any]:
        pending = len(self.round.pairs) if self.round is not None else 0
        return {
            "rounds": self.rounds,
            **{
                k: self.counts[k]
                for k in (
                    "manager_calls",
                    "manager_failures",
                    "auditor_calls",
                    "auditor_repairs",
                    "audit_failures",
                    "uncited_facts_rejected",
                    "uncited_facts_demoted",
                    "done_overruled",
                )
            },
            "manager_repairs": self.model.calls["manager"] - self.counts["manager_calls"],
            "unaudited_steps": self.counts["unaudited_steps"] + pending,
            "verified_facts": [f"[round {f.round}, step {f.step}] {f.fact}" for f in self.ledger],
            "task_state": self.plan.task_state if self.plan else None,
        }

    def claims(self) -> tuple[Claim, ...]:
        """Its state records as free-text claims: the auditor-verified ledger and the manager's completed facts
        (`ClaimingMethod`)."""
        ledger = [
            Claim("", f.fact, source="verified", ref=f"round {f.round}, step {f.step}") for f in self.ledger
        ]
        done = self.plan.task_state.completed if self.plan else []
        return (*ledger, *(Claim("", f.fact, source="task_state", ref="completed") for f in done))
