"""ClinDiag (SPEC-BENCH §5): a doctor agent questions a patient record through five tools and submits one
diagnosis, which a judge compares with the case's reference diagnosis.

Benchmark-side roles: the information provider (`roles.py`) answers each question from one record section, and
the judge (`judge.py`) scores the submission. Each has an LLM form (calls `model.generate` with role
`benchmark_provider` / `benchmark_judge`, so its tokens stay out of the method's totals; its fixed model must be
set under `roles:`, and the benchmark refuses to start without it) and an offline deterministic stand-in
(`record` provider, `rules` judge; SPEC-BENCH §5.8), approximations labelled as such (`labels`).

The score is a function of the accepted submission (`scoring.py`), so a finished run can be judged again from
its transcripts (`score_transcript`). Listing tasks opens no case file; the answer key is read only when
scoring; tool handlers see only the case's record sections, and tool arguments are never used to
locate files."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pos_bench.benchmarks.clindiag.data import (
    CaseRecord,
    CaseRef,
    Source,
    find_source,
    load_answer,
    load_case,
    missing_files,
    select_refs,
)
from pos_bench.benchmarks.clindiag.judge import LLMJudge, RulesJudge, Submission
from pos_bench.benchmarks.clindiag.roles import QUERY_TOOLS, LLMProvider, RecordProvider
from pos_bench.benchmarks.clindiag.scoring import SUBMIT, SUBMITTED_STATUS, grade, submission_of
from pos_bench.benchmarks.guards import NOT_A_TOOL_CALL, UNKNOWN_TOOL, cap, mentions_any
from pos_bench.events import Event
from pos_bench.protocols import Model
from pos_bench.types import Action, Brief, Observation, Score, Task, ToolCall

LOG = logging.getLogger(__name__)
ANSWER_KEY = "answer_key"
NARROWER = "Ask a narrower question to get the rest."
SUBSET_CHOICES = ("all", "rare", "challenging")
PROVIDERS = {"record": RecordProvider, "llm": LLMProvider}
JUDGES = {"rules": RulesJudge, "llm": LLMJudge}

SYSTEM = """You are a physician working up a single patient, reasoning step by step and acting through tools.

How to act:
- Every turn, call exactly one tool from the available list; that list is complete, and no other tool exists.
- In the thought, state what the most recent answer established and which possibilities you still need to rule in or out.
- The patient's record can only be reached through the tools, and each tool call carries one specific question.
- Call submit_diagnosis exactly once, naming the most specific diagnosis the evidence supports.

Your role:
- At the start you know only the patient's initial presentation. The history, the examination findings and the test
  results are in the record, and you must ask for them.
- An information provider answers each question from the record alone. It answers only what you asked, adds nothing of
  its own accord and never guesses.
- Aim for the most specific diagnosis that the record's evidence supports.

Clinical workflow:
- Work in the usual order: history, then physical examination, then tests (laboratory, imaging, other), then the
  diagnosis.
- Go back to an earlier stage when a new finding calls for it (an abnormal result may raise a new history question).
- Keep a differential in mind and shrink it as findings arrive; use targeted tests to confirm or exclude the leading
  candidates.
- Obtain the decisive evidence before concluding; the initial presentation alone is not enough while questions remain.

Asking questions:
- One focused question per call, such as "Does the patient smoke?", "Is the liver enlarged on palpation?" or "What was the
  serum sodium?".
- Broad questions ("Anything else abnormal?") get poor answers, because the provider answers narrowly.
- An answer of "not specified" or "no record" means the record does not hold that item: move on rather than rephrasing.
- Send each question to the matching tool: history to ask_history, examination findings to ask_physical_exam, results to
  the laboratory, radiographic or other test tool.

Submitting:
- Call submit_diagnosis once, with arguments {"final_diagnosis": "<one specific condition>", "differential_diagnosis":
  "<alternatives, most likely first>", "diagnostic_reasoning": "<the evidence that decided it>"}.
