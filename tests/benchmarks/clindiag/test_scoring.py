"""ClinDiag's score as a function of the transcript (clindiag/scoring.py): the environment and re-scoring give the
same score, and every score says whether the record names its answer."""

from pos_bench import events
from pos_bench.benchmarks.clindiag import data
from pos_bench.benchmarks.clindiag.benchmark import ClinDiagBenchmark
from pos_bench.benchmarks.clindiag.data import AnswerKey, CaseRecord
from pos_bench.benchmarks.clindiag.judge import RulesJudge, Submission
from pos_bench.benchmarks.clindiag.scoring import SUBMIT, exposure, grade, submission_of
from pos_bench.loop import play
from pos_bench.protocols import MethodBase
from pos_bench.runner.summary import summarize
from pos_bench.transcript import Transcript
from pos_bench.types import Decision, ToolCall


class Submitter(MethodBase):
    """Asks one question, sends an invalid submission, then submits `diagnosis`."""

    def __init__(self, diagnosis):
        self.plan = [
            ToolCall("ask_history", {"question": "What is the chief complaint?"}),
            ToolCall(SUBMIT, {"final_diagnosis": "  "}),
            ToolCall(SUBMIT, {"final_diagnosis": diagnosis, "differential_diagnosis": "Varn fever"}),
        ]

    def start(self, task, brief, first):
        return None

    def prompt(self, obs):
        return Decision(thought="", action=self.plan.pop(0))

    def update(self, step):
        return None


def case(presentation, history):
    return CaseRecord("x", "rare", presentation, {"history": history, "laboratory": "none"})


def test_exposure_finds_the_answer_word_for_word_in_the_record_or_the_presentation():
    key = AnswerKey("Behçet's disease", "", "")
    assert exposure(case("Oral ulcers.", "Known behcet disease."), key).in_record
    assert not exposure(case("Oral ulcers.", "Known behcet disease."), key).in_presentation
    assert exposure(case("Suspected Behcet's disease.", ""), key).in_presentation
    assert not exposure(case("Oral ulcers.", "Behçet was named; disease unclear."), key).in_record


def test_grade_splits_accuracy_by_whether_the_record_names_the_answer():
    key = AnswerKey("Varn fever", "", "")
    shown = grade(
        Submission("Varn fever"), key, RulesJudge(), case=case("", "history of varn fever"), subset="rare"
    )
    hidden = grade(None, key, RulesJudge(), case=case("", "nothing"), subset="challenging")
    assert shown.success and shown.extras["answer_in_record"] is True
    assert (
        shown.extras["accuracy_answer_in_record"] is True
        and shown.extras["accuracy_answer_not_in_record"] is None
    )
    assert not hidden.success and hidden.extras["no_submission"] is True
    assert (
        hidden.extras["accuracy_answer_not_in_record"] is False
        and hidden.extras["accuracy_challenging"] is False
    )


def test_the_environment_and_the_transcript_give_the_same_score_and_the_summary_splits_accuracy(shared):
    folder = shared / "benchmarks" / "clindiag"
    bench = ClinDiagBenchmark(str(folder), limit=6)
    source = data.find_source(folder)
    refs = {r.entry: r for r in data.select_refs(source, None).refs}
    results = []
    for task in bench.tasks():
        reference = data.load_answer(source, refs[task.id]).final_diagnosis  # read by the test
        for diagnosis in (reference, "Imaginary condition"):
            env, log = bench.make_env(None), Transcript()
            result = play(task, env, Submitter(diagnosis), None, brief=bench.brief, max_turns=5, log=log)
            assert submission_of(events.parse_all(log.events)) == Submission(diagnosis, "Varn fever", "")
            again = bench.score_transcript(task, events.parse_all(log.events), None)
            assert (again.success, dict(again.extras)) == (result.success, dict(result.extras))
            assert result.success is (diagnosis == reference)
            results.append(result)
    summary = summarize(results, {})
    shown = [r.extras["answer_in_record"] for r in results[::2]]
    assert summary.extras["answer_in_record"] == sum(shown) / len(shown)
    if not all(shown):
        assert summary.extras["accuracy_answer_not_in_record"] == 0.5
