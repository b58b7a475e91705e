import importlib.metadata
import json
import os
import re
import subprocess
import sys
import urllib.error
import urllib.request

import pytest

from pos_bench.benchmarks.toy import ToyBenchmark
from pos_bench.build import build
from pos_bench.models.cache import identity as model_identity
from pos_bench.models.local import LocalModel, LocalModelError, default_threads
from pos_bench.models.serve_local import SERVED_NAME, serve_embedded
from pos_bench.parse import parse_decision
from pos_bench.prompting import policy_prompt, render_observation
from pos_bench.protocols import ContextLimited
from pos_bench.runner.rescore import compose_config
from pos_bench.structured import StructuredFailure, ask
from pos_bench.types import Decision, Message, Prompt

embedded = pytest.mark.embedded

from tests.models.test_schema_bounds import Inventory


@pytest.fixture(scope="module")
def model():
    local = LocalModel()
    yield local
    local.close()


def test_describe_identifies_runtime_and_weights_without_loading():
    local = LocalModel()
    info = local.describe()
    assert not local.loaded
    assert info["provider"] == "embedded" and info["smoke"] is True
    assert info["runtime_version"] == importlib.metadata.version("xllamacpp")
    assert re.fullmatch(r"[0-9a-f]{64}", info["weights_sha256"])
    assert info["weights"].endswith(".gguf") and info["temperature"] == 0.0


@embedded
def test_schema_constrained_decision_is_admissible(model):
    bench = ToyBenchmark(n_tasks=1)
    env = bench.make_env(model)
    obs = env.reset(bench.tasks()[0])
    prompt = policy_prompt(bench.brief, obs, [f"Task: {obs.goal}", render_observation(obs)], max_tokens=200)
    reply = model.generate(prompt)
    decision = parse_decision(reply.text, obs)
    assert isinstance(decision, Decision) and decision.action in obs.actions
    assert model.loaded
    assert reply.usage.input_tokens > 100 and 0 < reply.usage.output_tokens <= 200 and reply.usage.calls == 1


@embedded
def test_structured_ask_returns_a_valid_object(model):
    prompt = Prompt(messages=(Message("user", "Name two places in a kitchen as JSON."),), max_tokens=200)
    result = ask(model, prompt, Inventory, role="belief", max_repairs=0)
    assert not isinstance(result, StructuredFailure), result
    assert len(result.places) <= 16


@embedded
def test_same_prompt_gives_same_free_text(model):
    prompt = Prompt(messages=(Message("user", "Describe a kitchen in one sentence."),), max_tokens=24)
    first, second = model.generate(prompt), model.generate(prompt)
    assert first.text == second.text and first.text.strip()


@embedded
def test_context_overflow_raises_a_clear_error():
    local = LocalModel(n_ctx=256)
    with pytest.raises(LocalModelError, match="context"):
        local.generate(Prompt(messages=(Message("user", "kitchen " * 400),), max_tokens=8))


@embedded
def test_serve_embedded_speaks_openai_chat_over_loopback():
    with serve_embedded(n_ctx=1024) as base_url:
        assert base_url.startswith("http://127.0.0.1:") and base_url.endswith("/v1")
        body = {
            "model": SERVED_NAME,
            "messages": [{"role": "user", "content": "Say hello."}],
            "max_tokens": 8,
        }
        request = urllib.request.Request(
            f"{base_url}/chat/completions",
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=60) as response:
            data = json.load(response)
        assert data["choices"][0]["message"]["content"]
        assert data["usage"]["completion_tokens"] > 0
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(f"{base_url}/models", timeout=5)