- final_diagnosis names one specific disease or condition, not a category of diseases.
- A submission without a final_diagnosis is rejected and still costs a turn; a valid submission closes the case at once
  and cannot be revised."""

EXAMPLE = """Example of the reply format only (an invented patient, not a case from this benchmark):
Task: {"case_id": "example", "subset": "example", "initial_presentation": "A 40-year-old man with two days of fever and a cough."}
Observation: The patient reports green sputum and pain on the right side of the chest when breathing in.
Available tools: ask_history, ask_physical_exam, order_lab_test, order_radiographic_test, order_other_test, submit_diagnosis
Reply: {"thought": "Productive cough with pleuritic pain points to a lower respiratory infection; imaging should show whether there is consolidation.", "action": {"name": "order_radiographic_test", "arguments": {"question": "What did the chest X-ray show?"}}}
Shape of the final reply, once the evidence is enough:
{"thought": "<what the evidence shows>", "action": {"name": "submit_diagnosis", "arguments": {"final_diagnosis": "<one specific condition>", "differential_diagnosis": "<alternatives>", "diagnostic_reasoning": "<decisive findings>"}}}"""

FINAL_TURN_NOTE = (
    "This is your last turn: no questions can follow it. Call submit_diagnosis now with the diagnosis that the "
    "evidence gathered so far supports best."
)

OPENING = """Only the patient's initial presentation is known so far:
{presentation}

