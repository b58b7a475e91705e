import json
from collections.abc import Generator

import pandas as pd
import pytest
from hydra import compose, initialize_config_dir
from hydra.utils import instantiate

from pos_bench.benchmarks.rca import data as rca_data
from pos_bench.benchmarks.rca.benchmark import SUBMIT, RCABenchmark, RCAEnv, system_prompt
from pos_bench.benchmarks.rca.catalog import FAULT_TYPES
from pos_bench.benchmarks.rca.shop import FAULT_ROOTS
from pos_bench.loop import play
from pos_bench.protocols import MethodBase
from pos_bench.runner.summary import summarize
from pos_bench.transcript import Transcript
from pos_bench.types import Decision, Task, ToolCall
from tests.conftest import REPO

N = 10


def call(name: str, **arguments) -> ToolCall:
    return ToolCall(name, arguments)


def owner(name: str) -> Generator[ToolCall, str, str]:
    info = json.loads((yield call("get_topology", entity_name=name)))
    return info["matches"][0]["props"]["service"]


def investigate() -> Generator[ToolCall, str, None]:
    """A rule-based SRE: reads only tool outputs, one specific signal per fault type, then submits."""
    for keyword, fault in (("BackOff", "podCrashLoop"), ("ScalingReplicaSet", "replicaScaleDown")):
        found = json.loads((yield call("get_k8s_events", keyword=keyword, limit=50)))
        for event in found["events"]:
            if event["reason"] == keyword and (fault != "replicaScaleDown" or " to 0 " in event["message"]):
                service = yield from owner(event["object"].split("/", 1)[1])
                yield call(SUBMIT, root_cause_entity=service, fault_type=fault)
    topology = json.loads((yield call("get_topology")))
    for node in topology["nodes"]:
        cpu = json.loads(
            (yield call("query_metrics", entity_name=node, metric="node_cpu_usage_rate", limit=60))
        )
        values = [point["value"] for point in cpu["series"]]
        if max(values[-10:]) > 85 and max(values[:10]) < 60:
            yield call(
                SUBMIT, root_cause_entity=node, fault_type="nodeCpuHigh", analysis="node CPU saturated"
            )
    for keyword, fault in (("no such host", "dnsResolutionFailure"), ("slow query", "slowSQL")):
        logs = json.loads((yield call("search_logs", keyword=keyword)))
        if logs["matched"]:
            service = yield from owner(logs["lines"][0]["pod"])
            yield call(SUBMIT, root_cause_entity=service, fault_type=fault)
    for service in topology["services"]:
        gc = json.loads(
            (yield call("query_metrics", entity_name=service, metric="arms_jvm_gc_seconds_delta"))
        )
        if "error" not in gc and gc["max"] > 5 * gc["min"] + 1:
            yield call(SUBMIT, root_cause_entity=service, fault_type="F015-fullGC")
    for service in topology["services"]:
        spans = json.loads((yield call("query_traces", service_name=service, error_only=True, limit=30)))
        messages = " ".join(span["status_message"] for span in spans["spans"])
        for code, fault in (("429", "rateLimiting"), ("500", "httpError5xx")):
            if code in messages:
                yield call(SUBMIT, root_cause_entity=f"  {service.upper()} ", fault_type=fault)
    yield call(SUBMIT, root_cause_entity="frontend", fault_type="codeDefect")


class Oracle(MethodBase):
    """Drives `investigate` through the real loop; records every observation it was shown."""

    def __init__(self, model=None):
        self.plan = investigate()
        self.seen = []
        self.notes = []

    def start(self, task, brief, first):
        self.seen.append(first)
        self.next = next(self.plan)

    def prompt(self, obs):
        self.notes.append(obs.notes)
        return Decision(thought="rules", action=self.next)

    def update(self, step):
        self.seen.append(step.after)
        if not step.after.done:
            self.next = self.plan.send(step.after.text)


