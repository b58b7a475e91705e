import pytest

from pos_bench.benchmarks.toy import ToyBenchmark


def env_and_first(text_version="2.1.2", task_index=0):
    bench = ToyBenchmark(n_tasks=4, text_version=text_version)
    env = bench.make_expert_env(None)
    return env, env.reset(bench.tasks()[task_index])


def test_reset_shows_the_task_and_the_admissible_commands():
    _, first = env_and_first()
    assert "Your task is to: " + first.goal in first.text
    assert "go to cabinet 1" in first.actions and "help" in first.actions and not first.done


def test_text_versions_differ_as_alfworld_does():
    for version, put, arrive in (
        ("2.1.2", "move", "You arrive at drawer 1."),
        ("2.1.1", "put", "You arrive at loc 3."),
    ):
        env, first = env_and_first(version)
        obs = env.step("go to drawer 1")
        assert obs.text.startswith(arrive)
        plan = first.info["plan"]
        assert plan[-1].startswith(put + " ")


def test_inadmissible_commands_change_nothing():
    env, first = env_and_first()
    assert env.step("fly to the moon").text == "Nothing happens."
    assert env.step("go to cabinet 1").actions != first.actions


def test_the_oracle_plan_wins():
    env, obs = env_and_first(task_index=2)
    while obs.info["plan"]:
        obs = env.step(obs.info["plan"][0])
    assert obs.done and env.score().success


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="text_version"):
        ToyBenchmark(text_version="3.0")
    with pytest.raises(ValueError):
        ToyBenchmark(start=-1)
