"""The labelled judge fixture (clindiag/fixture.py) and the rules judge's measured accuracy on it over the 604
staged cases: the figures of issue 13 that scripts/clindiag_judge_eval.py prints."""

import json
import re
import subprocess
import sys

import pytest

from pos_bench.benchmarks.clindiag import data
from pos_bench.benchmarks.clindiag.fixture import ACCEPTED_FORMS, FORMS, CaseText, build
from pos_bench.benchmarks.clindiag.judge import RulesJudge, Submission
from tests.conftest import REPO
from tests.models.stub_openai_server import StubOpenAI


@pytest.fixture(scope="module")
def cases(shared):
    source = data.find_source(shared / "benchmarks" / "clindiag")
    out = []
    for ref in data.select_refs(source, None).refs:
        record = data.load_case(source, ref)
        key = data.load_answer(source, ref)
        text = "\n".join([record.initial_information, *record.sections.values()])
        out.append(CaseText(ref.entry, key.final_diagnosis, key.differential_diagnosis, text))
    return out


def test_the_fixture_is_deterministic_and_labels_every_form(cases):
    items = build(cases)
    assert items == build(cases) and len(cases) == 604
    assert {i.form for i in items} == set(FORMS)
    assert sum(i.form == "exact" for i in items) == 604
    assert all(i.accept is (i.form in ACCEPTED_FORMS) for i in items)
    by_case = {c.case: c for c in cases}
    assert all(i.submitted != by_case[i.case].diagnosis for i in items if not i.accept)


def test_rules_judge_meets_the_issue_13_targets_on_the_604_cases(cases):
    judge = RulesJudge()
    by_case = {c.case: c for c in cases}
    accepted: dict[str, list[bool]] = {}
    for item in build(cases):
        case = by_case[item.case]
        verdict = judge.judge(
            Submission(item.submitted, "", item.reasoning),
            data.AnswerKey(case.diagnosis, "", ""),
            record=case.record,
        )
        accepted.setdefault(item.form, []).append(verdict.diagnosis_correct)

    def rate(*forms):
        values = [v for f in forms for v in accepted[f]]
        return sum(values) / len(values)

    assert rate("negated", "excluded") <= 0.01
    assert rate("other_case") <= 0.02
    assert rate("exact", "prefixed") >= 0.95
    assert rate("rewritten") >= 0.85
    assert rate("antonym") <= 0.05 and rate("differential") <= 0.05
    assert rate("doubt") == 0 and rate("listed") == 0  # issue 27: whatever the reasoning says
    assert rate("equivalent") >= 0.85


def judge_eval(shared, *args: str) -> str:
    """The output of `scripts/clindiag_judge_eval.py` on the staged cases with `args`."""
    script = REPO / "scripts" / "clindiag_judge_eval.py"
    data = shared / "benchmarks" / "clindiag"
    command = [sys.executable, str(script), "--data", str(data), *args]
    return subprocess.run(command, capture_output=True, text=True, check=True, cwd=REPO).stdout


def test_the_eval_script_prints_a_confusion_table_per_form(shared):
    out = judge_eval(shared, "--limit", "60")
    for form in FORMS:
        assert re.search(rf"^\s*{form}\s+(accept|reject)\s+\d+", out, re.MULTILINE)
    assert "TP" in out and "FP" in out and out.count(": met") == 6 and "NOT met" not in out


def test_the_eval_script_also_grades_with_an_llm_judge_when_one_is_configured(shared):
    def judge(body):
        final = body["messages"][1]["content"].split("Submitted:\n- final diagnosis: ", 1)[1].splitlines()[0]
        correct = not final.lower().startswith(("not ", "no ", "negative"))
        return json.dumps({"diagnosis_correct": correct, "differential_hit": False, "reason": "stub"})

    with StubOpenAI(answer=judge) as stub:
        out = judge_eval(
            shared,
            "--limit",
            "10",
            "--llm",
            "openai",
            "--set",
            f"model.base_url={stub.url}/v1",
            "--set",
            "model.api_key_env=null",
            "--set",
            "cache.mode=off",
            "--llm-per-form",
            "2",
        )
        requests = len(stub.requests)
    llm_table = out.split("== judge=llm (openai)", 1)[1]
    assert re.search(r"^\s*negated\s+reject\s+2\s+0\s+0\s+0\s+2\s", llm_table, re.MULTILINE)
    assert re.search(r"^\s*other_case\s+reject\s+2\s+0\s+0\s+2\s+0\s", llm_table, re.MULTILINE)
    assert requests >= 10  # two items of each form that the ten cases have, one request each
