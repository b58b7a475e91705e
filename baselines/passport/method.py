"""Situation passport: the verbal, code-free cousin of PoS. One policy call per step returns the controller check,
the whole rewritten passport, the model's own health judgement, the active gap and the action.

Where PoS measures health numerically and writes recovery constraints from Static/Cycle/Drift (SPEC-POS §10–§12),
here the model declares stall, movement (frozen / circle / drift) and the kind of gap it is stuck on; this file
only turns that declaration into constraint text for the next prompt and lifts it when the model declares
progress. The passport is the only memory unless `history="full"` also shows the raw steps.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from baselines.passport.protocol import AUDITOR_SYSTEM, Constraint, constraint_text, protocol_text
from baselines.passport.records import (
    ActiveGap,
    Finding,
    Passport,
    PassportLimits,
    PassportReply,
    ReplyShape,
    entity_changes,
    read_reply,
    rule_check,
)
from pos_bench.prompting import decision_model, example_section, policy_prompt, render_observation
from pos_bench.protocols import MethodBase, Model
from pos_bench.structured import StructuredFailure, ask
from pos_bench.truth import Claim
from pos_bench.types import Brief, Message, Observation, Prompt, Step, Task, action_json

MAX_JSON_RETRIES = 2
"""Policy repairs, as for every non-PoS baseline (SPEC-BASE §2.1)."""


class SituationPassport(MethodBase):
    """method=passport. Levers: `window` (steps without progress that make a stall, judged by the model),
    `active_gaps` (1 or 2), `check_scope` ("changed" entries or "all"), `confidence` / `source` (off = the
    short passport), `task_rules` (extra recovery constraints added to every stall constraint), `history`
    ("full" also shows the raw steps, as a chat would), `auditor` (an independent `passport_auditor` call
    lists problems before the acting call), `reply_tokens` (added to the benchmark's policy reply budget), `limits`
    (decode-time caps for a small model, `PassportLimits` fields; None = no caps, for any capable model)."""

    def __init__(
        self,
        model: Model,
        *,
        window: int = 3,
        active_gaps: int = 1,
        check_scope: Literal["changed", "all"] = "changed",
        confidence: bool = True,
        source: bool = True,
        task_rules: Sequence[str] = (),
        history: Literal["none", "full"] = "none",
        auditor: bool = False,
        reply_tokens: int = 1024,
        limits: PassportLimits | Mapping[str, int] | None = None,
    ):
        if window < 1:
            raise ValueError(f"window must be ≥ 1, got {window}")
        if check_scope not in ("changed", "all"):
            raise ValueError(f"check_scope must be 'changed' or 'all', got {check_scope!r}")
        if history not in ("none", "full"):
            raise ValueError(f"history must be 'none' or 'full', got {history!r}")
        if reply_tokens < 0:
            raise ValueError(f"reply_tokens must be ≥ 0, got {reply_tokens}")
        self.model = model
        if isinstance(limits, Mapping):
            limits = PassportLimits(**limits)
        self.shape = ReplyShape(confidence=confidence, source=source, active_gaps=active_gaps, limits=limits)
        self.window, self.check_scope, self.history_mode = window, check_scope, history
        self.task_rules, self.auditor, self.reply_tokens = tuple(task_rules), auditor, reply_tokens
        self.passport: Passport | None = None
        self.changed: list[str] = []
        self.active: list[ActiveGap] = []
        self.constraint: Constraint | None = None
        self.recent: deque[dict[str, Any]] = deque(maxlen=window)
        self.history: list[dict[str, Any]] = []
        self.last: dict[str, Any] | None = None
        self.audit: dict[str, Any] | None = None
        self.turn = -1
        """The current policy turn (one prompt per turn), for the step numbers the passport cites as sources."""
        self.committed_at: int | None = None
        self.absorbed_turn: int | None = None
        """The turn whose reply (passport, health) was committed; the further actions of a multi-action reply
        only extend the recent steps."""
        self.counts = dict.fromkeys(
            (
                "stalls_declared",
                "constraints_issued",
                "constraints_lifted",
                "malformed_replies",
                "auditor_calls",
                "auditor_failures",
                "health_conflicts",
                "model_findings",
                "auditor_findings",
                "rule_findings",
            ),
            0,
        )

    def start(self, task: Task, brief: Brief, first: Observation) -> None:
        self.brief = brief
        self.goal = first.goal

    def prompt(self, obs: Observation) -> Prompt:
        self.turn += 1
        self.audit = self._run_auditor() if self.auditor and self.passport is not None else None
        schema = decision_model(
            obs, extra_fields=self.shape.extra_fields(), max_actions=self.brief.max_actions_per_turn
        ).model_json_schema()
        return policy_prompt(
            self.brief,
            obs,
            self._sections(obs),
            schema=schema,
            max_tokens=self.brief.policy_max_tokens + self.reply_tokens,
            max_json_retries=MAX_JSON_RETRIES,
        )

    def _sections(self, obs: Observation) -> list[str]:
        sections = [
            example_section(self.brief),
            f"Task: {self.goal}",
            protocol_text(self.shape, window=self.window, check_scope=self.check_scope),
            "Passport: none yet; write the first one from the task and the observation."
            if self.passport is None
            else f"Passport (committed at step {self.committed_at}): {self.passport.model_dump_json(exclude_none=True)}",
        ]
        if self.active:
            sections.append(
                "Active gap: " + json.dumps([g.model_dump() for g in self.active], ensure_ascii=False)
            )
        if self.recent:
            lines = [
                f"- step {r['step']}: {json.dumps(r['action'], ensure_ascii=False)} → progress: {r['progress']}"
                for r in self.recent
            ]
            sections.append(f"Your last {len(lines)} steps:\n" + "\n".join(lines))
        if self.constraint is not None:
            sections.append(f"CONSTRAINT (from step {self.constraint.declared_at}): {self.constraint.text}")
        if self.audit and self.audit["findings"]:
            found = json.dumps(self.audit["findings"], ensure_ascii=False)
            sections.append(
                f"An independent controller found these problems; fix them in the passport: {found}"
            )
        if self.history_mode == "full":
            sections.append(
                "Previous steps:\n"
                + (json.dumps(self.history, indent=1, ensure_ascii=False) if self.history else "none yet")
            )
        sections.append(f"Step {self.turn}. Newest observation:\n{render_observation(obs)}")
        return sections

    def _run_auditor(self) -> dict[str, Any]:
        """The independent controller (issue lever `passport.auditor`): lists problems of the committed passport
        against the latest transition; skipped when scope is "changed" and nothing changed at the last commit."""
        names = self.changed if self.check_scope == "changed" else [e.name for e in self.passport.entities]
        if not names:
            return {"called": False, "findings": []}
        scope = (
            "every entry"
            if self.check_scope == "all"
            else "these entries: " + json.dumps(names, ensure_ascii=False)
        )
        last = self.last or {}
        user = "\n\n".join(
            [
                f"Task: {self.goal}",
                f"Passport: {self.passport.model_dump_json(exclude_none=True)}",
                (
                    f"Latest evidence: before: {last.get('before', '')}\naction: {json.dumps(last.get('action'))}\n"
                    f"newest observation: {last.get('after', '')}"
                ),
                (
                    f"Check {scope}. Report an entity in two states that cannot both hold (incompatible), an entry the "
                    "evidence disproves (contradicted), or a conclusion without a source (unsourced)."
                ),
                'Reply with one JSON object {"problems": [{"entry", "problem", "detail"}]}; [] if there are none.',
            ]
        )
        prompt = Prompt(messages=(Message("system", AUDITOR_SYSTEM), Message("user", user)), max_tokens=512)
        self.counts["auditor_calls"] += 1
        report = ask(self.model, prompt, self.shape.audit_model(), role="passport_auditor", max_repairs=1)
        if isinstance(report, StructuredFailure):
            self.counts["auditor_failures"] += 1
            return {"called": True, "failure": report.problem, "findings": []}
        self.counts["auditor_findings"] += len(report.problems)
        return {"called": True, "findings": [f.model_dump() for f in report.problems]}

    def update(self, step: Step) -> Mapping[str, Any] | None:
        if step.after is None:
            return None
        reply = read_reply(step.decision.extra, self.shape)
        shown = self.constraint.text if self.constraint else None
        first = step.turn != self.absorbed_turn
        self.absorbed_turn = step.turn
        findings = self._commit(reply, step.turn) if first else []
        event = self._health(reply, step) if first else None
        action = action_json(step.decision.action)
        self.recent.append({"step": step.turn, "action": action, "progress": "not judged yet"})
        self.last = {"before": step.before.text, "action": action, "after": step.after.text}
        if self.history_mode == "full":
            self.history.append(
                {"thought": step.decision.thought, "action": action, "observation": step.after.text}
            )
        return {
            "passport": self.passport.model_dump(exclude_none=True) if self.passport else None,
            "committed": reply.passport is not None,
            "changed_entities": self.changed,
            "active_gaps": [g.model_dump() for g in self.active],
            "check": {
                "model": [f.model_dump() for f in reply.check or []],
                "auditor": self.audit,
                "rules": [f.model_dump() for f in findings],
            },
            "health": reply.health.model_dump() if reply.health else None,
            "diagnosis": {"movement": reply.health.movement, "stuck_on": reply.health.stuck_on}
            if reply.health and reply.health.stall
            else None,
            "constraint": {
                "shown": shown,
                "event": event,
                "next": self.constraint.text if self.constraint else None,
            },
            "gap_kept": self._gap_kept(),
            "health_conflict": bool(reply.health and reply.health.progress and reply.health.stall),
            "citations": reply.citations,
            "malformed": reply.problems,
        }

    def _commit(self, reply: PassportReply, turn: int) -> list[Finding]:
        """Commit the fixed passport; a malformed one leaves the previous passport in force (nothing unchecked
        is ever committed) while the action, already executed by the loop, stands."""
        if reply.problems:
            self.counts["malformed_replies"] += 1
        self.counts["model_findings"] += len(reply.check or [])
        if reply.active_gaps is not None:
            self.active = reply.active_gaps
        if reply.passport is None:
            self.changed = []
            return []
        changed = entity_changes(self.passport, reply.passport)
        names = changed if self.check_scope == "changed" else [e.name for e in reply.passport.entities]
        passport, findings = rule_check(
            reply.passport, names, mark_unsourced=self.shape.confidence and self.shape.source
        )
        self.counts["rule_findings"] += len(findings)
        self.passport, self.changed = passport, changed
        self.committed_at = turn
        return findings

    def _health(self, reply: PassportReply, step: Step) -> str | None:
        """Constraint lifecycle from the declared health: progress lifts it, a stall issues a fresh one, anything
        else (incl. an unreadable health) keeps the current one."""
        health = reply.health
        if health is None:
            return "kept" if self.constraint else None
        if self.recent:
            self.recent[-1]["progress"] = "yes" if health.progress else "no"
        if health.progress:  # progress wins over a stall declared in the same breath
            self.counts["health_conflicts"] += int(health.stall)
            if self.constraint is None:
                return None
            self.constraint = None
            self.counts["constraints_lifted"] += 1
            return "lifted"
        if not health.stall:
            return "kept" if self.constraint else None
        self.counts["stalls_declared"] += 1
        gaps = self.constraint.gaps if self.constraint else tuple(g.gap for g in self.active)
        judged = [r["action"] for r in self.recent]
        text = constraint_text(health, gaps=gaps, recent_actions=judged, task_rules=self.task_rules)
        event = "reissued" if self.constraint else "issued"
        self.counts["constraints_issued"] += int(event == "issued")
        self.constraint = Constraint(step.turn, health.movement, health.stuck_on, gaps, text)
        return event

    def _gap_kept(self) -> bool | None:
        if self.constraint is None:
            return None
        return {g.casefold() for g in self.constraint.gaps} == {g.gap.casefold() for g in self.active}

    def report(self) -> Mapping[str, Any]:
        return {
            "passport": self.passport.model_dump(exclude_none=True) if self.passport else None,
            "active_gaps": [g.model_dump() for g in self.active],
            "constraint": self.constraint.text if self.constraint else None,
            **self.counts,
        }

    def claims(self) -> tuple[Claim, ...]:
        """The committed passport's world records: each entry's state, each relation between names or states
        (`ClaimingMethod`)."""
        if self.passport is None:
            return ()
        entries = [
            Claim(e.name, e.state, source=e.source or "", confidence=e.confidence or "", ref=e.name)
            for e in self.passport.entities
        ]
        links = [
            Claim(r.source, r.relation, r.target, ref=f"{r.source}->{r.target}")
            for r in self.passport.relations
        ]
        return (*entries, *links)
