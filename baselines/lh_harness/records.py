"""LongHorizon-Harness's records and texts (SPEC-BASE §7.2): the manager's and auditor's instructions, their
structured replies, the audited ledger, the round in progress, and how an audit is rendered for the executor."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from pos_bench.protocols import Model
from pos_bench.types import Action, Prompt, Reply

MANAGER_SYSTEM = (
    "You are the manager of a long task carried out by an executor in rounds of a few actions. You plan; you "
    "never act. You keep the task state: a fact counts as completed only when an auditor report verified it, "
    "and you cite that round. An executor's claim that no audit confirmed is untrusted, never completed. Each "
    'round you assign one subtask that changes one thing in the world. Route "done" only when an audit header '
    'read complete / clean / aligned and its evidence covers every requirement of the task; "blocked" when '
    "no subtask can make progress. Reply with one JSON object only."
)

AUDITOR_SYSTEM = (
    "You are an independent auditor. An executor just played a round of a task and made claims in its "
    "thoughts. The numbered observations are what the environment really returned: they are the only "
    "evidence. Verify each claim against them; a claim without an observation showing it is not a fact. "
    "Header: status (complete / incomplete / blocked, for the whole task), integrity (clean; suspect when "
    "claims outrun the evidence; violation when the executor acted against the contract) and contract_audit "
    "(aligned / unknown / needs_revision / invalid). Reply with one JSON object only."
)

CONTRACT_RULES = (
    "Contract rules: the contract names the target state of the world, the inputs that are authoritative, "
    "where the result must end up, and the evidence that will show it. Keep it stable; revise it only when an "
    "audit marks it needs_revision or invalid."
)

FINAL_STATE_GUARD = (
    "Final-state guard: the task is finished only when the environment shows the target state; a plan, a "
    "claim or an intention is not evidence."
)

EXECUTOR_RULES = (
    "You are the executor of the subtask below. Do only that subtask with the available actions; do not "
    "re-plan the whole task. Your thought states exactly what the newest observation showed: an auditor will "
    "check it against the raw observations."
)

DONE_NOTE = (
    "The manager judges the task complete from audited evidence. If the task still needs a finishing action "
    "(a submission or a claim of completion), take it now."
)


class _Reply(BaseModel):
    # Closed objects: a schema-constrained decoder then cannot wander into keys nobody asked for.
    model_config = ConfigDict(extra="forbid")


class CitedFact(_Reply):
    fact: str
    rounds: list[int] = Field(description="audited rounds whose reports verified this fact")


class TaskState(_Reply):
    completed: list[CitedFact]
    incomplete: list[str]
    blockers: list[str]
    untrusted: list[str]


class ManagerPlan(_Reply):
    task_state: TaskState
    contract: str
    next: Literal["act", "done", "blocked"]
    subtask: str
    acceptance_criteria: list[str]
    related_rounds: list[int]


class VerifiedFact(_Reply):
    fact: str
    step: int = Field(description="the numbered observation of this round that shows the fact")


class AuditReport(_Reply):
    status: Literal["complete", "incomplete", "blocked"]
    integrity: Literal["clean", "suspect", "violation"]
    contract_audit: Literal["aligned", "unknown", "needs_revision", "invalid"]
    verified_facts: list[VerifiedFact]
    evidence: list[str]
    gaps: list[str]
    state_update: str


@dataclass(frozen=True)
class LedgerFact:
    """An auditor-verified fact with its citation: the round and the step whose observation shows it."""

    fact: str
    round: int
    step: int


@dataclass
class Round:
    """The round in progress: the manager's plan and the executor's own pairs."""

    index: int
    plan: ManagerPlan
    opening: str
    """The observation the round started from (step 0 for the auditor)."""
    turns: int = 0
    pairs: list[tuple[str, Action, str]] = field(default_factory=list)
    """(thought, action, observation) per executed action."""


class CountedCalls:
    """Counts the calls a role makes, so repairs can be told apart from first calls."""

    def __init__(self, model: Model):
        self.model = model
        self.name = model.name
        self.calls: Counter[str] = Counter()

    def describe(self) -> Mapping[str, Any]:
        return self.model.describe()

    def generate(self, prompt: Prompt, *, role: str = "agent") -> Reply:
        self.calls[role] += 1
        return self.model.generate(prompt, role=role)


def clip_tail(text: str, limit: int) -> str:
    """The last `limit` characters of `text`, marked when something was cut (the newest part matters most)."""
    return text if len(text) <= limit else "[… earlier text clipped …]\n" + text[-limit:]


def render_audit(index: int, report: AuditReport) -> str:
    facts = "; ".join(f"{f.fact} (step {f.step})" for f in report.verified_facts) or "none"
    return (
        f"Round {index} audit — status: {report.status}, integrity: {report.integrity}, contract audit: "
        f"{report.contract_audit}\nVerified facts: {facts}\nEvidence: {'; '.join(report.evidence) or 'none'}\n"
        f"Gaps: {'; '.join(report.gaps) or 'none'}\nState update: {report.state_update or 'none'}"
    )
