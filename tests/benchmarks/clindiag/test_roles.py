"""The offline record provider answers only what was asked (issue 13): a scripted doctor asking fixed, sensible
questions on 50 staged cases gets no whole-section dumps and still reaches each case's laboratory findings."""

import re

from pos_bench.benchmarks.clindiag import data
from pos_bench.benchmarks.clindiag.benchmark import ClinDiagBenchmark
from pos_bench.benchmarks.clindiag.roles import MAX_ITEMS, NO_MATCH_CAP, NOT_SPECIFIED, record_units
from pos_bench.benchmarks.clindiag.scoring import SUBMIT
from pos_bench.loop import play
from pos_bench.protocols import MethodBase
from pos_bench.transcript import Transcript
from pos_bench.types import Decision, ToolCall

OPENING = (
    ("ask_history", "What is the chief complaint?"),
    ("ask_history", "Is there a relevant family history?"),
    ("ask_physical_exam", "What were the vital signs?"),
    ("ask_history", "What is the diagnosis?"),
    ("order_lab_test", "Which laboratory tests were done?"),
)
FOLLOW_UP = "What did the {name} show?"
LISTED = re.compile(r"Items on record here: (.+)\.$")


class SensibleDoctor(MethodBase):
    """Asks the OPENING questions; when the lab answer names the tests on record, asks about the first three of
    them by name; then submits. Keeps every (tool, question, reply)."""

    def __init__(self, model=None):
        self.plan = [ToolCall(tool, {"question": q}) for tool, q in OPENING]
        self.asked: list[tuple[str, str, str]] = []

    def start(self, task, brief, first):
        return None

    def prompt(self, obs):
        action = self.plan.pop(0) if self.plan else ToolCall(SUBMIT, {"final_diagnosis": "unsure"})
        return Decision(thought="scripted", action=action)

    def update(self, step):
        action = step.decision.action
        if action.name == SUBMIT:
            return
        reply = step.after.text
        self.asked.append((action.name, action.arguments["question"], reply))
        listed = LISTED.search(reply) if reply.startswith(NOT_SPECIFIED) else None
        if action.name == "order_lab_test" and listed and len(self.asked) == len(OPENING):
            names = listed.group(1).split("; ")[:3]
            self.plan[:0] = [
                ToolCall("order_lab_test", {"question": FOLLOW_UP.format(name=n)}) for n in names
            ]
        return


def lab_findings(section: str) -> list[str]:
    """The specified laboratory findings of a case as the provider words a unit ("<item>, findings: <text>"),
    read by the test from the case's record section."""
    if section == data.NO_RECORD:
        return []
    return [
        f"{label}: {text}"
        for label, text in record_units(section)
        if (label.endswith("findings") or ", findings," in label)
        and text.strip(" .").lower() != "not specified"
    ]


def test_a_sensible_doctor_gets_no_dumps_on_50_cases_and_still_sees_the_lab_findings(shared):
    folder = shared / "benchmarks" / "clindiag"
    bench = ClinDiagBenchmark(str(folder))
    source = data.find_source(folder)
    refs = {r.entry: r for r in data.select_refs(source, None).refs}
    tasks = bench.tasks()[::12][:50]
    env = bench.make_env(None)
    no_match, answered, missed, with_labs = [], [], [], 0
    for task in tasks:
        doctor = SensibleDoctor()
        play(task, env, doctor, None, brief=bench.brief, max_turns=12, log=Transcript())
        for tool, question, reply in doctor.asked:
            (no_match if reply.startswith(NOT_SPECIFIED) else answered).append((tool, question, reply))
        findings = lab_findings(data.load_case(source, refs[task.id]).sections["laboratory"])
        if findings:
            with_labs += 1
            seen = "\n".join(reply for tool, _, reply in doctor.asked if tool == "order_lab_test")
            if not any(f in seen for f in findings):
                missed.append(task.id)
    assert len(tasks) == 50 and with_labs >= 40
    assert no_match and answered
    # No dumps: a question that matches nothing gets a short answer, and no answer holds more than a few items.
    assert max(len(reply) for *_, reply in no_match) <= NO_MATCH_CAP
    assert max(len(reply.splitlines()) for *_, reply in answered) <= MAX_ITEMS
    diagnosis_answers = [
        reply for _, question, reply in no_match + answered if question == "What is the diagnosis?"
    ]
    assert len(diagnosis_answers) == 50 and all(len(r.splitlines()) <= MAX_ITEMS for r in diagnosis_answers)
    assert missed == []
