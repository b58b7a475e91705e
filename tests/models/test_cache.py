"""Response cache: keys, modes, replay without a provider, sharing between threads."""

from __future__ import annotations

import json
import sqlite3
import threading
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pos_bench.models.cache import (
    CacheConfig,
    Cached,
    CacheError,
    CacheMiss,
    ResponseStore,
    canonical_json,
    canonical_request,
    request_key,
)
from pos_bench.models.local import LocalRequestRefused
from pos_bench.models.openai import OpenAIModel
from pos_bench.models.replay import Replayed
from pos_bench.models.retry import RequestRefused
from pos_bench.models.roles import build_model
from pos_bench.models.scripted import ScriptedModel
from pos_bench.types import Message, Prompt, Reply, Usage
from tests.models.stub_openai_server import PATIENT, StubOpenAI

PROMPT = Prompt((Message("system", "s"), Message("user", "Choose.\n- look\n- go to shelf 1")), max_tokens=32)


class Echo:
    """Answers with a counter, so a cached answer is told apart from a fresh one."""

    def __init__(self, **identity):
        self.identity = {"provider": "test", "model": "echo", **identity}
        self.name = "echo"
        self.calls = 0

    def describe(self):
        return self.identity

    def generate(self, prompt, *, role="agent"):
        self.calls += 1
        return Reply(f"answer {self.calls}", Usage(10, 2, 1))


class Unreachable(Echo):
    def generate(self, prompt, *, role="agent"):
        raise AssertionError("replay must not reach the provider")


def cached(model, tmp_path, mode="read_write"):
    return Cached(model, CacheConfig(mode=mode, path=str(tmp_path / "cache.sqlite")))


def test_read_write_answers_a_repeat_from_the_cache(tmp_path):
    echo = Echo()
    first = cached(echo, tmp_path).generate(PROMPT)
    again = cached(echo, tmp_path).generate(PROMPT)
    assert (first.text, first.cached) == ("answer 1", False)
    assert (again.text, again.cached, again.usage) == ("answer 1", True, Usage(10, 2, 1))
    assert echo.calls == 1


@pytest.mark.parametrize(
    "change",
    [
        {"model": "other"},
        {"temperature_sent": 0.7},
        {"runtime": "llama.cpp 2", "weights_sha256": "abc"},
    ],
)
def test_identity_fields_change_the_key(tmp_path, change):
    cached(Echo(), tmp_path).generate(PROMPT)
    other = Echo(**change)
    assert cached(other, tmp_path).generate(PROMPT).cached is False


@pytest.mark.parametrize(
    "prompt",
    [
        Prompt(PROMPT.messages[:1], max_tokens=32),
        Prompt(PROMPT.messages, max_tokens=64),
        Prompt(PROMPT.messages, schema={"type": "object"}, max_tokens=32),
    ],
)
def test_request_fields_change_the_key(tmp_path, prompt):
    cached(Echo(), tmp_path).generate(PROMPT)
    assert cached(Echo(), tmp_path).generate(prompt).cached is False


def test_operational_fields_do_not_change_the_key(tmp_path):
    cached(Echo(base_url="http://a:1/v1", api_key_env="A", timeout=5, max_concurrency=2), tmp_path).generate(
        PROMPT
    )
    moved = Echo(base_url="https://b/v1", api_key_env="B", timeout=60, max_concurrency=64)
    assert cached(moved, tmp_path).generate(PROMPT).cached is True


def test_replay_miss_raises_naming_the_request_and_never_calls_the_provider(tmp_path):
    cached(Echo(), tmp_path).generate(PROMPT)
    replay = cached(Unreachable(), tmp_path, mode="replay")
    assert replay.generate(PROMPT).text == "answer 1"
    with pytest.raises(CacheMiss, match=r"replay cache miss.*role belief.*'echo'.*go to shelf 1"):
        replay.generate(PROMPT.extended(Message("user", "go to shelf 1")), role="belief")


