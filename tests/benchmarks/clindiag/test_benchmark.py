import io
import json
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from hydra.utils import instantiate

from pos_bench.benchmarks.clindiag import data
from pos_bench.benchmarks.clindiag.benchmark import EXAMPLE, SUBMIT, SYSTEM, ClinDiagBenchmark
from pos_bench.benchmarks.clindiag.judge import RulesJudge, Submission
from pos_bench.benchmarks.clindiag.roles import MAX_ITEMS, PROVIDER_RULES, RecordProvider
from pos_bench.loop import play
from pos_bench.models.scripted import ScriptedModel
from pos_bench.protocols import MethodBase
from pos_bench.runner.summary import summarize
from pos_bench.transcript import Recorded, Transcript
from pos_bench.types import Decision, ToolCall
from tests.conftest import REPO

QUESTIONS = (
    ("ask_history", "What is the chief complaint?"),
    ("ask_history", "Is there a family history of a similar illness?"),
    ("ask_physical_exam", "What were the vital signs?"),
    ("order_lab_test", "What was the complete blood count?"),
    ("order_radiographic_test", "What did the chest imaging show?"),
    ("order_other_test", "Was a biopsy performed?"),
    ("ask_history", "../diagnosis.json"),
    ("order_lab_test", "/etc/passwd ../../diagnosis.json final_diagnosis"),
)
RECORD_FILES = (
    "initial_information.json",
    "medical_history.json",
    "physical_examination.json",
    "laboratory_test.json",
    "radiographic_test.json",
    "other_test.json",
)


class ScriptedDoctor(MethodBase):
    """Asks the fixed QUESTIONS, then submits the diagnosis the TEST chose; records every observation."""

    def __init__(self, model=None, *, diagnosis="", differential="", questions=QUESTIONS):
        self.plan = [ToolCall(name, {"question": q}) for name, q in questions]
        self.plan.append(
            ToolCall(
                SUBMIT,
                {
                    "final_diagnosis": diagnosis,
                    "differential_diagnosis": differential,
                    "diagnostic_reasoning": "scripted",
                },
            )
        )
        self.seen = []

    def start(self, task, brief, first):
        self.seen.append(first)

    def prompt(self, obs):
        return Decision(thought="scripted", action=self.plan[min(len(self.seen) - 1, len(self.plan) - 1)])

    def update(self, step):
        self.seen.append(step.after)


# ---- fixtures ---------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def staged(shared):
    return shared / "benchmarks" / "clindiag"


@pytest.fixture(scope="session")
def bench(staged):
    return ClinDiagBenchmark(str(staged))


@pytest.fixture(scope="session")
def truth(staged):
    """Read straight from the staged tarball by the test: case id → {file name: parsed JSON}."""
    cases = {}
    with tarfile.open(staged / data.TARBALL) as archive:
        for member in archive.getmembers():
            if member.isfile() and member.name.endswith(".json"):
                case_id, name = Path(member.name).parts[-2:]
                cases.setdefault(case_id, {})[name] = json.load(archive.extractfile(member))
    return cases


def diagnosis(truth, case_id):
    return truth[case_id]["diagnosis.json"]["diagnosis"]


def in_record(truth, case_id, text):
    record = " ".join(json.dumps(truth[case_id][f], ensure_ascii=False) for f in RECORD_FILES).lower()
    return text.lower() in record


def play_case(bench, task, doctor, model=None, max_turns=30):
    log = Transcript()
    env = bench.make_env(model)
    return play(task, env, doctor, model, brief=bench.brief, max_turns=max_turns, log=log), log


def write(path, payload):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload, indent=2), encoding="utf-8")


@pytest.fixture()
def two_cases(truth):
    """One rare and one challenging staged case."""
    return [("rare", "rare1"), ("challenging", min(k for k in truth if not k.startswith("rare")))]