@embedded
def test_pos_plays_against_the_served_embedded_model_through_the_smollm2_server_preset(tmp_path):
    """The served model with the preset's reply caps closes PoS's structured replies (unbounded, the initial
    belief ran to its token budget and the episode ended in BeliefFailure)."""
    import subprocess
    import sys

    from tests.conftest import REPO

    with serve_embedded(n_ctx=8192) as base_url:
        cmd = [sys.executable, "-m", "pos_bench", "bench=toy", "bench.n_tasks=1", "bench.max_turns=1"]
        cmd += [
            "method=pos",
            "model=smollm2_server",
            f"model.base_url={base_url}",
            f"results_root={tmp_path}",
        ]
        out = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=900, check=False)
    assert out.returncode == 0, out.stderr[-2000:]
    (results,) = tmp_path.glob("toy/pos/smollm2_server/*/results.jsonl")
    row = json.loads(results.read_text())
    assert (row["status"], row["turns"]) == ("done", 1), row.get("error")
    meta = json.loads(results.with_name("run.json").read_text())
    assert meta["labels"]["label"] == "smoke" and meta["model"]["reply_limits"]["belief"]["chars"] == 48


def test_threads_default_to_the_cores_shared_by_the_workers_and_a_set_value_wins():
    assert [default_threads(w, cores=4) for w in (1, 2, 3, 4, 8, -1)] == [4, 2, 1, 1, 1, 1]
    with pytest.raises(ValueError, match="workers"):
        default_threads(0, cores=4)
    assert LocalModel(workers=1).describe()["n_threads"] == default_threads(1)
    assert LocalModel(n_threads=3, workers=2).describe()["n_threads"] == 3


def test_the_preset_gives_each_worker_its_share_of_the_cores():
    for n_jobs in (1, 2):
        cfg = compose_config(["bench=toy", "method=raw", "model=smollm2", f"runner.n_jobs={n_jobs}"])
        assert build(cfg["model"]).describe()["n_threads"] == default_threads(n_jobs)
    cfg = compose_config(
        ["bench=toy", "method=raw", "model=smollm2", "runner.n_jobs=2", "++model.n_threads=5"]
    )
    assert build(cfg["model"]).describe()["n_threads"] == 5


def test_the_presets_named_lists_are_lists_of_their_reply_type():
    from pos_bench.pos import belief

    cfg = compose_config(["bench=toy", "method=raw", "model=smollm2"])
    for key, limits in build(cfg["model"]).reply_limits.items():
        if limits.lists:
            properties = getattr(belief, key).model_json_schema()["properties"]
            assert all(properties[name]["type"] == "array" for name in limits.lists), key


def test_prefix_reuse_and_reply_limits_are_part_of_the_model_identity():
    plain, reusing = LocalModel().describe(), LocalModel(cache_prompt=True).describe()
    assert reusing["cache_prompt"] is True and model_identity(plain) != model_identity(reusing)
    capped = LocalModel(reply_limits={"belief": {"max_tokens": 64, "items": 2, "chars": 20}}).describe()
    assert capped["reply_limits"] == {"belief": {"max_tokens": 64, "items": 2, "chars": 20, "lists": {}}}
    assert plain["reply_limits"] is None and model_identity(capped) != model_identity(plain)
    with pytest.raises(ValueError, match="≥ 1"):
        LocalModel(reply_limits={"belief": {"max_tokens": 0, "items": 2, "chars": 20}})
    with pytest.raises(ValueError, match="≥ 1"):
        LocalModel(reply_limits={"compactor": {"max_tokens": 64, "chars": 0}})


def test_a_reply_types_limits_win_over_its_roles():
    """`BeliefDelta` replies get their own caps; other replies of the role keep the role's."""
    from pos_bench.pos.belief import BeliefDelta, BeliefInit

    capped = LocalModel(
        reply_limits={
            "belief": {"max_tokens": 64, "items": 2, "chars": 20},
            "BeliefDelta": {"max_tokens": 32, "items": 1, "chars": 20, "lists": {"epistemic_gaps": 2}},
        }
    )
    ask = {
        kind: Prompt(messages=(Message("user", "x"),), schema=kind.model_json_schema())
        for kind in (BeliefDelta, BeliefInit)
    }
    assert capped.limits_for(ask[BeliefDelta], "belief").items == 1
    assert capped.limits_for(ask[BeliefInit], "belief").items == 2
    assert capped.limits_for(Prompt(messages=(Message("user", "x"),)), "belief").items == 2
    assert capped.limits_for(ask[BeliefInit], "agent") is None
    assert capped.limits_for(ask[BeliefDelta], "belief").lists == {"epistemic_gaps": 2}
    assert capped.describe()["reply_limits"]["BeliefDelta"]["items"] == 1  # in the identity
    assert capped.describe()["reply_limits"]["BeliefDelta"]["lists"] == {"epistemic_gaps": 2}