The medical history, physical examination and test results are in the patient's record and can be obtained only through
the tools, one specific question per turn. Investigate, then call submit_diagnosis exactly once."""

ANSWER_KEY_REJECTED = (
    "Rejected: an argument refers to answer_key, which is not part of this environment. Nothing was done."
)
NO_QUESTION = "{name} needs a non-empty string argument 'question'. Nothing was asked."
BAD_SUBMISSION = "Submission rejected: final_diagnosis must be a non-empty string naming one condition. The case is still open."
SUBMITTED = "Diagnosis submitted. The case is closed."


def tool_schemas() -> tuple[dict[str, Any], ...]:
    """The OpenAI function-tool schemas the agent sees: five question tools and the submission tool."""
    question = {
        "type": "object",
        "properties": {"question": {"type": "string", "description": "One specific, targeted question."}},
        "required": ["question"],
    }
    tools = [
        {
            "type": "function",
            "function": {"name": name, "description": tool.description, "parameters": question},
        }
        for name, tool in QUERY_TOOLS.items()
    ]
    tools.append(
        {
            "type": "function",
            "function": {
                "name": SUBMIT,
                "description": (
                    "Submit the diagnosis and close the case; call it once, when the evidence is enough. "
                    "final_diagnosis names one specific condition, not a category."
                ),
                "parameters": {
                    "type": "object",
                    "properties": {
                        "final_diagnosis": {
                            "type": "string",
                            "description": "The single most specific diagnosis.",
                        },
                        "differential_diagnosis": {
                            "type": "string",
                            "description": "Alternatives, most likely first.",
                        },
                        "diagnostic_reasoning": {
                            "type": "string",
                            "description": "The evidence behind the diagnosis.",
                        },
                    },
                    "required": ["final_diagnosis"],
                },
            },
        }
    )
    return tuple(tools)


TOOLS = tool_schemas()


@dataclass(frozen=True)
class _Outcome:
    text: str
    status: str
    """answered | invalid | rejected | submitted"""


class ClinDiagEnv:
    def __init__(
        self,
        source: Source,
        refs: Mapping[str, CaseRef],
        model: Model,
        *,
        provider: str,
        judge: str,
        obs_cap: int,
    ):
        self._source = source
        self._refs = dict(refs)
        self._provider = PROVIDERS[provider](model)
        self._judge = JUDGES[judge](model)
        self._obs_cap = obs_cap

    def reset(self, task: Task) -> Observation:
        self._ref = self._refs[task.id]
        self._case: CaseRecord = load_case(self._source, self._ref)
        self._submission: Submission | None = None
        self._goal = json.dumps(
            {
                "case_id": self._case.id,
                "subset": self._case.subset,
                "initial_presentation": self._case.initial_information,
            },
            indent=2,
            ensure_ascii=False,
        )
        return self._observe(_Outcome(OPENING.format(presentation=self._case.initial_information), "started"))

    def _observe(self, outcome: _Outcome, tool: str = "") -> Observation:
        return Observation(
            text=cap(outcome.text, self._obs_cap, hint=NARROWER),
            tools=TOOLS,
            done=self._submission is not None,
            goal=self._goal,
            info={"case_id": self._case.id, "tool": tool, "status": outcome.status},
        )

    def step(self, action: Action) -> Observation:
        if not isinstance(action, ToolCall) or not isinstance(action.arguments, Mapping):
            return self._observe(_Outcome(NOT_A_TOOL_CALL, "invalid"))
        return self._observe(self._call(action), action.name)

    def _call(self, action: ToolCall) -> _Outcome:
        if mentions_any(action.arguments, (ANSWER_KEY,)):
            return _Outcome(ANSWER_KEY_REJECTED, "rejected")
        if action.name == SUBMIT:
            return self._submit(action.arguments)
        tool = QUERY_TOOLS.get(action.name)
        if tool is None:
            return _Outcome(
                UNKNOWN_TOOL.format(name=action.name, names=", ".join([*QUERY_TOOLS, SUBMIT])), "invalid"
            )
        question = action.arguments.get("question")
        if not isinstance(question, str) or not question.strip():
            return _Outcome(NO_QUESTION.format(name=action.name), "invalid")
        # Only the tool's fixed record section reaches the provider; the question never names a file.
        return _Outcome(
            self._provider.answer(tool, self._case.sections[tool.section], question.strip()), "answered"
        )

    def _submit(self, arguments: Mapping[str, Any]) -> _Outcome:
        final = arguments.get("final_diagnosis")
        if not isinstance(final, str) or not final.strip():
            return _Outcome(BAD_SUBMISSION, "invalid")
        self._submission = Submission.from_arguments(arguments)
        return _Outcome(SUBMITTED, SUBMITTED_STATUS)

    def score(self) -> Score:
        key = load_answer(self._source, self._ref)
        return grade(self._submission, key, self._judge, case=self._case, subset=self._ref.subset)

    def close(self) -> None:
        return None


FIXED_MODEL = (
    "bench.{kind}=llm needs the fixed {role} model of SPEC-BENCH §5.4 (the same for every backbone): set "
    "roles.{role} (e.g. +model@roles.{role}=qwen) or add +experiment=clindiag_paper."
)


class ClinDiagBenchmark:
    """The 604 PoS cases (302 rare, then 302 challenging) in manifest order, filtered by subset and sliced.

    Data: `data_dir`, else `$CLINDIAG_DATA`, else the staged copy in `../shared/benchmarks/clindiag/`. A copy
    without a manifest plays all its cases in sorted id order (and says so once).
    `provider` is `record` (offline rule-based answers) or `llm`; `judge` is `rules` (offline, labelled
    `judge=rules`) or `llm`. The LLM forms need their fixed model: `provider_model` / `judge_model` name it
    (the config fills them from `roles.benchmark_provider` / `roles.benchmark_judge`).
    """

    def __init__(
        self,
        data_dir: str | None = None,
        *,
        manifest: str | None = None,
        subset: str = "all",
        start: int = 0,
        limit: int | None = None,
        max_turns: int = 30,
        provider: str = "record",
        judge: str = "rules",
        provider_model: str | None = None,
        judge_model: str | None = None,
        obs_cap: int = 8000,
    ):
        for label, value, choices in (
            ("subset", subset, SUBSET_CHOICES),
            ("provider", provider, tuple(PROVIDERS)),
            ("judge", judge, tuple(JUDGES)),
        ):
            if value not in choices:
                raise ValueError(f"bench.{label} must be one of {', '.join(choices)}; got {value!r}")
        if start < 0 or (limit is not None and limit < 0) or max_turns < 1 or obs_cap < 1:
            raise ValueError(
                f"need start ≥ 0, limit ≥ 0 or null, max_turns ≥ 1, obs_cap ≥ 1; got {start}, {limit}, {max_turns}, "
                f"{obs_cap}"
            )
        for kind, value, model in (("provider", provider, provider_model), ("judge", judge, judge_model)):
            if value == "llm" and not model:
                raise ValueError(FIXED_MODEL.format(kind=kind, role=f"benchmark_{kind}"))
        self.data_dir, self.manifest = data_dir, manifest
        self.subset, self.start, self.limit = subset, start, limit
        self.max_turns = max_turns
        self.provider, self.judge, self.obs_cap = provider, judge, obs_cap
        self.labels = {
            "judge": "rules" if judge == "rules" else str(judge_model),
            "provider": "record" if provider == "record" else str(provider_model),
        }
        """Who produced the scores and the answers, for run.json, the summary and every table row."""
        self.brief = Brief(
            system=SYSTEM,
            example=EXAMPLE,
            final_turn_note=FINAL_TURN_NOTE,
            mode="diagnostic",
            policy_max_tokens=4096,
        )
        self._source: Source | None = None
        self._refs: list[CaseRef] | None = None
        self._note = ""
        self._tasks: list[Task] | None = None

    def _selected(self) -> tuple[Source, list[CaseRef]]:
        if self._source is None or self._refs is None:
            source = find_source(self.data_dir)
            selection = select_refs(source, self.manifest)
            refs = [r for r in selection.refs if self.subset in ("all", r.subset)]
            if not refs:
                found = sorted({r.subset for r in selection.refs})
                raise ValueError(
                    f"bench.subset={self.subset} has no cases in {source.root}; subsets found: "
                    f"{', '.join(found) or 'none'}"
                )
            end = None if self.limit is None else self.start + self.limit
            refs = refs[self.start : end]
            missing = [
                r.entry
                for r in refs
                if r.id not in source.case_dirs and f"{r.subset}__{r.id}" not in source.case_dirs
            ]
            if missing:
                raise FileNotFoundError(
                    f"{len(missing)} manifest cases are missing from {source.root} (first: {', '.join(missing[:5])})"
                )
            incomplete = missing_files(source, refs)
            if incomplete:
                raise FileNotFoundError(
                    f"{len(incomplete)} selected ClinDiag cases lack a required file: {'; '.join(incomplete[:5])}"
                    f"{' …' if len(incomplete) > 5 else ''}. Restore the files, or leave those cases out with "
                    "bench.manifest"
                )
            self._source, self._refs, self._note = source, refs, selection.note
        return self._source, self._refs

    def tasks(self) -> list[Task]:
        """The selected cases, each with its subset as meta. No case file is opened here (a case is parsed
        when it is played), so listing thousands of cases takes seconds; whether the record names the answer
        is a score extra of each episode, not task meta."""
        if self._tasks is None:
            _, refs = self._selected()
            if self._note:
                LOG.warning(self._note)
            self._tasks = [Task(id=r.entry, source=r.entry, meta={"subset": r.subset}) for r in refs]
        return list(self._tasks)

    def _judge(self, model: Model | None) -> RulesJudge | LLMJudge:
        return JUDGES[self.judge](model)

    def make_env(self, model: Model) -> ClinDiagEnv:
        source, refs = self._selected()
        return ClinDiagEnv(
            source,
            {r.entry: r for r in refs},
            model,
            provider=self.provider,
            judge=self.judge,
            obs_cap=self.obs_cap,
        )

    def score_transcript(self, task: Task, events: Sequence[Event], model: Model) -> Score:
        """Judge again the submission recorded in an episode's events, with this benchmark's judge; no
        episode is played and no policy call is made."""
        source, refs = self._selected()
        ref = {r.entry: r for r in refs}[task.id]
        return grade(
            submission_of(events),
            load_answer(source, ref),
            self._judge(model),
            case=load_case(source, ref),
            subset=ref.subset,
        )