class Refuses(Echo):
    """Refuses every request, as a provider does one past its context."""

    def generate(self, prompt, *, role="agent"):
        self.calls += 1
        raise LocalRequestRefused(f"request {self.calls} exceeds the available context size")


def test_a_refused_request_is_recorded_and_refused_again_on_replay(tmp_path):
    refuses = Refuses()
    with pytest.raises(LocalRequestRefused, match="request 1 exceeds"):
        cached(refuses, tmp_path).generate(PROMPT)
    with pytest.raises(RequestRefused, match="request 1 exceeds") as again:
        cached(refuses, tmp_path).generate(PROMPT)
    assert refuses.calls == 1 and type(again.value).__name__ == "LocalRequestRefused"
    with pytest.raises(RequestRefused, match="request 1 exceeds") as replayed:
        cached(Unreachable(), tmp_path, mode="replay").generate(PROMPT)
    assert type(replayed.value).__name__ == "LocalRequestRefused"
    assert cached(Echo(), tmp_path).generate(PROMPT.extended(Message("user", "x"))).text == "answer 1"


def test_record_always_calls_and_overwrites(tmp_path):
    echo = Echo()
    cached(echo, tmp_path).generate(PROMPT)
    assert cached(echo, tmp_path, mode="record").generate(PROMPT).text == "answer 2"
    assert cached(echo, tmp_path).generate(PROMPT).text == "answer 2"


def test_off_and_uncacheable_models_leave_no_file(tmp_path):
    cached(Echo(), tmp_path, mode="off").generate(PROMPT)
    cached(ScriptedModel(), tmp_path).generate(PROMPT)
    assert not (tmp_path / "cache.sqlite").exists()


