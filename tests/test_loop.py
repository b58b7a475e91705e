import dataclasses

from baselines.expert import Expert
from baselines.raw import RawHistory
from pos_bench.benchmarks.toy import ToyBenchmark
from pos_bench.loop import play
from pos_bench.models.scripted import ScriptedModel
from pos_bench.prompting import policy_prompt
from pos_bench.protocols import MethodBase
from pos_bench.transcript import Recorded, Transcript

BENCH = ToyBenchmark(n_tasks=4)
TASK = BENCH.tasks()[0]


def run(method_factory, replies, *, max_turns=5, brief=None, max_meta_per_turn=3):
    log = Transcript()
    model = Recorded(ScriptedModel({"agent": replies}), log)
    result = play(
        TASK,
        BENCH.make_env(model),
        method_factory(model),
        model,
        brief=brief or BENCH.brief,
        max_turns=max_turns,
        log=log,
        max_meta_per_turn=max_meta_per_turn,
    )
    return result, log, model


def test_expert_wins_every_toy_task_without_a_model():
    for task in BENCH.tasks():
        log = Transcript()
        result = play(
            task, BENCH.make_expert_env(None), Expert(), None, brief=BENCH.brief, max_turns=20, log=log
        )
        assert result.success and result.steps == len(log.of_kind("step"))
        assert result.task_meta == task.meta


def test_turn_budget_and_step_order():
    result, log, model = run(RawHistory, ['{"thought": "t", "action": "look"}'], max_turns=3)
    assert (result.turns, result.steps, result.success) == (3, 3, False)
    kinds = [e["kind"] for e in log.events]
    assert kinds[0] == "reset" and kinds[-1] == "score"
    assert kinds[1:-1] == ["call", "step"] * 3
    assert model.usage["agent"].calls == 3


def test_one_repair_then_the_turn_is_spent():
    result, log, _ = run(
        lambda m: RawHistory(m, max_json_retries=1),
        ["no json here", '{"thought": "x"}', '{"thought": "", "action": "look"}'],
        max_turns=2,
    )
    assert result.spent_turns == 1 and result.steps == 1
    failures = log.of_kind("parse_failure")
    assert [f["attempt"] for f in failures] == [0, 1]
    repair_prompt = log.of_kind("call")[1]["prompt"]["messages"]
    assert repair_prompt[-2] == {"role": "assistant", "content": "no json here"}
    assert "no executable action" in repair_prompt[-1]["content"]


def test_a_repaired_reply_is_executed():
    result, log, _ = run(RawHistory, ["oops", '{"thought": "", "action": "inventory"}'], max_turns=1)
    assert result.steps == 1 and result.spent_turns == 0
    assert log.of_kind("step")[0]["observation"]["text"] == "You are not carrying anything."


def test_final_turn_note_only_on_the_last_turn():
    brief = dataclasses.replace(BENCH.brief, final_turn_note="FINAL TURN: submit now.")
    _, log, _ = run(RawHistory, ['{"thought": "", "action": "look"}'], max_turns=3, brief=brief)
    users = [c["prompt"]["messages"][1]["content"] for c in log.of_kind("call")]
    assert ["FINAL TURN" in u for u in users] == [False, False, True]


class Glimpser(MethodBase):
    """A method with a meta-action: asks to glimpse once per turn before acting."""

    def __init__(self, model):
        self.pending = True
        self.seen_meta = []

    def start(self, task, brief, first):
        self.brief = brief

    def prompt(self, obs):
        return policy_prompt(
            self.brief, obs, ["glimpse first" if self.pending else "act"], meta_actions=("glimpse",)
        )

    def update(self, step):
        if step.after is None:
            self.seen_meta.append(step.decision.meta)
            self.pending = False
            return {"glimpsed": step.decision.meta}
        self.pending = True
        return None


def test_meta_actions_do_not_consume_turns():
    def reply(prompt, index):
        wants_glimpse = "glimpse first" in prompt.messages[1].content
        return '{"thought": "", "action": "%s"}' % ("glimpse 1" if wants_glimpse else "look")

    result, log, _ = run(Glimpser, reply, max_turns=2)
    assert (result.turns, result.steps, result.meta_actions) == (2, 2, 2)
    assert [e["record"] for e in log.of_kind("memory")] == [{"glimpsed": "glimpse 1"}] * 2


def test_endless_meta_actions_spend_the_turn():
    result, _, _ = run(Glimpser, ['{"thought": "", "action": "glimpse 1"}'], max_turns=2, max_meta_per_turn=2)
    assert result.steps == 0 and result.spent_turns == 2 and result.meta_actions == 4


class GivesUp(MethodBase):
    """A ready decision without an action and without a meta-action: the turn is spent, not a memory op."""

    def __init__(self, model):
        pass

    def start(self, task, brief, first):
        pass

    def prompt(self, obs):
        from pos_bench.types import Decision

        return Decision(thought="nothing to do", action=None)

    def update(self, step):
        raise AssertionError("a spent turn is not a transition")


def test_a_ready_decision_without_action_spends_the_turn():
    result, log, _ = run(GivesUp, [], max_turns=3)
    assert (result.turns, result.steps, result.meta_actions, result.spent_turns) == (3, 0, 0, 3)
    assert len(log.of_kind("turn_spent")) == 3
