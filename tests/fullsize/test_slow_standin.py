"""PoS plays to its turn budget against a stand-in writing 15 tokens/s per request (issue 44): every reply
takes longer than `model.timeout`, so only the streamed read with its idle deadline lets the episode finish;
the run is the user's command (`python -m pos_bench … model=vllm`), its checks and runner included."""

from __future__ import annotations

import json
import subprocess
import sys

from pos_bench.standin.server import Settings, StandinServer
from pos_bench.standin.service import ServiceModel
from tests.conftest import REPO

SPEED = 15.0
REPLY_TOKENS = 24
TIMEOUT = 1.0
TURNS = 2


def test_pos_on_toy_plays_its_turn_budget_against_a_15_tokens_per_s_server(tmp_path):
    service = ServiceModel(tokens_per_s=SPEED, batch_tokens_per_s=SPEED * 8, first_token_s=0.05)
    with StandinServer(Settings(service=service, reply_tokens=REPLY_TOKENS)) as server:
        done = subprocess.run(
            [sys.executable, "-m", "pos_bench", "bench=toy", "bench.limit=1", f"bench.max_turns={TURNS}",
             "method=pos", "model=vllm", f"model.base_url={server.url}", "model.model=standin",
             f"model.timeout={TIMEOUT}", "retry.max_attempts=2", "runner.progress=false", "cache.mode=off",
             f"results_root={tmp_path}"],
            cwd=REPO, capture_output=True, text=True, timeout=300, check=False,
        )  # fmt: skip
        stats = server.stats()
    assert done.returncode == 0, done.stderr[-2000:]
    (results,) = tmp_path.glob("toy/pos/vllm/*/results.jsonl")
    (row,) = [json.loads(line) for line in results.read_text().splitlines()]
    assert (row["status"], row["turns"], row["steps"]) == ("done", TURNS, TURNS), row
    calls = sum(role["calls"] for role in row["usage"].values())
    assert stats.answered == stats.requests == calls >= 2 * TURNS  # nothing timed out and was sent again
    assert stats.streamed == calls  # model=vllm streams (`auto`) every reply that may outlast a 1 s timeout
    assert (
        stats.output_tokens >= calls * 10 and REPLY_TOKENS / SPEED > TIMEOUT
    )  # replies outlasted the timeout