class Fixed(MethodBase):
    """Plays the given actions in order, the last one repeating."""

    def __init__(self, *actions):
        self.actions = list(actions)
        self.turn = 0

    def start(self, task, brief, first):
        self.first = first

    def prompt(self, obs):
        action = self.actions[min(self.turn, len(self.actions) - 1)]
        self.turn += 1
        return Decision(thought="fixed", action=action)

    def update(self, step):
        return None


@pytest.fixture(scope="session")
def dataset(tmp_path_factory):
    return rca_data.synthetic(N, 0, cache=tmp_path_factory.mktemp("rca"))


@pytest.fixture()
def env(dataset):
    built = RCAEnv(dataset, obs_cap=20000)
    built.reset(Task(dataset.ids[0]))
    return built


def run(dataset, method, max_turns=50, case=0, obs_cap=20000):
    bench = RCABenchmark()
    env = RCAEnv(dataset, obs_cap=obs_cap)
    task = Task(dataset.ids[case])
    return play(task, env, method, None, brief=bench.brief, max_turns=max_turns, log=Transcript())


def label(dataset, case_id):
    return json.loads((dataset.answer_key / f"{case_id}.gt.json").read_text())


def test_rule_based_oracle_solves_every_generated_case(dataset):
    results = [run(dataset, Oracle(), case=i) for i in range(N)]
    summary = summarize(results, {})
    assert summary.success_rate == 1.0, [(r.task_id, r.extras) for r in results if not r.success]
    assert (
        summary.extras["entity_correct"] == summary.extras["type_correct"] == summary.extras["joint"] == 1.0
    )
    assert summary.extras["no_submission"] == 0.0 and all(r.turns < 50 for r in results)
    faults = {label(dataset, i)["root_cause_types"][0].split("-", 1)[1] for i in dataset.ids}
    assert faults == set(FAULT_ROOTS)  # the ten cases cover every generated fault type


def test_wrong_or_missing_submissions_score_zero(dataset):
    truth = label(dataset, dataset.ids[0])
    entity, fault = truth["root_cause_entities"][0], truth["root_cause_types"][0]
    wrong_type = run(dataset, Fixed(call(SUBMIT, root_cause_entity=entity, fault_type="diskIOHigh")))
    assert wrong_type.extras == {
        **wrong_type.extras,
        "entity_correct": True,
        "type_correct": False,
        "joint": False,
    }
    wrong_entity = run(dataset, Fixed(call(SUBMIT, root_cause_entity="frontend", fault_type=fault)))
    assert (
        not wrong_entity.success
        and wrong_entity.extras["type_correct"]
        and not wrong_entity.extras["entity_correct"]
    )
    pod = next(p for p in json.loads(call_text(dataset, "list_entities", entity_type="k8s.pod"))["names"])
    as_pod = run(dataset, Fixed(call(SUBMIT, root_cause_entity=pod, fault_type=fault)))
    assert not as_pod.extras["entity_correct"]
    silent = run(dataset, Fixed(call("get_alerts")), max_turns=3)
    assert not silent.success and silent.extras["no_submission"] is True and silent.turns == 3


def call_text(dataset, name, **arguments):
    env = RCAEnv(dataset, obs_cap=20000)
    env.reset(Task(dataset.ids[0]))
    return env.step(call(name, **arguments)).text


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        ({"root_cause_entity": "cart", "fault_type": "memoryLeak"}, "not one of the 29 catalog ids"),
        ({"root_cause_entity": "  ", "fault_type": "slowSQL"}, "non-empty"),
        ({"fault_type": "slowSQL"}, "non-empty"),
        ({"root_cause_entity": "cart"}, "not one of the 29"),
        ({"root_cause_entity": "cart", "fault_type": 3}, "not one of the 29"),
    ],
)
def test_invalid_submission_is_rejected_uses_the_step_and_keeps_the_case_open(env, arguments, problem):
    obs = env.step(ToolCall(SUBMIT, arguments))
    assert obs.info["status"] == "rejected" and problem in obs.text and not obs.done
    assert obs.info["tool_uses"] == 1
    assert env.step(call(SUBMIT, root_cause_entity="cart", fault_type="F003-slowSQL")).done