@pytest.fixture()
def zip_layout(tmp_path, truth, two_cases, monkeypatch):
    """The official zip layout: merged diagnostic_test.json; the second case lacks it."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as bundle:
        for number, (subset, case_id) in enumerate(two_cases):
            files = truth[case_id]
            for name in (
                "initial_information.json",
                "medical_history.json",
                "physical_examination.json",
                "diagnosis.json",
            ):
                bundle.writestr(f"Clindiag_Benchmark/{subset}/{case_id}/{name}", json.dumps(files[name]))
            if number == 0:
                merged = {
                    "laboratory_examinations": files["laboratory_test.json"]["laboratory_examinations"],
                    "radiographic_examinations": files["radiographic_test.json"]["radiographic_examinations"],
                    "other_examinations": files["other_test.json"]["other_tests"],
                }
                bundle.writestr(
                    f"Clindiag_Benchmark/{subset}/{case_id}/diagnostic_test.json", json.dumps(merged)
                )
    folder = tmp_path / "zip"
    folder.mkdir()
    (folder / data.OFFICIAL_ZIP).write_bytes(buffer.getvalue())
    (folder / "manifest.txt").write_text("".join(f"{s}/{c}\n" for s, c in two_cases))
    return folder


@pytest.fixture()
def prepared_layout(tmp_path, truth, two_cases):
    """cases/<subset>__<id>/ record files beside answer_key/<subset>__<id>.diagnosis.json."""
    root = tmp_path / "prepared"
    for subset, case_id in two_cases:
        slug = f"{subset}__{case_id}"
        for name in RECORD_FILES:
            write(root / "cases" / slug / name, truth[case_id][name])
        write(root / "answer_key" / f"{slug}.diagnosis.json", truth[case_id]["diagnosis.json"])
    (root / "manifest.txt").write_text("".join(f"{s}/{c}\n" for s, c in two_cases))
    return root


# ---- loading ----------------------------------------------------------------------------------------


def test_all_604_cases_load_in_manifest_order(bench, staged, truth):
    manifest = [line for line in (staged / "pos_manifest_604.txt").read_text().splitlines() if line]
    tasks = bench.tasks()
    assert [t.id for t in tasks] == manifest and len(tasks) == 604
    assert [t.meta["subset"] for t in tasks] == ["rare"] * 302 + ["challenging"] * 302
    env = bench.make_env(None)
    for task in tasks:
        first = env.reset(task)
        goal = json.loads(first.goal)
        case_id = task.id.split("/")[1]
        assert goal == {
            "case_id": case_id,
            "subset": task.meta["subset"],
            "initial_presentation": truth[case_id]["initial_information.json"]["initial_information"],
        }
        assert goal["initial_presentation"] in first.text and not first.done
        assert [t["function"]["name"] for t in first.tools] == [
            "ask_history",
            "ask_physical_exam",
            "order_lab_test",
            "order_radiographic_test",
            "order_other_test",
            SUBMIT,
        ]


def test_subset_filter_and_slice(staged):
    rare = ClinDiagBenchmark(str(staged), subset="rare").tasks()
    challenging = ClinDiagBenchmark(str(staged), subset="challenging").tasks()
    assert len(rare) == len(challenging) == 302
    assert {t.meta["subset"] for t in rare} == {"rare"} and {t.meta["subset"] for t in challenging} == {
        "challenging"
    }
    window = ClinDiagBenchmark(str(staged), subset="challenging", start=2, limit=3).tasks()
    assert [t.id for t in window] == [t.id for t in challenging[2:5]]


@pytest.mark.parametrize(
    ("key", "value", "choices"),
    [
        ("subset", "common", "all, rare, challenging"),
        ("provider", "oracle", "record, llm"),
        ("judge", "gpt", "rules, llm"),
    ],
)
def test_bad_choices_name_the_valid_ones(key, value, choices):
    with pytest.raises(ValueError, match=f"bench.{key} must be one of {choices}"):
        ClinDiagBenchmark(**{key: value})


def test_missing_data_says_what_and_where_to_get_it(tmp_path):
    with pytest.raises(FileNotFoundError, match="geteff1/ClinDiag.*d9222f32"):
        ClinDiagBenchmark(str(tmp_path / "nowhere")).tasks()


def test_zip_layout_reads_merged_tests_and_reports_missing_sections(zip_layout, bench, two_cases, truth):
    zipped = ClinDiagBenchmark(str(zip_layout))
    assert [t.id for t in zipped.tasks()] == [f"{s}/{c}" for s, c in two_cases]
    first, second = zipped.tasks()
    staged_env, zip_env = bench.make_env(None), zipped.make_env(None)
    staged_env.reset(first), zip_env.reset(first)
    for tool in ("order_lab_test", "order_radiographic_test", "order_other_test", "ask_history"):
        call = ToolCall(tool, {"question": "What were the findings of the first procedure?"})
        assert zip_env.step(call).text == staged_env.step(call).text
    zip_env.reset(second)
    for tool in ("order_lab_test", "order_radiographic_test", "order_other_test"):
        assert zip_env.step(ToolCall(tool, {"question": "Any results?"})).text == data.NO_RECORD
    result, _ = play_case(
        zipped, second, ScriptedDoctor(diagnosis=diagnosis(truth, two_cases[1][1])["final_diagnosis"])
    )
    assert result.success


def test_prepared_layout_and_env_var_precedence(prepared_layout, two_cases, truth, monkeypatch):
    monkeypatch.setenv("CLINDIAG_DATA", str(prepared_layout))
    prepared = ClinDiagBenchmark()
    assert [t.id for t in prepared.tasks()] == [f"{s}/{c}" for s, c in two_cases]
    for task, (_, case_id) in zip(prepared.tasks(), two_cases):
        result, _ = play_case(
            prepared, task, ScriptedDoctor(diagnosis=diagnosis(truth, case_id)["final_diagnosis"])
        )
        assert result.success and result.extras["judge_rules"] is True


def test_a_manifest_case_missing_from_the_copy_is_an_error(prepared_layout, two_cases):
    (prepared_layout / "manifest.txt").write_text(
        "rare/rare_not_there\n" + f"{two_cases[0][0]}/{two_cases[0][1]}\n"
    )
    with pytest.raises(FileNotFoundError, match="1 manifest cases are missing.*rare/rare_not_there"):
        ClinDiagBenchmark(str(prepared_layout)).tasks()


# ---- scoring with a scripted doctor -----------------------------------------------------------------


def test_true_diagnosis_scores_100_and_a_wrong_one_0_with_the_rules_judge(bench, truth):
    right, wrong = [], []
    for task in bench.tasks():
        case_id = task.id.split("/")[1]
        answer = diagnosis(truth, case_id)
        result, _log = play_case(
            bench,
            task,
            ScriptedDoctor(diagnosis=answer["final_diagnosis"], differential=answer["final_diagnosis"]),
        )
        right.append(result)
        assert result.steps == len(QUESTIONS) + 1 and result.extras["submitted"] is True
        wrong.append(
            play_case(bench, task, ScriptedDoctor(diagnosis="Imaginary condition of test fixtures"))[0]
        )
    good, bad = summarize(right, {}), summarize(wrong, {})
    assert good.success_rate == 1.0 and good.extras["differential_hit"] == 1.0
    assert good.by_group["subset"] == {"challenging": 1.0, "rare": 1.0}
    assert good.extras["accuracy_rare"] == good.extras["accuracy_challenging"] == 1.0
    assert good.extras["judge_rules"] == 1.0 and good.extras["no_submission"] == 0.0
    assert bad.success_rate == 0.0 and bad.extras["differential_hit"] == 0.0


def test_no_submission_is_incorrect_and_counted(bench):
    task = bench.tasks()[0]
    result, _ = play_case(bench, task, ScriptedDoctor(questions=QUESTIONS * 4), max_turns=3)
    assert (
        not result.success and result.extras["no_submission"] is True and result.extras["submitted"] is False
    )


def test_final_turn_note_reaches_the_last_turn(bench):
    doctor = ScriptedDoctor(questions=QUESTIONS)
    env = bench.make_env(None)
    result = play(bench.tasks()[0], env, doctor, None, brief=bench.brief, max_turns=3, log=Transcript())
    assert result.turns == 3 and bench.brief.final_turn_note
    assert bench.brief.mode == "diagnostic" and bench.brief.policy_max_tokens == 4096


# ---- actions, rejections and leaks ------------------------------------------------------------------


@pytest.mark.parametrize(
    "arguments",
    [
        {"question": "Show me ANSWER_KEY please"},
        {"question": "fine", "extra": ["../answer_key/x.diagnosis.json"]},
        {"question": "fine", "Answer_Key": "x"},
    ],
)
def test_answer_key_in_any_argument_is_rejected(bench, arguments):
    env = bench.make_env(None)
    env.reset(bench.tasks()[0])
    for name in ("ask_history", SUBMIT):
        obs = env.step(ToolCall(name, {**arguments, "final_diagnosis": "x"}))
        assert obs.info["status"] == "rejected" and "answer_key" in obs.text and not obs.done


@pytest.mark.parametrize("name", ["diagnosis", "diagnosis.json", "../diagnosis", "read_file", "answer"])
def test_tool_names_outside_the_list_are_unknown(bench, name):
    env = bench.make_env(None)
    env.reset(bench.tasks()[0])
    obs = env.step(ToolCall(name, {"question": "what is the diagnosis?"}))
    assert obs.info["status"] == "invalid" and "Unknown tool" in obs.text and not obs.done


@pytest.mark.parametrize(
    "action",
    [
        "ask_history",
        ToolCall("ask_history", {}),
        ToolCall("ask_history", {"question": "  "}),
        ToolCall("ask_history", {"question": 3}),
        ToolCall(SUBMIT, {"final_diagnosis": ""}),
        ToolCall(SUBMIT, {}),
    ],
)
def test_malformed_actions_cost_a_turn_without_ending_the_case(bench, action):
    env = bench.make_env(None)
    env.reset(bench.tasks()[0])
    obs = env.step(action)
    assert obs.info["status"] == "invalid" and not obs.done


def test_the_answer_key_never_appears_in_what_the_agent_sees(bench, truth):
    checked_final = 0
    for task in bench.tasks():
        case_id = task.id.split("/")[1]
        answer = diagnosis(truth, case_id)
        doctor = ScriptedDoctor(diagnosis="placeholder")
        _result, _log = play_case(bench, task, doctor)
        seen = json.dumps(
            [task.__dict__] + [o.__dict__ for o in doctor.seen], default=str, ensure_ascii=False
        )
        reasoning = answer["diagnostic_reasoning"][:80]
        if len(reasoning) > 40 and not in_record(truth, case_id, reasoning):
            assert reasoning not in seen
        if not in_record(truth, case_id, answer["final_diagnosis"]):  # some records name it themselves
            assert answer["final_diagnosis"].lower() not in seen.lower()
            checked_final += 1
    assert checked_final > 400


def test_question_tools_work_without_the_answer_key_which_is_read_only_when_scoring(
    prepared_layout, two_cases
):
    subset, case_id = two_cases[0]
    prepared = ClinDiagBenchmark(str(prepared_layout))
    task = prepared.tasks()[0]  # listing reads the key once, for the answer-in-record flag only
    (prepared_layout / "answer_key" / f"{subset}__{case_id}.diagnosis.json").unlink()
    env = prepared.make_env(None)
    env.reset(task)
    for name, question in QUESTIONS:
        assert env.step(ToolCall(name, {"question": question})).info["status"] == "answered"
    assert env.step(ToolCall(SUBMIT, {"final_diagnosis": "anything"})).done
    with pytest.raises(FileNotFoundError, match="diagnosis.json"):
        env.score()


def test_observation_cap_keeps_the_head_and_says_how_long_it_was(prepared_layout, two_cases):
    subset, case_id = two_cases[0]
    history = {
        "medical_history": {
            "history_of_present_illness": "".join(f"fever reading {i} was recorded, " for i in range(600))
        }
    }
    write(prepared_layout / "cases" / f"{subset}__{case_id}" / "medical_history.json", history)
    env = ClinDiagBenchmark(str(prepared_layout)).make_env(None)
    env.reset(ClinDiagBenchmark(str(prepared_layout)).tasks()[0])
    full = RecordProvider().answer(None, json.dumps(history), "fever")
    obs = env.step(ToolCall("ask_history", {"question": "Was there fever?"}))
    head, notice = obs.text.split("\n[Observation cut", 1)
    assert len(full) > 8000 and head == full[:8000]
    assert f"first 8000 of {len(full)} characters" in notice and "narrower question" in notice


# ---- LLM provider and judge (scripted model) ---------------------------------------------------------


def test_llm_provider_and_judge_use_their_roles_and_see_only_what_they_should(bench, staged, truth):
    task = bench.tasks()[0]
    case_id = task.id.split("/")[1]
    answer = diagnosis(truth, case_id)
    verdict = '{"diagnosis_correct": true, "differential_hit": false, "reason": "same disease"}'
    log = Transcript()
    model = Recorded(
        ScriptedModel({"benchmark_provider": ["The record says so."], "benchmark_judge": [verdict]}), log
    )
    llm = ClinDiagBenchmark(
        str(staged), provider="llm", judge="llm", limit=1, provider_model="scripted", judge_model="scripted"
    )
    result = play(
        task,
        llm.make_env(model),
        ScriptedDoctor(diagnosis="Something else entirely"),
        model,
        brief=llm.brief,
        max_turns=30,
        log=log,
    )
    provider_calls = [e for e in log.of_kind("call") if e["role"] == "benchmark_provider"]
    assert len(provider_calls) == len(QUESTIONS) and model.usage["benchmark_provider"].calls == len(QUESTIONS)
    history = json.dumps(truth[case_id]["medical_history.json"], indent=4, ensure_ascii=False)
    first = provider_calls[0]["prompt"]["messages"]
    assert PROVIDER_RULES in first[0]["content"] and first[1]["content"] == QUESTIONS[0][1]
    assert json.loads(first[0]["content"].split("Patient record:\n", 1)[1]) == json.loads(history)
    for call in provider_calls:
        assert answer["diagnostic_reasoning"][:80] not in json.dumps(call["prompt"], ensure_ascii=False)
    judge_calls = [e for e in log.of_kind("call") if e["role"] == "benchmark_judge"]
    assert judge_calls[0]["prompt"]["schema"]["additionalProperties"] is False
    assert (
        len(judge_calls) == 1
        and answer["final_diagnosis"] in judge_calls[0]["prompt"]["messages"][1]["content"]
    )
    assert result.success and result.extras["judge_rules"] is False
    assert result.extras["rules_diagnosis_correct"] is False  # the shadow rules verdict disagrees here
    steps = log.of_kind("step")
    assert steps[0]["observation"]["text"] == "The record says so."


def test_llm_judge_reasks_until_a_boolean_verdict_and_fails_after_three(bench, staged):
    task = bench.tasks()[0]
    fenced = '```json\n{"diagnosis_correct": false, "differential_hit": true, "reason": "broader"}\n```'
    for replies, outcome in (
        (["no json here", '{"diagnosis_correct": "yes"}', fenced], False),
        (["nope", "still nope", '{"diagnosis_correct": 1}'], None),
    ):
        model = ScriptedModel({"benchmark_judge": replies})
        env = ClinDiagBenchmark(str(staged), judge="llm", judge_model="scripted").make_env(model)
        env.reset(task)
        env.step(ToolCall(SUBMIT, {"final_diagnosis": "some disease"}))
        if outcome is None:
            with pytest.raises(RuntimeError, match="no valid verdict in 3 attempts"):
                env.score()
        else:
            score = env.score()
            assert score.success is outcome and score.extras["differential_hit"] is True
        assert model.calls["benchmark_judge"] == 3


# ---- the offline stand-ins ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("submitted", "reference", "correct"),
    [
        ("Systemic lupus erythematosus", "SLE", True),
        ("acute myeloid leukaemia", "Acute Myeloid Leukemia (AML)", True),
        ("Acute myeloid leukemia", "Chronic myeloid leukemia", False),
        ("Acute myeloid leukaemia", "acute myeloid leukemia", True),
        ("lymphoma", "Diffuse large B-cell lymphoma", False),
        ("B-cell lymphoma, diffuse large", "Diffuse large B-cell lymphoma", True),
        ("Trisomy 18", "trisomy-18.", True),
        ("", "anything", False),
    ],
)
def test_rules_judge_matching(submitted, reference, correct):
    key = data.AnswerKey(reference, "", "")
    assert RulesJudge().judge(Submission(submitted), key).diagnosis_correct is correct


def test_rules_judge_aliases_and_differential_hit():
    key = data.AnswerKey("Trisomy 18", "", "")
    judge = RulesJudge(aliases={"Trisomy 18": ["Quillon-Varnet syndrome"]})
    assert judge.judge(Submission("Quillon-Varnet syndrome"), key).diagnosis_correct
    assert not RulesJudge().judge(Submission("Quillon-Varnet syndrome"), key).diagnosis_correct
    assert RulesJudge().judge(Submission("x", "Turner syndrome; trisomy-18"), key).differential_hit
    assert not RulesJudge().judge(Submission("x", "trisomy 180"), key).differential_hit


def test_record_provider_answers_the_best_matching_sentences_and_never_dumps_a_section():
    record = json.dumps(
        {
            "medical_history": {
                "chief_complaint": "Cough for three weeks.",
                "family_history": "Father had asthma. Mother is well.",
                "social_history": "Not specified.",
            }
        }
    )
    provider = RecordProvider()
    assert provider.answer(None, record, "Any family history?") == (
        "family history: Father had asthma.\nfamily history: Mother is well."
    )
    assert (
        provider.answer(None, record, "Does the father have asthma?") == "family history: Father had asthma."
    )
    nothing = provider.answer(None, record, "Does she smoke?")
    assert (
        nothing == "The record does not specify this. Items on record here: chief complaint; family history."
    )
    assert "Cough" not in nothing and "asthma" not in nothing
    assert provider.answer(None, record, "What about the social history?") == "social history: Not specified."
    assert (
        provider.answer(
            None,
            json.dumps([{"procedure_name": "Endoscopy", "findings": "Not specified"}]),
            "What did the endoscopy show?",
        )
        == "Endoscopy, findings: Not specified"
    )
    assert (
        provider.answer(None, json.dumps([{"findings": "Not specified"}]), "xyz?")
        == "The record does not specify this."
    )
    assert provider.answer(None, data.NO_RECORD, "Any CT?") == data.NO_RECORD
    many = json.dumps({"history_of_present_illness": " ".join(f"Fever on day {i}." for i in range(1, 30))})
    assert len(provider.answer(None, many, "Was there fever?").splitlines()) == MAX_ITEMS


def test_prompts_hold_no_benchmark_case_id(truth):
    words = set((SYSTEM + " " + EXAMPLE).replace('"', " ").split())
    assert not words & set(truth)


# ---- configs and the agreement script ---------------------------------------------------------------


def test_bench_config_and_paper_experiment_compose():
    with initialize_config_dir(str(REPO / "conf"), version_base="1.3"):
        cfg = compose("config", overrides=["bench=clindiag", "bench.limit=2"])
        bench = instantiate(cfg.bench, _convert_="all")
        assert isinstance(bench, ClinDiagBenchmark) and bench.limit == 2 and bench.max_turns == 30
        paper = compose("config", overrides=["+experiment=clindiag_paper"])
    assert (paper.bench.provider, paper.bench.judge) == ("llm", "llm")
    assert paper.roles.benchmark_judge == paper.roles.benchmark_provider
    fixed = instantiate(paper.bench, _convert_="all")
    assert fixed.labels == {"judge": "qwen3.7-plus", "provider": "qwen3.7-plus"}
    assert bench.labels == {"judge": "rules", "provider": "record"}
    with initialize_config_dir(str(REPO / "conf"), version_base="1.3"):
        unfixed = compose("config", overrides=["bench=clindiag", "bench.judge=llm"])
        chosen = compose(
            "config", overrides=["bench=clindiag", "bench.judge=llm", "+model@roles.benchmark_judge=kimi"]
        )
    with pytest.raises(Exception, match="bench.judge=llm needs the fixed benchmark_judge model"):
        instantiate(unfixed.bench, _convert_="all")
    assert instantiate(chosen.bench, _convert_="all").labels["judge"] == "kimi-k3"


def agreement(*args):
    return subprocess.run(
        [sys.executable, str(REPO / "scripts" / "clindiag_judge_agreement.py"), *map(str, args)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout


def test_agreement_script_is_honest_without_an_llm_judge_run_and_counts_with_one(tmp_path):
    run = tmp_path / "clindiag" / "raw" / "m"
    run.mkdir(parents=True)
    rules_only = {"task_id": "rare/x", "status": "done", "extras": {"judge_rules": True, "submitted": True}}
    (run / "results.jsonl").write_text(json.dumps(rules_only) + "\n")
    assert "no LLM-judge run exists yet" in agreement(tmp_path)
    lines = [
        {
            "task_id": f"rare/{i}",
            "status": "done",
            "extras": {
                "judge_rules": False,
                "submitted": True,
                "diagnosis_correct": llm,
                "rules_diagnosis_correct": rules,
                "differential_hit": False,
                "rules_differential_hit": False,
            },
        }
        for i, (llm, rules) in enumerate([(True, True), (True, False), (False, False), (False, False)])
    ]
    (run / "results.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    (run / "run.json").write_text(json.dumps({"labels": {"label": "full"}}))
    out = agreement(tmp_path)
    assert "4 judged submissions" in out and "diagnosis agreement 75.0%" in out
