"""The toy household's truth (issue 28): the same facts and vocabulary as ALFWorld's, following the world as
the expert plays."""

from __future__ import annotations

from pos_bench.benchmarks.toy import ToyBenchmark
from pos_bench.protocols import TruthfulEnv
from pos_bench.truth import AGENT, Claim, Fact, judge


def test_the_toy_truth_follows_the_expert_through_a_clean_task() -> None:
    bench = ToyBenchmark(n_tasks=4)
    task = next(t for t in bench.tasks() if t.meta["task_type"] == "clean")
    env = bench.make_expert_env(None)
    assert isinstance(env, TruthfulEnv)
    obs = env.reset(task)
    obj, target = env.target_object, env.goal_receptacle
    start = env.truth()
    source = next(f.value for f in start.facts if f.subject == obj and f.attribute == "location")
    assert {
        Fact(obj, "clean", "false"),
        Fact(obj, "location", source),
        Fact(AGENT, "holding", "nothing"),
    } <= start.facts
    seen = []
    while not obs.done:
        obs = env.step(obs.info["plan"][0])
        seen.append(env.truth())
    assert any(
        Fact(obj, "location", AGENT) in t.facts and Fact(AGENT, "holding", obj) in t.facts for t in seen
    )
    end = seen[-1]
    assert {Fact(obj, "clean", "true"), Fact(obj, "location", target)} <= end.facts
    claims = [Claim(obj, f"clean, in {target}"), Claim(obj, f"in {source}")]
    assert [j.verdict for j in judge(claims, end)] == ["true", "true", "false"]
