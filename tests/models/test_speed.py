"""The speed probe (`models/speed.py`) against the stand-in at a known per-request speed, and its warnings in
the estimate and the pre-flight check."""

from __future__ import annotations

import subprocess
import sys

import pytest

from pos_bench.models.openai import OpenAIModel
from pos_bench.models.speed import Speed, reply_limits, slow_replies, speed_of
from pos_bench.models.speed import measure as measure_speed
from pos_bench.standin.server import Settings, StandinServer
from pos_bench.standin.service import ServiceModel
from tests.conftest import REPO

SPEED = 15.0


@pytest.fixture(scope="module")
def slow():
    service = ServiceModel(tokens_per_s=SPEED, batch_tokens_per_s=SPEED * 8, first_token_s=0.2)
    with StandinServer(Settings(service=service, reply_tokens=30, chunk_seconds=0.05)) as server:
        yield server


def test_the_probe_reads_the_stand_ins_speed_and_first_token(slow):
    model = OpenAIModel("standin", base_url=slow.url, api_key_env=None, timeout=30)
    speed = measure_speed(model, tokens=30)
    assert speed.tokens == 30
    assert SPEED * 0.8 < speed.tokens_per_s < SPEED * 1.3
    assert 0.2 <= speed.first_token_s < 1.0


def test_the_speed_of_chunk_arrivals():
    assert speed_of([1.0, 2.0, 3.0], counted=21) == Speed(1.0, 10.0, 21)
    assert speed_of([0.5], counted=0).tokens_per_s == float("inf")
    with pytest.raises(ValueError, match="no text"):
        speed_of([], counted=5)


def test_a_reply_limit_that_takes_minutes_is_warned_about_and_a_short_one_is_not():
    cfg = {
        "model": {"max_tokens": 4096},
        "method": {"belief_max_tokens": 4096, "sentinel": {"progress_max_tokens": 256}},
    }
    limits = reply_limits(cfg)
    assert limits == {
        "model.max_tokens": 4096,
        "method.belief_max_tokens": 4096,
        "method.sentinel.progress_max_tokens": 256,
    }
    lines = slow_replies(Speed(0.5, SPEED, 64), limits)
    assert [line.split(":")[0] for line in lines] == ["model.max_tokens", "method.belief_max_tokens"]
    assert "4.6 min" in lines[0]
    assert slow_replies(Speed(0.5, 3000.0, 64), limits) == []


def test_the_warning_says_what_a_slow_reply_meets_under_the_models_settings():
    """Past the call's overall deadline it never finishes; within it, streamed it finishes, read whole a stopped
    server is seen only at that deadline; `stream: auto` streams only the replies longer than `timeout`."""

    def model(**settings):
        settings = {"timeout": 120, **settings}
        return OpenAIModel("standin", base_url="http://127.0.0.1:9/v1", api_key_env=None, **settings)

    speed, limits = Speed(0.5, SPEED, 64), {"model.max_tokens": 4096}  # 4,096 tokens: 4.6 min
    (whole,) = slow_replies(speed, limits, model=model(stream=False))
    assert "read whole, it finishes within its overall deadline of 939 s" in whole  # 120 s + 4,096 / 5
    (streamed,) = slow_replies(speed, limits, model=model(stream=True))
    assert streamed.endswith("streamed, so it finishes; lower it if episodes must be quicker")
    (auto,) = slow_replies(speed, limits, model=model(stream="auto"))  # 4,096 / 5 = 819 s > 120 s: streamed
    assert auto == streamed
    short = slow_replies(
        Speed(0.5, 1.5, 64), {"model.max_tokens": 512}, model=model(stream="auto", timeout=400)
    )
    assert "read whole" in short[0]  # 512 / 5 = 102 s ≤ 400 s: read whole, though it takes 5.7 min at 1.5/s
    (never,) = slow_replies(speed, limits, model=model(stream=True, min_tokens_per_s=40))
    assert "past the call's overall deadline of 222 s" in never and "min_tokens_per_s below 15.0" in never


def test_estimate_and_preflight_print_the_speed_and_warn(slow, tmp_path):
    point = ["bench=toy", "method=pos", "model=vllm", f"model.base_url={slow.url}", "model.model=standin"]
    estimate = subprocess.run(
        [sys.executable, "-m", "pos_bench.estimate", *point, "--measure-speed", f"--results={tmp_path}"],
        cwd=REPO, capture_output=True, text=True, timeout=300, check=True,
    )  # fmt: skip
    assert "tokens/s per request" in estimate.stdout
    assert "warning: method.belief_max_tokens: a reply of up to 4,096 tokens" in estimate.stdout
    run = subprocess.run(
        [sys.executable, "-m", "pos_bench", *point, "bench.limit=1", "bench.max_turns=1", "runner.measure_speed=true",
         "runner.progress=false", "cache.mode=off", f"results_root={tmp_path}"],
        cwd=REPO, capture_output=True, text=True, timeout=300, check=True,
    )  # fmt: skip
    assert "model speed:" in run.stderr and "warning: model.max_tokens" in run.stderr
