"""The embedded SmolLM2 served over the OpenAI protocol on loopback (llama.cpp's own server, `serve_local`),
reached through inspect's OpenAI-compatible provider: `pos_bench/toy` and `pos_bench/alfworld`, raw and pos, 2
samples each, give the same scores and per-role tokens as `python -m pos_bench` replaying the eval's replies.
Short episodes (2 turns): the point is the plumbing, not the 135M model's play."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from pos_bench.models.serve_local import SERVED_NAME
from tests.inspect.runs import eval_task, inspect_rows, pos_bench, pos_bench_rows, run_folder

pytestmark = pytest.mark.embedded
NAME = f"openai-api/local/{SERVED_NAME}"
SHORT = {"bench.limit": 2, "bench.max_turns": 2}
CAPPED = {
    "bench.limit": 2,
    "bench.max_turns": 1,
    "method.belief_max_tokens": 384,
    "method.sentinel.consistency_max_tokens": 256,
    "method.sentinel.progress_max_tokens": 256,
}
"""PoS with its replies capped: inspect's reply schema has no `maxItems`, so the 135M model, unlike under
`model=smollm2` (its `reply_limits`), fills a belief's lists until the budget (4096 tokens, ~6 min a call here)."""
SETTINGS = {"raw": SHORT, "pos": CAPPED}


@pytest.fixture(scope="module")
def served() -> Iterator[str]:
    pytest.importorskip("xllamacpp")
    from pos_bench.models.serve_local import serve_embedded

    with serve_embedded(0, n_threads=2) as base_url, pytest.MonkeyPatch.context() as patch:
        patch.setenv("LOCAL_BASE_URL", base_url)
        patch.setenv("LOCAL_API_KEY", "no-key")
        yield base_url


def check_same_as_python_m_pos_bench(bench: str, method: str, tmp_path: Path) -> None:
    settings = SETTINGS[method]
    log = eval_task(
        bench, NAME, tmp_path / "logs", method=method, results_root=str(tmp_path / "r"), **settings
    )
    assert log.status == "success" and len(log.samples or []) == 2
    rows = inspect_rows(log)
    assert all(
        sum(inp for inp, _ in row["tokens"].values()) > 0 for row in rows.values()
    )  # the model answered
    replayed = pos_bench(
        f"bench={bench}",
        f"method={method}",
        "model=replay",
        f"model.run={run_folder(log)}",
        *(f"{k}={v}" for k, v in settings.items()),
        results=tmp_path / "replay",
    )
    statuses = {str(s.scores["success"].metadata["status"]) for s in log.samples or []}
    # exit 1: every episode errored, as in the eval (PoS's belief, its replies capped, is not valid JSON)
    assert replayed.returncode == (1 if statuses == {"error"} else 0), replayed.stderr[-3000:]
    assert pos_bench_rows(tmp_path / "replay") == rows


@pytest.mark.parametrize("method", ["raw", "pos"])
def test_toy_through_inspect_on_the_embedded_server(method: str, served: str, tmp_path: Path):
    check_same_as_python_m_pos_bench("toy", method, tmp_path)


@pytest.mark.engine
@pytest.mark.parametrize("method", ["raw", "pos"])
def test_alfworld_through_inspect_on_the_embedded_server(
    method: str, served: str, shared: Path, tmp_path: Path
):
    pytest.importorskip("alfworld", reason="ALFWorld needs the `alfworld` extra")
    check_same_as_python_m_pos_bench("alfworld", method, tmp_path)
