"""CPU each speed shortcut in the core saves, per call, against the plain code it stands in for.

- `build.py`: a config node built from a cached `functools.partial` vs `hydra.utils.instantiate` (three builds
  per episode: benchmark, model, method);
- `prompting.py`: the policy reply schema filled in from a per-shape template vs built by pydantic (one per
  policy prompt);
- `models/direct.py`: a chat request posted straight onto the SDK client's HTTP client vs the SDK's own
  low-level `post` (one per model call; both read the body as plain JSON, on the transport `models/openai.py`
  uses), against the loopback stub; only the calling thread's CPU is counted, so the stub's own work is not.
  The SDK's typed `chat.completions.create` costs more again (docs/fullsize.md, "Slow servers");
- `models/wire.py`: the same request written and its reply read on the client's kept connection
  (`direct.post_whole`, every call read whole) vs the direct post through the client's `httpx2` objects.
`--cold MB` writes that much memory before each timed call, as an environment step between two calls leaves the
caches (64 is enough on this machine); without it the calls run back to back, the caches warm.
(`redact.py` had a fast path too, writing an event's JSON as it is when no secret shows in it: it saved
0.03 ms per event and was removed.)

Figures are CPU-seconds of this process or thread (`time.process_time` / `time.thread_time`), so they hold on
a loaded machine better than wall time does.

    .venv/bin/python scripts/bench_shortcuts.py [--calls 300] [--cold 64]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hydra.utils import instantiate

from pos_bench.build import build
from pos_bench.prompting import decision_model, decision_schema
from pos_bench.types import Observation
from tests.models.stub_openai_server import PATIENT, StubOpenAI

COLD_MB = 0
"""Memory written before each timed call (`--cold`), so that the caches are as cold as an environment step
between two calls of an episode leaves them; 0: calls back to back, the caches warm."""


def cpu_ms(
    work: Callable[[int], object], calls: int, clock: Callable[[], float] = time.process_time
) -> float:
    """Milliseconds of CPU per call of `work(i)`, after one warm-up call."""
    work(-1)
    if COLD_MB:
        spent, scratch, source = 0.0, bytearray(COLD_MB << 20), bytes(COLD_MB << 20)
        for i in range(calls):
            scratch[:] = source
            start = clock()
            work(i)
            spent += clock() - start
        return spent / calls * 1000
    start = clock()
    for i in range(calls):
        work(i)
    return (clock() - start) / calls * 1000


def builds(calls: int) -> tuple[float, float]:
    node = {"_target_": "pos_bench.benchmarks.toy.ToyBenchmark", "n_tasks": 8, "max_turns": 20}
    return cpu_ms(lambda i: build(node), calls), cpu_ms(lambda i: instantiate(node, _convert_="all"), calls)


def schemas(calls: int) -> tuple[float, float]:
    def observation(i: int) -> Observation:
        return Observation(text="", actions=tuple(f"go to shelf {i} {k}" for k in range(20)))

    templated = cpu_ms(lambda i: decision_schema(observation(i)), calls)
    plain = cpu_ms(lambda i: decision_model(observation(i)).model_json_schema(), calls)
    return templated, plain


def client_calls(calls: int) -> tuple[float, float]:
    import openai

    from pos_bench.models.direct import post_json, post_whole
    from pos_bench.models.openai import OpenAIModel

    with StubOpenAI() as stub:
        model = OpenAIModel("stub", base_url=f"{stub.url}/v1", api_key_env=None, timeout=PATIENT)
        client = model.client[1]  # the SDK client on pos_bench's transport
        body = {
            "model": "stub",
            "messages": [{"role": "user", "content": "Pick one action.\n- look\n- go to shelf 1"}],
            "max_tokens": 64,
            "temperature": 0.0,
        }

        def direct(i: int) -> object:
            response = post_json(openai, client, "chat/completions", body, PATIENT)
            try:
                return json.loads(response.read())
            finally:
                response.close()

        def sdk_post(i: int) -> object:
            return json.loads(client.post("/chat/completions", body=body, cast_to=bytes))

        def whole(i: int) -> object:
            return json.loads(post_whole(openai, client, "chat/completions", body, PATIENT))

        return (
            cpu_ms(direct, calls, time.thread_time),
            cpu_ms(sdk_post, calls, time.thread_time),
            cpu_ms(whole, calls, time.thread_time),
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--cold", type=int, default=0, metavar="MB", help="memory written before each call")
    args = parser.parse_args()
    global COLD_MB
    COLD_MB = args.cold
    direct, sdk_post, whole = client_calls(args.calls)
    rows = [
        ("build: cached partial vs instantiate (per build)", *builds(args.calls)),
        ("prompting: schema template vs pydantic (per policy prompt)", *schemas(args.calls)),
        ("openai: direct post vs the SDK's post (per call)", direct, sdk_post),
        ("openai: on the wire vs the direct post (per call)", whole, direct),
    ]
    print(f"{'shortcut vs plain code':<60} {'shortcut ms':>12} {'plain ms':>9} {'saves ms':>9}")
    for name, shortcut, plain in rows:
        print(f"{name:<60} {shortcut:>12.3f} {plain:>9.3f} {plain - shortcut:>9.3f}")


if __name__ == "__main__":
    main()
