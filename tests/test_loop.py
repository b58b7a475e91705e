import contextlib
import dataclasses

import pytest

from baselines.expert import Expert
from baselines.raw import RawHistory
from pos_bench import events
from pos_bench.benchmarks.toy import ToyBenchmark, ToyEnv
from pos_bench.loop import RetryBudget, UnusableReply, play
from pos_bench.models.scripted import ScriptedModel
from pos_bench.prompting import REPLY_CAP, policy_prompt
from pos_bench.protocols import MethodBase
from pos_bench.transcript import Recorded, Transcript
from pos_bench.truth import Claim, judge

BENCH = ToyBenchmark(n_tasks=4)
TASK = BENCH.tasks()[0]


def run(method_factory, replies, *, max_turns=5, brief=None, max_meta_per_turn=3, budget=None):
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
        budget=budget or RetryBudget(),
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
    assert kinds[1:-1] == ["truth", "claims"] + ["call", "step", "truth"] * 3
    assert model.usage["agent"].calls == 3


def test_json_repairs_and_the_missing_action_retry_are_counted_apart():
    """One JSON repair (max_json_retries=1) and then one missing-action retry: the third reply is executed."""
    result, log, _ = run(
        lambda m: RawHistory(m, max_json_retries=1),
        ["no json here", '{"thought": "x"}', '{"thought": "", "action": "look"}'],
        max_turns=1,
    )
    assert (result.steps, result.spent_turns) == (1, 0)
    assert [f["retry"] for f in log.of_kind("parse_failure")] == ["json", "missing_action"]
    calls = log.of_kind("call")
    assert calls[1]["prompt"]["messages"][-2] == {"role": "assistant", "content": "no json here"}
    assert "could not be read" in calls[1]["prompt"]["messages"][-1]["content"]
    assert "no executable action" in calls[2]["prompt"]["messages"][-1]["content"]


def test_a_still_missing_action_spends_the_turn_after_exactly_one_retry():
    result, _, model = run(RawHistory, ['{"thought": "finished", "answer": "x"}'], max_turns=2)
    assert (result.turns, result.steps, result.spent_turns) == (2, 0, 2)
    assert model.usage["agent"].calls == 4  # per turn: the reply and one missing-action retry


@pytest.mark.parametrize("policy", ["spend_turn", "error"])
def test_exhausted_json_repairs_follow_the_configured_policy(policy):
    budget = RetryBudget(on_json_exhausted=policy)
    replies = ["not json", "still not json", '{"thought": "", "action": "look"}']
    factory = lambda m: RawHistory(m, max_json_retries=1)
    if policy == "error":
        with pytest.raises(UnusableReply, match="not a JSON object"):
            run(factory, replies, max_turns=2, budget=budget)
        return
    result, log, _ = run(factory, replies, max_turns=2, budget=budget)
    assert (result.spent_turns, result.steps) == (1, 1)
    assert len(log.of_kind("turn_spent")) == 1


def test_an_exhausted_missing_action_retry_can_error_the_episode():
    budget = RetryBudget(missing_action_retries=0, on_action_exhausted="error")
    with pytest.raises(UnusableReply):
        run(RawHistory, ['{"thought": "no action"}'], max_turns=2, budget=budget)


class Steps(MethodBase):
    """Records every transition it is given."""

    def __init__(self, model):
        self.steps = []

    def start(self, task, brief, first):
        self.brief = brief

    def prompt(self, obs):
        return policy_prompt(self.brief, obs, ["act"])

    def update(self, step):
        self.steps.append(step)
        return {"action": step.decision.action, "last": step.last_of_turn}


def test_a_multi_action_reply_runs_each_action_as_its_own_transition():
    brief = dataclasses.replace(BENCH.brief, max_actions_per_turn=3)
    reply = '{"thought": "t", "actions": ["look", "inventory", "look", "inventory"]}'
    result, log, model = run(Steps, [reply], max_turns=2, brief=brief)
    assert (result.turns, result.steps) == (2, 6)
    assert model.usage["agent"].calls == 2
    records = [e["record"] for e in log.of_kind("memory")]
    assert [r["action"] for r in records] == ["look", "inventory", "look"] * 2
    assert [r["last"] for r in records] == [False, False, True] * 2
    assert len(log.of_kind("actions_dropped")) == 2
    prompt = log.of_kind("call")[0]["prompt"]
    assert '"actions" (a list of 1 to 3 actions' in prompt["messages"][1]["content"]
    assert prompt["schema"]["properties"]["actions"]["maxItems"] == 3


def test_one_action_benchmarks_execute_only_the_action_key():
    reply = '{"thought": "t", "actions": ["look", "inventory"], "action": "inventory"}'
    result, log, _ = run(Steps, [reply], max_turns=1)
    assert result.steps == 1 and log.of_kind("step")[0]["action"] == "inventory"


def test_a_10_mb_reply_is_cut_in_the_repair_request_and_the_transcript_with_its_size():
    huge = "x" * 10_000_000
    result, log, _ = run(
        lambda m: RawHistory(m, max_json_retries=2),
        [huge, huge, '{"thought": "", "action": "inventory"}'],
        max_turns=1,
    )
    assert result.steps == 1
    calls = log.of_kind("call")
    assert all(len(c["reply"]) < REPLY_CAP + 200 for c in calls)
    assert calls[0]["reply"].endswith(
        "[cut here: the reply had 10,000,000 characters; the first 100,000 are kept]"
    )
    echoed = [m for m in calls[2]["prompt"]["messages"] if m["role"] == "assistant"]
    assert len(echoed) == 2 and all(m["content"] == calls[0]["reply"] for m in echoed)
    assert sum(len(str(c)) for c in calls) < 1_000_000  # was 60 MB for one turn


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