def test_submission_with_unknown_argument_names_is_a_mismatch(env):
    obs = env.step(call(SUBMIT, root_cause_entity="cart", fault_type="slowSQL", type="function"))
    assert obs.info["status"] == "invalid" and obs.text.startswith("Argument mismatch for submit_root_cause")
    assert "'type'" in obs.text and not obs.done and obs.info["tool_uses"] == 1


def test_valid_submission_ends_the_episode_at_once(dataset):
    result = run(
        dataset, Fixed(call(SUBMIT, root_cause_entity="cart", fault_type="slowSQL"), call("get_alerts"))
    )
    assert result.steps == 1 and result.turns == 1


@pytest.mark.parametrize(
    "arguments",
    [
        {"keyword": "ANSWER_KEY"},
        {"keyword": "../../answer_key/t001.gt.json"},
        {"keyword": "x", "Answer_Key": 1},
        {"keyword": ["fine", {"deep": "t001.GT.JSON"}]},
        {"pod_name": "..\\cases"},
    ],
)
def test_arguments_naming_the_answer_key_or_a_path_are_refused(env, arguments):
    for name in ("search_logs", SUBMIT):
        obs = env.step(ToolCall(name, {**arguments, "root_cause_entity": "cart", "fault_type": "slowSQL"}))
        assert obs.info["status"] == "rejected" and "answer key" in obs.text and not obs.done


def test_tools_never_read_the_answer_key_which_is_opened_only_by_score(dataset, tmp_path):
    copy = rca_data.Dataset(dataset.cases, tmp_path / "no_key", dataset.ids, "real")
    env = RCAEnv(copy, obs_cap=20000)
    env.reset(Task(copy.ids[0]))
    for name in (
        "get_data_overview",
        "get_alerts",
        "get_k8s_events",
        "query_traces",
        "search_logs",
        "get_topology",
    ):
        assert env.step(call(name)).info["status"] == "answered"
    assert env.step(call(SUBMIT, root_cause_entity="cart", fault_type="slowSQL")).done
    with pytest.raises(FileNotFoundError):
        env.score()


def test_the_agent_never_sees_the_label(dataset):
    for case_id in dataset.ids:
        oracle = Oracle()
        run(dataset, oracle, case=dataset.ids.index(case_id))
        seen = json.dumps([o.__dict__ for o in oracle.seen], default=str)
        truth = label(dataset, case_id)
        assert (
            truth["incident_id"] not in seen
            and "prompt_text" not in seen
            and "root_cause" not in seen.replace("submit_root_cause", "").replace("root_cause_entity", "")
        )


def test_task_is_task_json_without_prompt_text_pretty_printed(dataset, env):
    task = json.loads((dataset.case_dir(dataset.ids[0]) / "task.json").read_text())
    first = env.reset(Task(dataset.ids[0]))
    assert json.loads(first.goal) == {k: v for k, v in task.items() if k != "prompt_text"}
    assert first.goal.startswith('{\n  "') and "submit_root_cause" in first.text
    assert [t["function"]["name"] for t in first.tools][-1] == SUBMIT and len(first.tools) == 10
    enum = first.tools[-1]["function"]["parameters"]["properties"]["fault_type"]["enum"]
    assert enum == list(FAULT_TYPES) and len(enum) == 29


@pytest.mark.parametrize(
    "action",
    ["get_alerts", ToolCall("get_alerts", ["limit"]), ToolCall("", {}), ToolCall("read_file", {"path": "x"})],
)
def test_malformed_and_unknown_actions_do_not_end_the_case(env, action):
    obs = env.step(action)
    assert obs.info["status"] == "invalid" and not obs.done
    if isinstance(action, ToolCall) and isinstance(action.arguments, dict):
        assert "get_data_overview" in obs.text and SUBMIT in obs.text and obs.info["tool_uses"] == 1
    else:
        assert obs.info["tool_uses"] == 0


