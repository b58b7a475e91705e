import os
import subprocess
import sys

import pytest

from pos_bench.benchmarks.toy import ToyBenchmark
from pos_bench.models.local import LocalModel
from pos_bench.runner.context_fit import context_problem, first_prompt
from pos_bench.types import Message, Prompt
from tests.conftest import REPO

LOCAL = {"_target_": "pos_bench.models.local.LocalModel"}


def first_of(bench):
    env = bench.make_env(None)
    try:
        return env.reset(bench.tasks()[0])
    finally:
        env.close()


def test_a_model_that_cannot_count_tokens_is_not_checked():
    bench = ToyBenchmark(n_tasks=1)
    cfg = {"model": {"_target_": "pos_bench.models.scripted.ScriptedModel"}}
    assert context_problem(cfg, bench.brief, first_of(bench)) is None


@pytest.mark.embedded
def test_a_first_prompt_longer_than_the_context_is_one_line_naming_both_sizes():
    bench = ToyBenchmark(n_tasks=1)
    first = first_of(bench)
    tokens = LocalModel().count_tokens(first_prompt(bench.brief, first))
    assert 256 < tokens < 8192
    problem = context_problem({"model": {**LOCAL, "n_ctx": 256}}, bench.brief, first)
    assert problem is not None and "\n" not in problem
    assert f"{tokens:,} tokens" in problem and "context of 256 tokens" in problem
    assert context_problem({"model": LOCAL}, bench.brief, first) is None
    roles = {"model": LOCAL, "roles": {"agent": {**LOCAL, "n_ctx": 256}}}  # the policy's own model counts
    assert context_problem(roles, bench.brief, first) is not None


@pytest.mark.embedded
def test_the_run_stops_before_the_first_episode_with_exit_2(tmp_path):
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "pos_bench",
            "bench=toy",
            "method=raw",
            "model=smollm2",
            "model.n_ctx=256",
            f"results_root={tmp_path}",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert out.returncode == 2, out.stderr
    assert "context of 256 tokens" in out.stderr and "Traceback" not in out.stderr
    assert not list(tmp_path.rglob("results.jsonl"))


@pytest.mark.embedded
@pytest.mark.skipif(
    not os.environ.get("POS_BENCH_SLOW"), reason="minutes of prompt evaluation: POS_BENCH_SLOW=1"
)
def test_the_long_context_preset_answers_a_prompt_past_8k_tokens():
    from pos_bench.build import build
    from pos_bench.runner.rescore import compose_config

    model = build(compose_config(["model=smollm2_32k"])["model"])
    notes = "\n".join(f"Note {i}: the blue mug is on shelf {i % 7}." for i in range(700))
    prompt = Prompt(messages=(Message("user", f"{notes}\n\nSay OK."),), max_tokens=8)
    assert model.count_tokens(prompt) > 8192
    reply = model.generate(prompt)
    assert reply.usage.input_tokens > 8192 and reply.text.strip()
    model.close()