@embedded
def test_reply_limits_apply_to_their_role_only(model):
    """The same prompt, asked as a capped role and as an uncapped one: only the capped reply is shortened."""
    capped = LocalModel(reply_limits={"belief": {"max_tokens": 40, "items": 1, "chars": 12}})
    prompt = Prompt(
        messages=(Message("user", "List every place in a big house, with a long note, as JSON."),),
        schema=Inventory.model_json_schema(),
        max_tokens=400,
    )
    short = capped.generate(prompt, role="belief")
    other = capped.generate(prompt, role="agent")
    assert short.usage.output_tokens <= 40 < other.usage.output_tokens
    assert other.text == model.generate(prompt, role="belief").text  # no limits set: nothing capped
    places = json.loads(short.text)["places"] if short.text.endswith("}") else []
    assert len(places) <= 1 and all(len(p["name"]) <= 12 for p in places)
    capped.close()


@embedded
def test_a_token_cap_alone_shortens_free_text_and_leaves_a_schema_to_the_models_own_bounds(model):
    """A role capped by `max_tokens` only (inspect's summary, `compactor`): its free-text reply ends at the cap,
    and a schema reply of that role keeps the model's own string and list bounds."""
    capped = LocalModel(max_string_chars=12, max_items=1, reply_limits={"compactor": {"max_tokens": 24}})
    summary = Prompt(
        messages=(Message("user", "Summarise a long day in a big house, room by room."),), max_tokens=400
    )
    short = capped.generate(summary, role="compactor")
    assert short.usage.output_tokens <= 24 < capped.generate(summary, role="agent").usage.output_tokens
    listed = Prompt(
        messages=(Message("user", "List every place in a big house, with a long note, as JSON."),),
        schema=Inventory.model_json_schema(),
        max_tokens=400,
    )
    reply = capped.generate(listed, role="compactor")
    places = json.loads(reply.text)["places"] if reply.text.endswith("}") else []
    assert len(places) <= 1 and all(len(p["name"]) <= 12 for p in places)
    assert capped.describe()["reply_limits"]["compactor"] == {
        "max_tokens": 24,
        "items": None,
        "chars": None,
        "lists": {},
    }
    capped.close()


@embedded
def test_its_own_server_is_reached_around_a_proxy_the_environment_names():
    """In a process of its own, as a run starts: urllib reads the proxies when it first opens a URL."""
    from tests.conftest import REPO
    from tests.proxies import NO_PROXY_VARIABLES, naming, recording_proxy

    code = (
        "from pos_bench.models.local import LocalModel\n"
        "from pos_bench.types import Message, Prompt\n"
        "print(LocalModel().count_tokens(Prompt(messages=(Message('user', 'kitchen'),))))\n"
    )
    with recording_proxy() as (proxy, seen):  # it answers no request
        env = {k: v for k, v in os.environ.items() if k not in NO_PROXY_VARIABLES} | naming(proxy)
        command = [sys.executable, "-c", code]
        done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, check=False)
    assert seen == []
    assert done.returncode == 0, done.stderr[-2000:]
    assert int(done.stdout) > 1


@embedded
def test_count_tokens_matches_what_a_call_evaluates(model):
    prompt = Prompt(messages=(Message("system", "Be brief."), Message("user", "kitchen " * 50)), max_tokens=1)
    assert model.count_tokens(prompt) == model.generate(prompt).usage.input_tokens
    assert isinstance(model, ContextLimited) and model.context_window == 8192