def test_argument_mismatch_and_execution_errors_are_observations(env, dataset, tmp_path):
    obs = env.step(call("query_metrics", entity="cart"))
    assert obs.info["status"] == "invalid" and obs.text.startswith("Argument mismatch for query_metrics")
    assert "entity_name" in obs.text
    assert env.step(call("list_entities")).text.startswith("Argument mismatch")
    assert "must be an integer" in env.step(call("get_alerts", limit="many")).text
    assert "must be true or false" in env.step(call("query_traces", error_only="yes")).text
    case_id = dataset.ids[0]
    broken = tmp_path / "cases" / case_id
    broken.mkdir(parents=True)
    for path in dataset.case_dir(case_id).iterdir():
        (broken / path.name).write_bytes(path.read_bytes())
    pd.DataFrame({"time": [1_700_000_000], "data": ["{}"]}).to_parquet(broken / "alerts.parquet")  # no status
    odd = RCAEnv(rca_data.Dataset(broken.parent, dataset.answer_key, (case_id,), "real"), obs_cap=20000)
    odd.reset(Task(case_id))
    obs = odd.step(call("get_alerts"))
    assert obs.info["status"] == "error" and obs.text.startswith(
        "Execution error in get_alerts: AttributeError"
    )
    assert not obs.done and odd.step(call("get_data_overview")).info["status"] == "answered"


def test_observation_cap_keeps_the_head_and_says_how_long_it_was(dataset):
    env = RCAEnv(dataset, obs_cap=300)
    env.reset(Task(dataset.ids[0]))
    full = RCAEnv(dataset, obs_cap=10**9)
    full.reset(Task(dataset.ids[0]))
    whole = full.step(call("get_topology", entity_name="checkout", limit=50)).text
    obs = env.step(call("get_topology", entity_name="checkout", limit=50))
    head, notice = obs.text.split("\n[Observation cut", 1)
    assert head == whole[:300] and f"first 300 of {len(whole)} characters" in notice and "Narrow" in notice


def test_brief_carries_catalog_method_and_contract():
    bench = RCABenchmark()
    assert bench.brief.mode == "diagnostic" and bench.brief.final_turn_note and bench.max_turns == 50
    SYSTEM = system_prompt(3)
    assert all(f"- {name}:" in SYSTEM for name in FAULT_TYPES)
    assert "9." in SYSTEM and "verbatim" in SYSTEM and "submit_root_cause" in SYSTEM


def test_final_turn_note_reaches_the_last_turn(dataset):
    oracle = Oracle()
    result = run(dataset, oracle, max_turns=2)
    note = RCABenchmark().brief.final_turn_note
    assert result.turns == 2 and oracle.notes == [(), (note,)] and "submit_root_cause" in note


def test_benchmark_slices_the_manifest_and_config_composes(monkeypatch, tmp_path_factory):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.getbasetemp() / "xdg"))
    all_ids = [t.id for t in RCABenchmark(n_synthetic=4).tasks()]
    assert all_ids == ["t001", "t002", "t003", "t004"]
    assert [t.id for t in RCABenchmark(n_synthetic=4, start=1, limit=2).tasks()] == ["t002", "t003"]
    with initialize_config_dir(str(REPO / "conf"), version_base="1.3"):
        cfg = compose("config", overrides=["bench=rca_synthetic", "bench.limit=2", "bench.n_synthetic=4"])
    bench = instantiate(cfg.bench, _convert_="all")
    assert isinstance(bench, RCABenchmark) and [t.id for t in bench.tasks()] == ["t001", "t002"]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"source": "cloud"}, "bench.source must be one of synthetic, real"),
        ({"max_turns": 0}, "max_turns"),
    ],
)
def test_bad_settings_are_explained(kwargs, message):
    with pytest.raises(ValueError, match=message):
        RCABenchmark(**kwargs)