def test_truth_and_claims_are_recorded_per_step():
    """The toy knows its truth: one `truth` event after the reset and after each step; a method that keeps
    no state says so once; the events read back as the env's truth."""
    result, log, _ = run(RawHistory, ['{"thought": "t", "action": "go to fridge 1"}'], max_turns=2)
    stream = events.parse_all(log.events)
    truths = [e for e in stream if isinstance(e, events.Truth)]
    assert [t.step for t in truths] == [-1, 0, 1] and result.steps == 2
    assert truths[0].terms and truths[1].terms is None  # the vocabulary is written once
    said = [e for e in stream if isinstance(e, events.Claims)]
    assert [(c.step, c.keeps_state) for c in said] == [(-1, False)]
    assert events.claims(stream) is None
    env = BENCH.make_env(None)
    env.reset(TASK)
    env.step("go to fridge 1")
    assert events.truths(stream)[0] == env.truth()
    assert any(f.subject == "agent" and f.value == "fridge 1" for f in events.truths(stream)[1].facts)


def test_a_claiming_method_records_its_claims_beside_the_truth():
    class Claiming(RawHistory):
        def claims(self):
            return (Claim("agent", "at", "fridge 1"),)

    _, log, _ = run(Claiming, ['{"thought": "t", "action": "go to fridge 1"}'], max_turns=2)
    stream = events.parse_all(log.events)
    held = events.claims(stream)
    assert held is not None and sorted(held) == [-1, 0, 1]
    assert held[0] == (Claim("agent", "at", "fridge 1"),)
    first = events.truths(stream)
    verdicts = [judge(held[s], first[s])[0].verdict for s in (-1, 0)]
    assert verdicts == ["unscored", "true"]  # at the reset the agent stands nowhere in particular


def test_no_truth_events_when_the_env_reports_none():
    class QuietEnv(ToyEnv):
        """A toy whose truth setting is off."""

        def truth(self):
            return None

    log = Transcript()
    model = ScriptedModel({"agent": ['{"thought": "", "action": "look"}']})
    play(
        TASK, QuietEnv(BENCH.text_version), RawHistory(model), model, brief=BENCH.brief, max_turns=1, log=log
    )
    assert log.of_kind("step") and not log.of_kind("truth") and not log.of_kind("claims")


def test_a_truth_read_that_raises_costs_that_steps_truth_not_the_step_or_the_episode(caplog):
    """The truth read after the second step raises: every step is still written and played, that step has a
    `truth_unread` event instead of a truth, no claims are recorded against the older truth, and the next truth
    reads back whole."""

    class Claiming(RawHistory):
        def claims(self):
            return (Claim("agent", "at", "fridge 1"),)

    class FlakyTruth(ToyEnv):
        reads = 0

        def truth(self):
            FlakyTruth.reads += 1
            if FlakyTruth.reads == 3:  # after the reset, step 0, then step 1
                raise KeyError("a state the reader does not know")
            return super().truth()

    log = Transcript()
    model = ScriptedModel({"agent": ['{"thought": "t", "action": "go to fridge 1"}']})
    result = play(
        TASK, FlakyTruth(BENCH.text_version), Claiming(model), model, brief=BENCH.brief, max_turns=3, log=log
    )
    stream = events.parse_all(log.events)
    assert result.steps == 3 and result.error is None and len(log.of_kind("step")) == 3
    assert [(e.step, e.error) for e in stream if isinstance(e, events.TruthUnread)] == [
        (1, "KeyError: 'a state the reader does not know'")
    ]
    assert sorted(events.truths(stream)) == [-1, 0, 2]
    assert sorted(events.claims(stream)) == [-1, 0, 2]  # none at step 1, where no truth was read
    env = BENCH.make_env(None)
    env.reset(TASK)
    for _ in range(3):
        env.step("go to fridge 1")
    assert events.truths(stream)[2] == env.truth()
    assert [r.getMessage() for r in caplog.records if r.name == "pos_bench.loop"] == [
        "the environment's truth could not be read after step 1 (KeyError: 'a state the reader does not know')"
    ]


def test_every_reset_and_step_runs_inside_the_env_gate_and_records_its_cpu():
    held = []

    class Watched(ToyEnv):
        def reset(self, task):
            assert held == [True], "reset outside the gate"
            return super().reset(task)

        def step(self, action):
            assert held == [True], "step outside the gate"
            return super().step(action)

    @contextlib.contextmanager
    def gate():
        held.append(True)
        try:
            yield
        finally:
            held.pop()

    log = Transcript()
    env = Watched(expert=True)
    result = play(TASK, env, Expert(), None, brief=BENCH.brief, max_turns=20, log=log, env_gate=gate)
    assert result.success and held == []
    timed = [e for e in log.events if e["kind"] in ("reset", "step")]
    assert len(timed) == result.steps + 1
    assert all(isinstance(e["cpu_seconds"], float) and e["cpu_seconds"] >= 0 for e in timed)
