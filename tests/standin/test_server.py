"""The stand-in over HTTP on loopback, through the real `openai` SDK and the project's own provider."""

import json
import threading
import time

import openai
import pytest

from pos_bench.models.openai import OpenAIModel
from pos_bench.prompting import policy_prompt
from pos_bench.runner.endpoints import endpoint_problems
from pos_bench.standin.server import Faults, Settings, StandinServer
from pos_bench.standin.service import CallCost, ServiceModel, service_bound
from pos_bench.types import Brief, Observation

FAST = ServiceModel(tokens_per_s=2000, batch_tokens_per_s=20000, prefill_tokens_per_s=1e6, first_token_s=0.0)
PATIENT = 30.0


def client(server: StandinServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.url, api_key="unused", max_retries=0, timeout=PATIENT)


def request(text: str = "Say something.", **extra) -> dict:
    return {"model": "standin", "messages": [{"role": "user", "content": text}], **extra}


def test_the_project_provider_plays_a_policy_turn_and_the_prefix_cache_counts():
    obs = Observation(text="You are in a room.", actions=("open door", "look"))
    prompt = policy_prompt(Brief(system="You play a text game. " * 40), obs, ["Task: leave the room."])
    with StandinServer(Settings(service=FAST)) as server:
        model = OpenAIModel("standin", base_url=server.url, api_key_env=None, timeout=PATIENT)
        first, again = model.generate(prompt), model.generate(prompt)
    assert json.loads(first.text) == {"thought": "x", "action": "open door"}
    assert first.usage.input_tokens > 200 and first.usage.cached_input_tokens == 0
    assert again.usage.cached_input_tokens >= first.usage.input_tokens - 16


def test_a_streamed_reply_arrives_over_the_decode_time_and_equals_the_whole_one():
    slow = ServiceModel(tokens_per_s=40, batch_tokens_per_s=40, first_token_s=0.0)
    with StandinServer(Settings(service=slow, chunk_seconds=0.05)) as server:
        sdk = client(server)
        whole = sdk.chat.completions.create(**request())
        started, arrivals, text, final = time.perf_counter(), [], "", None
        for part in sdk.chat.completions.create(
            **request(), stream=True, stream_options={"include_usage": True}
        ):
            arrivals.append(time.perf_counter() - started)
            text += (part.choices[0].delta.content or "") if part.choices else ""
            final = part
    tokens = whole.usage.completion_tokens
    assert text == whole.choices[0].message.content and final.usage.completion_tokens == tokens
    assert arrivals[-1] >= 0.9 * tokens / 40 and len(arrivals) >= 4  # spread out, not one burst at the end


def test_a_reply_longer_than_max_tokens_is_cut_with_finish_reason_length():
    with StandinServer(Settings(service=FAST)) as server:
        reply = client(server).chat.completions.create(**request(max_tokens=2))
    assert reply.usage.completion_tokens == 2 and reply.choices[0].finish_reason == "length"


def test_64_requests_in_flight_are_served_together_at_the_modelled_pace_without_burning_cpu():
    model = ServiceModel(tokens_per_s=10, batch_tokens_per_s=200, prefill_tokens_per_s=1e6, first_token_s=0.0)
    with StandinServer(Settings(service=model)) as server:
        sdk, seconds, outputs, clients_cpu = client(server), [], [], []

        def one(index: int) -> None:
            started, cpu = time.perf_counter(), time.thread_time()
            reply = sdk.chat.completions.create(**request(f"request {index}"))
            seconds.append(time.perf_counter() - started)
            outputs.append(reply.usage.completion_tokens)
            clients_cpu.append(time.thread_time() - cpu)

        threads = [threading.Thread(target=one, args=(i,)) for i in range(64)]
        started = time.perf_counter()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        wall = time.perf_counter() - started
        stats = server.stats()
    bound = service_bound([[CallCost(0, 0, n)] for n in outputs], 64, model)
    assert stats.max_in_flight == 64 and stats.answered == 64
    assert bound * 0.95 <= wall <= bound + 3.0  # never faster than the model; slack for a loaded machine
    # the handlers sleep while they wait: the process's CPU less the 64 SDK clients' that share it
    assert stats.cpu_seconds - sum(clients_cpu) < 0.25 * wall


@pytest.mark.parametrize(
    "faults, error",
    [(Faults(rate_429=1.0), openai.RateLimitError), (Faults(rate_5xx=1.0), openai.InternalServerError)],
)
def test_injected_faults_answer_at_once(faults, error):
    with StandinServer(Settings(service=FAST, faults=faults)) as server:
        with pytest.raises(error):
            client(server).chat.completions.create(**request())
        stats = server.stats()
    assert (stats.refused_429, stats.failed_5xx, stats.answered) == (
        int(faults.rate_429),
        int(faults.rate_5xx),
        0,
    )


def test_the_runner_endpoint_check_finds_the_served_model():
    with StandinServer(Settings(served_name="standin")) as server:
        node = {
            "_target_": "pos_bench.models.openai.OpenAIModel",
            "base_url": server.url,
            "api_key_env": None,
        }
        good = list(endpoint_problems({"model": {**node, "model": "standin"}}))
        wrong = list(endpoint_problems({"model": {**node, "model": "other"}}))
    assert good == [] and "does not serve other" in wrong[0]
