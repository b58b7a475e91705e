"""PoS as a `Method`: the policy acts from an explicit belief state, never from the raw history (SPEC-POS §5).

Per executed action: belief delta → Sentinel audit (≤ 1 repair, else keep the old belief) → commit → progress
label → health, diagnosis and recovery (pure Python) → belief text. The parts live in the sibling modules;
this file only wires them and keeps the episode's records for the transcript and `result.json`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from pos_bench.pos.belief import Belief, Goal, changed_ids, gap_targets
from pos_bench.pos.claims import world_claims
from pos_bench.pos.gaps import GAP_TYPES, GapIds, same_pointer
from pos_bench.pos.health import BeliefHealth, HealthTransition, Snapshot, TrappingConfig, assess, window_of
from pos_bench.pos.recovery import RecoveryConfig, RecoveryDirective, compose
from pos_bench.pos.sentinel import (
    ProgressLabel,
    SentinelConfig,
    audit,
    audit_window,
    diagnostic_progress,
    judge_progress,
)
from pos_bench.pos.updater import BeliefFailure, Updater
from pos_bench.pos.view import sections
from pos_bench.prompting import policy_prompt
from pos_bench.protocols import MethodBase, Model
from pos_bench.truth import Claim
from pos_bench.types import Brief, Observation, Prompt, Step, Task, action_json


@dataclass
class _Records:
    """Everything the episode reports (§16), appended as the episode runs."""

    raw: list[dict[str, Any]] = field(default_factory=list)
    updates: list[dict[str, Any]] = field(default_factory=list)
    health: list[dict[str, Any]] = field(default_factory=list)
    transitions: list[HealthTransition] = field(default_factory=list)
    snapshots: dict[int, Snapshot] = field(default_factory=dict)
    frontier: list[dict[str, Any]] = field(default_factory=list)
    recovery: list[dict[str, Any]] = field(default_factory=list)
    audits: list[dict[str, Any]] = field(default_factory=list)
    progress: list[dict[str, Any]] = field(default_factory=list)
    pending_issues: list[dict[str, Any]] = field(default_factory=list)
    context_errors: list[dict[str, Any]] = field(default_factory=list)


class Pos(MethodBase):
    """Progression of States. `sentinel`, `trapping` and `recovery` are the fields of their config records."""

    def __init__(
        self,
        model: Model,
        *,
        sentinel: Mapping[str, Any] | None = None,
        trapping: Mapping[str, Any] | None = None,
        recovery: Mapping[str, Any] | None = None,
        belief_max_tokens: int = 4096,
        max_json_retries: int = 1,
    ):
        if max_json_retries < 0 or belief_max_tokens < 1:
            raise ValueError(
                f"bad PoS settings: max_json_retries={max_json_retries}, belief_max_tokens={belief_max_tokens}"
            )
        self.model = model
        self.sentinel = SentinelConfig(**(sentinel or {}))
        self.trapping = TrappingConfig(**(trapping or {}))
        self.recovery = RecoveryConfig(**(recovery or {}))
        self.belief_max_tokens = belief_max_tokens
        self.max_json_retries = max_json_retries
        self.records = _Records()
        self.step = 0
        """Belief interaction counter: the env step index of the next action (§2.10)."""
        self.ordinal = 0
        self.frontier_episode = 0
        self.gap_ids = GapIds()
        self.current_ids: dict[str, list[str]] = {t: [] for t in GAP_TYPES}
        self.health = BeliefHealth(health_threshold=self.trapping.health_threshold)
        self.directive: RecoveryDirective | None = None
        self.belief_text = ""
        self.memo: dict[str, Any] = {}

    # --- episode start (§5.2) -------------------------------------------------------------------------
    def start(self, task: Task, brief: Brief, first: Observation) -> None:
        self.brief = brief
        self.mode = brief.mode
        self.updater = Updater(self.model, mode=brief.mode, max_tokens=self.belief_max_tokens)
        self.records.raw.append(self._raw_entry(-1, None, first))
        base = Belief(Goal(first.goal or task.id))
        self.belief = base
        candidate = self.updater.init(base, first.text)
        status, final = self._validate(
            base, candidate, lambda issues: self.updater.init(base, first.text, issues)
        )
        self._commit(-1, status, candidate, final)
        self.belief_text = self.updater.textualize(final)

    def prompt(self, obs: Observation) -> Prompt:
        directive = (
            self.directive if self.directive and self.step >= self.directive.applies_from_step else None
        )
        parts = sections(self.brief, obs, self.belief, self.belief_text, directive)
        return policy_prompt(
            self.brief,
            obs,
            parts,
            max_json_retries=self.max_json_retries,
        )

    # --- per-action pipeline (§5.3) -------------------------------------------------------------------
    def update(self, step: Step) -> Mapping[str, Any] | None:
        after = step.after
        if after is None:
            return None
        index = self.step
        self.records.raw.append(self._raw_entry(index, step.decision.action, after))
        if self.directive and index >= self.directive.applies_from_step:
            self.directive.recovery_action_steps.append(index)
        self.step += 1
        try:
            return self._process(index, step)
        except Exception as error:
            # §5.5: any failure on the terminal transition is a context error; the loop keeps the environment's
            # outcome and records it (result, transcript, results row), so it propagates like any other.
            if after.done:
                self.records.context_errors.append(
                    {
                        "step": index,
                        "phase": "update",
                        "error_type": type(error).__name__,
                        "error": str(error),
                    }
                )
                self._end_recovery("task_terminal", index)
            raise

    def _process(self, index: int, step: Step) -> dict[str, Any]:
        after = step.after
        assert after is not None
        before = self.belief
        context = self._context(before)
        transition = {
            "thought": step.decision.thought,
            "action": action_json(step.decision.action),
            "observation": after.text,
        }
        candidate = self.updater.update(before, context, transition)
        self.ordinal += 1
        status, final = self._validate(
            before, candidate, lambda issues: self.updater.update(before, context, transition, issues)
        )
        self._commit(index, status, candidate, final)
        success = _env_success(after)
        record = HealthTransition(
            step=index,
            frontier_episode=self.frontier_episode,
            frontier=before.active_gap.model_dump() if before.active_gap else None,
            action=action_json(step.decision.action),
            observation=after.text,
            done=after.done,
            success=success,
        )
        label = self._progress(index, before, final, record)
        record.progress, record.scoring_method, record.score = (
            label.progress,
            label.scoring_method,
            label.score,
        )
        record.affected_record_ids, record.reason = label.affected_record_ids, label.reason
        self.records.transitions.append(record)
        self.records.progress.append({"step": index, **asdict(label)})
        ended = len(self.records.recovery)
        health: BeliefHealth | None = None
        if label.progress is not None and not after.done and self.trapping.enabled:
            health = self._health_and_recovery(index)
        if after.done:
            self._end_recovery("task_terminal", index)
        else:
            self.belief_text = self.updater.textualize(final)
        return {
            "step": index,
            "status": status,
            "candidate_belief": self.records.updates[-1]["candidate_belief"],
            "committed_belief": self.records.updates[-1]["final_belief"],
            "audit": [a for a in self.records.audits if a["step"] == index],
            "progress": asdict(label),
            "health": asdict(health) if health else None,
            "recovery": asdict(self.directive) if self.directive else None,
            "recovery_ended": self.records.recovery[ended:],
            "belief_text": None if after.done else self.belief_text,
        }

    # --- consistency lane (§7.5) ----------------------------------------------------------------------
    def _validate(
        self, before: Belief, candidate: Belief, redo: Callable[[list], Belief]
    ) -> tuple[str, Belief]:
        if not (self.sentinel.enabled and self.sentinel.consistency_enabled):
            return "validated", candidate
        window = audit_window(self.records.raw, self.ordinal, self.sentinel)
        if window is None:
            return "validated", candidate
        mode, evidence = window
        first = self._audit(mode, evidence, before, candidate)
        if first.failed:
            return "rejected", before
        if first.issue is None:
            return "validated", candidate
        try:
            repaired = redo([first.issue])
        except BeliefFailure:
            self.records.pending_issues.append(first.issue)
            return "rejected", before
        second = self._audit(mode, evidence, before, repaired)
        if second.failed or second.issue is not None:
            self.records.pending_issues.append(second.issue or first.issue)
            return "rejected", before
        return "repaired", repaired

    def _audit(self, mode: str, evidence: list[dict], before: Belief, candidate: Belief):
        b, c = before.world.to_dict(), candidate.world.to_dict()
        # SPEC-POS §6.5's keys; the belief before comes first, as in the progress lane's payload (prefix reuse)
        payload = {
            "belief_before": self._context(before),
            "candidate_belief": self._context(candidate),
            "step": self.step,
            "changed_ids": changed_ids(b, c),
            "raw_trajectory": evidence,
        }
        known = {i for w in (b, c) for kind in w.values() for i in kind} | gap_targets(before, candidate)
        verdict = audit(self.model, self.sentinel, payload, known)
        self.records.audits.append(
            {
                "step": self.step - 1,
                "audit_mode": mode,
                "failed": verdict.failed,
                "issues": [verdict.issue] if verdict.issue else [],
                "ungrounded": verdict.dropped,
            }
        )
        return verdict

    def _commit(self, index: int, status: str, candidate: Belief, final: Belief) -> None:
        previous = self.belief.active_gap
        self.records.updates.append(
            {
                "step": index,
                "status": status,
                "candidate_belief": candidate.to_dict(),
                "final_belief": final.to_dict(),
            }
        )
        if not same_pointer(previous, final.active_gap):
            self.frontier_episode += 1
            self.records.frontier.append(
                {
                    "step": index,
                    "frontier_episode": self.frontier_episode,
                    "previous": previous.model_dump() if previous else None,
                    "current": final.active_gap.model_dump() if final.active_gap else None,
                    "current_gap": final.expanded_active_gap(),
                }
            )
        self.belief = final
        self.current_ids = {t: self.gap_ids.reconcile(t, final.gaps()[t]) for t in GAP_TYPES}
        self.records.snapshots[index] = Snapshot(
            index,
            final.world.to_dict(),
            tuple(self.current_ids["epistemic"]),
            tuple(self.current_ids["achievement"]),
            final.active_gap.model_dump() if final.active_gap else None,
            memo=self.memo,
        )

    # --- progress lane (§8) ---------------------------------------------------------------------------
    def _progress(self, index: int, before: Belief, after: Belief, record: HealthTransition) -> ProgressLabel:
        if not (self.sentinel.enabled and self.sentinel.progress_enabled):
            return ProgressLabel(None, "disabled")
        b, a = before.world.to_dict(), after.world.to_dict()
        if self.mode == "diagnostic":
            return diagnostic_progress(b, a, threshold=self.sentinel.diagnostic_progress_threshold)
        if record.success:
            return ProgressLabel(1, "env_success", 1.0, [], "the environment reports success")
        # SPEC-POS §6.6's keys, the two beliefs first (the audit's payload opens with the same belief before)
        payload = {
            "belief_before": self._context(before),
            "belief_after": self._context(after),
            "step": index,
            "frontier": record.frontier,
            "action": record.action,
            "observation": record.observation,
        }
        changed = {i for ids in changed_ids(b, a).values() for i in ids}
        return judge_progress(self.model, self.sentinel, payload, changed)

    # --- health, diagnosis, recovery (§10–12) ----------------------------------------------------------
    def _health_and_recovery(self, index: int) -> BeliefHealth:
        window = window_of(self.records.transitions, self.records.snapshots, self.trapping.window_size)
        assessment = assess(window, self.belief.expanded_active_gap(), self.trapping)
        self.health = assessment.health
        self.records.health.append({"step": index, **asdict(self.health)})
        if not self.health.trapped or not self.recovery.enabled:
            self._end_recovery("health_recovered", index)
            return self.health
        self._end_recovery("rediagnosed", index)
        self.directive = compose(
            assessment,
            gaps=self.belief.gaps(),
            gap_ids=self.current_ids,
            active_gap=self.belief.active_gap,
            step=self.step,
            transitions=self.records.transitions,
            snapshots=sorted(self.records.snapshots.values(), key=lambda s: s.step),
            config=self.recovery,
            epsilon=self.trapping.recurrence_epsilon,
        )
        return self.health

    def _end_recovery(self, status: str, index: int) -> None:
        if self.directive is not None:
            self.records.recovery.append(
                {"status": status, "step": index, "recovery": asdict(self.directive)}
            )
            self.directive = None

    # --- views ----------------------------------------------------------------------------------------
    def _context(self, belief: Belief) -> dict[str, Any]:
        """The belief JSON handed to the belief and sentinel roles (§2.10)."""
        data = belief.to_dict()
        return {
            "type": "belief",
            "goal": data["goal"],
            "world": data["world"],
            "epistemic_gaps": data["epistemic_gaps"],
            "achievement_gaps": data["achievement_gaps"],
            "health": asdict(self.health),
            "frontier": data["frontier"],
            "frontier_gap": belief.expanded_active_gap(),
            "step": self.step,
        }

    def _raw_entry(self, index: int, action: Any, obs: Observation) -> dict[str, Any]:
        return {
            "step": index,
            "action": action_json(action),
            "observation": obs.text,
            "done": obs.done,
            "success": _env_success(obs),
            "available_actions": list(obs.actions),
        }

    def claims(self) -> tuple[Claim, ...]:
        """What the committed belief states about the world (`ClaimingMethod`)."""
        return world_claims(self.belief.world.to_dict())

    def report(self) -> Mapping[str, Any]:
        r = self.records
        trapping = self.trapping.enabled
        return {
            "raw_trajectory": r.raw,
            "belief_state": {**self.belief.to_dict(), "belief_text": self.belief_text},
            "belief_update_history": r.updates,
            "belief_health": asdict(self.health) if trapping else None,
            "belief_health_history": r.health,
            "health_transitions": [asdict(t) for t in r.transitions] if trapping else [],
            "frontier_history": r.frontier,
            "active_recovery": asdict(self.directive) if self.directive else None,
            "recovery_history": r.recovery,
            "belief_sentinel": {
                "pending_issues": r.pending_issues,
                "audit_history": r.audits,
                "progress_history": r.progress,
            },
            "context_errors": r.context_errors,
        }


def _env_success(obs: Observation) -> bool:
    return bool(obs.info.get("won") or obs.info.get("success"))