def test_threads_share_one_file(tmp_path):
    echo = Echo()
    prompts = [PROMPT.extended(Message("user", str(i % 5))) for i in range(40)]
    replies: list[Reply] = []
    lock = threading.Lock()

    def worker(chunk):
        for p in chunk:
            reply = cached(echo, tmp_path).generate(p)
            with lock:
                replies.append((p, reply.text))

    threads = [threading.Thread(target=worker, args=(prompts[i::4],)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(replies) == 40
    by_prompt: dict = {}
    for p, text in replies:
        by_prompt.setdefault(p.messages[-1].content, set()).add(text)
    assert all(len(texts) == 1 for texts in by_prompt.values())  # every worker saw the stored answer


def test_many_first_connections_to_a_new_file_all_succeed(tmp_path):
    """Workers that start together race to create the file and switch it to WAL; none may fail."""
    failures: list[str] = []

    def first_use(store: ResponseStore, i: int) -> None:
        try:
            store.put(str(i), "request", Reply("text", Usage(1, 1, 1)), overwrite=False)
        except sqlite3.Error as error:
            failures.append(repr(error))

    for trial in range(100):
        store = ResponseStore(tmp_path / f"fresh{trial}.sqlite")
        threads = [threading.Thread(target=first_use, args=(store, i)) for i in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert failures == [] and len(store) == 6


def test_replayed_takes_the_recorded_identity_from_run_json(tmp_path, monkeypatch):
    monkeypatch.setenv("PLANTED_KEY", "sk-planted-in-env")
    cfg = {
        "model": {"_target_": "tests.models.test_cache.Echo", "temperature_sent": 0.0},
        "cache": {"mode": "read_write", "path": str(tmp_path / "cache.sqlite")},
    }
    recorded = build_model(cfg)
    recorded.generate(PROMPT)
    (tmp_path / "run.json").write_text(json.dumps({"model": recorded.describe()}))
    replayed = build_model(
        {**cfg, "model": {"_target_": "pos_bench.models.replay.Replayed", "run": str(tmp_path)}}
    )
    assert replayed.generate(PROMPT) == Reply("answer 1", Usage(10, 2, 1), cached=True)
    assert replayed.describe()["replayed_from"] == str(tmp_path)
    with pytest.raises(CacheMiss, match=f"the run at {tmp_path} never made"):
        replayed.generate(PROMPT.extended(Message("user", "more")))


def test_replayed_needs_a_recorded_run(tmp_path):
    with pytest.raises(FileNotFoundError, match="model.run"):
        Replayed(str(tmp_path / "absent"))


def test_recorded_over_http_replays_with_the_server_gone(tmp_path, monkeypatch):
    key = "sk-planted-cache-key-42"
    monkeypatch.setenv("STUB_KEY", key)
    with StubOpenAI() as stub:
        live = OpenAIModel("stub-model", base_url=f"{stub.url}/v1", api_key_env="STUB_KEY", timeout=PATIENT)
        first = cached(live, tmp_path).generate(PROMPT)
    elsewhere = OpenAIModel("stub-model", base_url="http://127.0.0.1:9/v1", api_key_env="UNSET_VARIABLE")
    again = cached(elsewhere, tmp_path, mode="replay").generate(PROMPT)
    assert (again.text, again.usage) == (first.text, first.usage)
    assert all(key.encode() not in f.read_bytes() for f in tmp_path.iterdir())  # the WAL file included


def test_a_corrupt_cache_names_the_file_and_the_fix(tmp_path):
    path = tmp_path / "responses.sqlite"
    path.write_bytes(b"not a database at all" * 64)
    cached = Cached(Echo(), CacheConfig(mode="read_write", path=str(path)))
    with pytest.raises(CacheError, match=r"cannot be used .*mv .*cache.mode=off"):
        cached.generate(PROMPT)
    with pytest.raises(CacheError, match=str(path)):
        ResponseStore(path).check()


def test_a_locked_cache_is_found_by_the_check(tmp_path):
    path = tmp_path / "responses.sqlite"
    ResponseStore(path).check()
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(CacheError, match="locked by another process"):
            ResponseStore(path, timeout=0.2).check()
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    ResponseStore(path, timeout=0.2).check()


def test_stored_rows_are_redacted_and_a_lone_surrogate_is_storable(tmp_path):
    class Leaky(Echo):
        def generate(self, prompt, *, role="agent"):
            return Reply("key sk-secret-123456 \ud800", Usage(1, 1, 1))

    path = tmp_path / "responses.sqlite"
    cached = Cached(
        Leaky(),
        CacheConfig(mode="read_write", path=str(path)),
        redact=lambda t: t.replace("sk-secret-123456", "[x]"),
    )
    cached.generate(PROMPT)
    (text,) = sqlite3.connect(path).execute("SELECT text FROM responses").fetchone()
    assert text == "key [x] ?"


def test_replay_accepts_a_folder_that_holds_one_run(tmp_path):
    run_dir = tmp_path / "default-1234"
    run_dir.mkdir()
    (run_dir / "run.json").write_text(json.dumps({"model": {"provider": "openai", "model": "m"}}))
    (tmp_path / "index.json").write_text(json.dumps([{"folder": "default-1234"}]))
    assert Replayed(str(tmp_path)).describe()["replayed_from"] == str(run_dir)
    (tmp_path / "index.json").write_text(json.dumps([{"folder": "default-1234"}, {"folder": "other-5678"}]))
    with pytest.raises(ValueError, match="holds 2 runs"):
        Replayed(str(tmp_path))


def test_a_cached_reply_keeps_the_revision_the_server_reported(tmp_path, monkeypatch):
    monkeypatch.setenv("STUB_KEY", "sk-planted-cache-key-42")
    with StubOpenAI() as stub:
        stub.fingerprint = "fp_0412"
        live = OpenAIModel("stub-model", base_url=f"{stub.url}/v1", api_key_env="STUB_KEY", timeout=PATIENT)
        first = cached(live, tmp_path).generate(PROMPT)
    elsewhere = OpenAIModel("stub-model", base_url="http://127.0.0.1:9/v1", api_key_env="UNSET_VARIABLE")
    again = cached(elsewhere, tmp_path, mode="replay").generate(PROMPT)
    assert first.served == again.served == "stub-model fp_0412"
    assert again.cached and not first.cached


def test_a_cache_file_from_before_served_revisions_is_read_and_extended(tmp_path):
    path = tmp_path / "old.sqlite"
    with sqlite3.connect(path) as db:
        db.execute(
            "CREATE TABLE responses (key TEXT PRIMARY KEY, request TEXT NOT NULL, text TEXT NOT NULL, "
            "input_tokens INTEGER, output_tokens INTEGER, calls INTEGER, created REAL)"
        )
        db.execute("INSERT INTO responses VALUES ('old', '{}', 'kept', 1, 2, 1, 0.0)")
    store = ResponseStore(path)
    assert store.get("old") == Reply("kept", Usage(1, 2, 1), cached=True, served=None)
    store.put("new", "{}", Reply("fresh", Usage(3, 4, 1), served="m rev2"), overwrite=False)
    assert store.get("new").served == "m rev2" and len(store) == 2


def test_trial_zero_keeps_the_key_of_old_caches_and_later_trials_get_their_own():
    model_identity = {"provider": "openai", "model": "m"}
    prompt = Prompt(messages=(Message("user", "hello"),), max_tokens=32)
    before_trials = json.dumps(  # the canonical request as it was written before trials existed
        {"model": model_identity, "messages": [["user", "hello"]], "schema": None, "max_tokens": 32},
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
    )
    keys = [request_key(canonical_request(model_identity, replace(prompt, trial=k))) for k in range(3)]
    assert keys[0] == request_key(before_trials)
    assert len(set(keys)) == 3


class PrefixCached(Echo):
    """A server that reports the prompt tokens its prefix cache served."""

    def generate(self, prompt, *, role="agent"):
        self.calls += 1
        return Reply(f"answer {self.calls}", Usage(10, 2, 1, cached_input_tokens=7, cache_write_tokens=3))


def test_the_server_reported_cached_token_counts_are_kept_and_replayed(tmp_path):
    model = cached(PrefixCached(), tmp_path)
    fresh = model.generate(PROMPT)
    assert not fresh.cached and fresh.usage == Usage(10, 2, 1, cached_input_tokens=7, cache_write_tokens=3)
    again = model.generate(PROMPT)
    # a replay gives the recorded account of the call, prefix-cache counts included, so its rows equal the
    # recording's (issue 30: record, then replay, the same rows)
    assert again.cached and again.text == fresh.text and again.usage == fresh.usage


@settings(max_examples=200, deadline=None)
@given(
    messages=st.lists(st.tuples(st.sampled_from(["system", "user", "assistant"]), st.text()), max_size=4),
    schema=st.none()
    | st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
        max_leaves=8,
    ),
    max_tokens=st.none() | st.integers(min_value=1, max_value=10**6),
    trial=st.integers(min_value=0, max_value=5),
)
def test_the_canonical_request_is_the_sorted_json_of_the_whole_request(messages, schema, max_tokens, trial):
    """Written in parts (the model's identity kept once per model), it is the text the cache keys were always
    taken from: the whole request as one JSON document, keys sorted, no spaces, text unescaped."""
    model_identity = {"provider": "openai", "model": "m", "sampling": {"temperature": 0.0, "seed": None}}
    prompt = Prompt(
        messages=tuple(Message(role, content) for role, content in messages),
        schema=schema if isinstance(schema, dict) else None,
        max_tokens=max_tokens,
        trial=trial,
    )
    whole = {
        "model": model_identity,
        "messages": [[m.role, m.content] for m in prompt.messages],
        "schema": prompt.schema,
        "max_tokens": prompt.max_tokens,
        **({"trial": trial} if trial else {}),
    }
    expected = json.dumps(whole, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert canonical_request(model_identity, prompt) == expected
    assert canonical_request(model_identity, prompt, identity_json=canonical_json(model_identity)) == expected
