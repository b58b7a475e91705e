"""ClinDiag's score as a function of what the episode recorded (SPEC-BENCH §5.5).

`grade` turns the accepted submission (or none), the answer key and a judge into a `Score`. The environment
calls it at the end of an episode with the submission it accepted; re-scoring calls it with the submission
read back from the episode's `events.jsonl` (`submission_of`), so both paths share one scorer.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Protocol

from pos_bench import events
from pos_bench.benchmarks.clindiag.data import AnswerKey, CaseRecord
from pos_bench.benchmarks.clindiag.judge import RulesJudge, Submission, Verdict, appears_in
from pos_bench.types import Score

SUBMIT = "submit_diagnosis"
SUBMITTED_STATUS = "submitted"


class Judge(Protocol):
    def judge(self, submission: Submission, key: AnswerKey, *, record: str = "") -> Verdict: ...


@dataclass(frozen=True)
class Exposure:
    """Whether a case gives its answer away: the reference name, folded, occurs word for word."""

    in_record: bool
    """… anywhere the agent can read (initial presentation or a record section)."""
    in_presentation: bool
    """… already in the initial presentation."""


def record_text(case: CaseRecord) -> str:
    """Everything the agent can learn about the case, as one text."""
    return "\n".join([case.initial_information, *case.sections.values()])


def exposure(case: CaseRecord, key: AnswerKey) -> Exposure:
    presentation = appears_in(key.final_diagnosis, case.initial_information)
    return Exposure(
        in_record=presentation or appears_in(key.final_diagnosis, record_text(case)),
        in_presentation=presentation,
    )


def submission_of(episode: Iterable[events.Event]) -> Submission | None:
    """The submission the environment accepted in an episode's transcript (`step` events), or None."""
    for event in episode:
        if not isinstance(event, events.Step):
            continue
        action, info = event.action, (event.observation or {}).get("info") or {}
        if (
            isinstance(action, Mapping)
            and action.get("name") == SUBMIT
            and info.get("status") == SUBMITTED_STATUS
        ):
            return Submission.from_arguments(action.get("arguments") or {})
    return None


def grade(
    submission: Submission | None, key: AnswerKey, judge: Judge, *, case: CaseRecord, subset: str
) -> Score:
    """The episode's score; extras are flat values the summary averages (None = not applicable):
    judge verdicts, the subset's accuracy, and accuracy split by whether the record names the answer."""
    text = record_text(case)
    judge_rules = isinstance(judge, RulesJudge)
    extras: dict[str, float | int | bool | None] = {"submitted": submission is not None}
    if submission is None:
        extras.update(diagnosis_correct=False, differential_hit=False, undecided=False)
    else:
        verdict = judge.judge(submission, key, record=text)
        # an undecided rules verdict scores as not correct; its rate tells where the offline score is unsure
        extras.update(
            diagnosis_correct=verdict.diagnosis_correct,
            differential_hit=verdict.differential_hit,
            undecided=verdict.undecided,
        )
        if not judge_rules:  # a shadow verdict, for the rules-vs-LLM agreement figure
            shadow = RulesJudge().judge(submission, key, record=text)
            extras.update(
                rules_diagnosis_correct=shadow.diagnosis_correct,
                rules_differential_hit=shadow.differential_hit,
                rules_undecided=shadow.undecided,
            )
    correct = bool(extras["diagnosis_correct"])
    seen = exposure(case, key)
    extras.update(
        no_submission=submission is None,
        judge_rules=judge_rules,
        answer_in_record=seen.in_record,
        answer_in_presentation=seen.in_presentation,
        accuracy_answer_in_record=correct if seen.in_record else None,
        accuracy_answer_not_in_record=None if seen.in_record else correct,
        **{f"accuracy_{name}": correct if name == subset else None for name in ("rare", "challenging")},
    )
    if subset not in ("rare", "challenging"):
        extras[f"accuracy_{subset}"] = correct
    return Score(success=correct, value=float(correct), extras=extras)
