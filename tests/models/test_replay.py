"""Record/replay for every provider kind through the runner: a recorded run replays with identical rows and
no model call, and a miss names the field of the key that differs from the nearest recorded request."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from pos_bench.models.cache import CacheMiss, key_differences
from pos_bench.models.roles import build_model
from pos_bench.runner import run
from pos_bench.types import Message, Prompt
from tests.models.stub_anthropic_server import StubAnthropic
from tests.models.stub_openai_server import PATIENT, StubOpenAI

PROMPT = Prompt((Message("system", "s"), Message("user", "Choose.\n- look\n- go to shelf 1")), max_tokens=32)


def config(tmp_path: Path, model: dict, *, n_tasks: int = 2, max_turns: int = 3) -> dict:
    return {
        "bench": {
            "_target_": "pos_bench.benchmarks.toy.ToyBenchmark",
            "n_tasks": n_tasks,
            "max_turns": max_turns,
        },
        "method": {"_target_": "baselines.raw.RawHistory", "_partial_": True},
        "model": model,
        "roles": {},
        # the stubs serve any model id; the endpoint check (which asks for the served ids) is not under test here
        "runner": {"n_jobs": 1, "backend": "threading", "progress": False, "check_endpoints": False},
        "cache": {"mode": "read_write", "path": str(tmp_path / "cache" / "responses.sqlite")},
        "retry": {"max_attempts": 2, "initial_wait": 0.01, "jitter": 0.0},
    }


def rows(run_dir: Path) -> dict[str, dict]:
    lines = [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]
    return {r["task_id"]: {k: v for k, v in r.items() if k != "seconds"} for r in lines}


def calls(run_dir: Path) -> list[dict]:
    found = []
    for path in sorted((run_dir / "episodes").rglob("events.jsonl")):
        found += [e for e in map(json.loads, path.read_text().splitlines()) if e["kind"] == "call"]
    return found


def record_then_replay(tmp_path: Path, node: dict, **sizes: int) -> tuple[Path, Path]:
    recorded, replayed = tmp_path / "recorded", tmp_path / "replayed"
    labels = {"bench": "toy", "method": "raw", "model": "m", "label": "smoke"}
    run(config(tmp_path, node, **sizes), recorded, labels)
    replay = {"_target_": "pos_bench.models.replay.Replayed", "run": str(recorded)}
    run(config(tmp_path, replay, **sizes), replayed, labels)
    return recorded, replayed


def assert_same_rows_from_the_cache(recorded: Path, replayed: Path) -> None:
    assert all(r["status"] == "done" for r in rows(recorded).values()), rows(recorded)
    assert rows(replayed) == rows(recorded)
    assert calls(replayed) and all(c["cached"] for c in calls(replayed))


def test_openai_compatible_recording_replays_with_the_server_gone(tmp_path):
    with StubOpenAI() as stub:
        node = {
            "_target_": "pos_bench.models.openai.OpenAIModel",
            "model": "stub-model",
            "base_url": f"{stub.url}/v1",
            "api_key_env": None,
            "timeout": PATIENT,
            "revision": "2026-01-01",
        }
        stub.fingerprint = "fp_1"
        recorded = tmp_path / "recorded"
        run(config(tmp_path, node), recorded, {"bench": "toy", "method": "raw", "model": "m"})
        sent = len(stub.requests)
    replay = {"_target_": "pos_bench.models.replay.Replayed", "run": str(recorded)}
    run(config(tmp_path, replay), tmp_path / "replayed", {"bench": "toy", "method": "raw", "model": "m"})
    assert sent > 0
    assert_same_rows_from_the_cache(recorded, tmp_path / "replayed")


def test_anthropic_recording_replays_with_the_server_gone(tmp_path):
    with StubAnthropic() as stub:
        node = {
            "_target_": "pos_bench.models.anthropic.AnthropicModel",
            "model": "claude-stub",
            "base_url": stub.url,
            "api_key_env": None,
            "timeout": PATIENT,
        }
        recorded = tmp_path / "recorded"
        run(config(tmp_path, node), recorded, {"bench": "toy", "method": "raw", "model": "m"})
    replay = {"_target_": "pos_bench.models.replay.Replayed", "run": str(recorded)}
    run(config(tmp_path, replay), tmp_path / "replayed", {"bench": "toy", "method": "raw", "model": "m"})
    assert_same_rows_from_the_cache(recorded, tmp_path / "replayed")


def test_embedded_recording_replays_without_loading_the_weights(tmp_path):
    pytest.importorskip("xllamacpp")
    node = {"_target_": "pos_bench.models.local.LocalModel", "max_tokens": 64}
    recorded, replayed = record_then_replay(tmp_path, node, n_tasks=1, max_turns=2)
    assert_same_rows_from_the_cache(recorded, replayed)


def test_an_embedded_context_overflow_replays_as_the_same_error_not_a_cache_miss(tmp_path):
    # What a long raw history on ALFWorld meets: llama.cpp refuses a request past its context, the episode
    # errors, and the replay must fail at the same request with the same row. The first prompt (about 280
    # tokens) fits, so the pre-flight context check lets the run start; the history outgrows it later.
    pytest.importorskip("xllamacpp")
    node = {"_target_": "pos_bench.models.local.LocalModel", "max_tokens": 64, "n_ctx": 300}
    recorded, replayed = record_then_replay(tmp_path, node, n_tasks=1, max_turns=12)
    (row,) = rows(recorded).values()
    assert row["status"] == "error" and row["error"].startswith("LocalRequestRefused: "), row
    assert "exceed" in row["error"]
    assert rows(replayed) == rows(recorded)


def miss(tmp_path: Path, prompt: Prompt, **change) -> str:
    cfg = {
        "model": {"_target_": "tests.models.test_cache.Echo", "temperature_sent": 0.0},
        "cache": {"mode": "read_write", "path": str(tmp_path / "cache.sqlite")},
    }
    recorded = build_model(cfg)
    recorded.generate(PROMPT)
    recorded.generate(PROMPT.extended(Message("assistant", "a"), Message("user", "next")))
    description = {**recorded.describe(), **change}
    (tmp_path / "run.json").write_text(json.dumps({"model": description}))
    replayed = build_model(
        {**cfg, "model": {"_target_": "pos_bench.models.replay.Replayed", "run": str(tmp_path)}}
    )
    with pytest.raises(CacheMiss) as raised:
        replayed.generate(prompt)
    return str(raised.value)


def test_a_miss_names_the_model_field_that_differs(tmp_path):
    text = miss(tmp_path, PROMPT, revision="2026-02-02")
    assert 'differs in: model.revision (recorded "<unset>", now "2026-02-02").' in text


def test_a_miss_names_the_message_that_differs(tmp_path):
    changed = PROMPT.extended(Message("assistant", "a"), Message("user", "nxet"))
    text = miss(tmp_path, changed)
    assert 'differs in: messages[3] (content differs at character 1: recorded "ext", now "xet").' in text


def test_key_differences_lists_budget_schema_and_message_count():
    a = {"model": {"m": 1}, "messages": [["user", "x"]], "schema": None, "max_tokens": 32}
    b = {**a, "messages": [["user", "x"], ["user", "y"]], "schema": {"type": "object"}, "max_tokens": 64}
    assert key_differences(a, b) == [
        'schema (recorded null, now {"type": "object"})',
        "max_tokens (recorded 32, now 64)",
        "messages (recorded 1, now 2)",
    ]
    assert key_differences(a, a) == []


PLANTED_KEY = "sk-planted-9f8e7d6c5b4a39281706"
PLANTED_PASSWORD = "hunter2-planted-password"


def test_a_copied_run_folder_replays_alone_and_holds_no_secret(tmp_path, monkeypatch):
    # Recorded in results root A with a key in the environment and a password in the endpoint's URL; the
    # folder is copied elsewhere, A (with its shared response cache) deleted, and the copy replayed in
    # results root B from another working directory with nothing but model.run.
    monkeypatch.setenv("TRAVEL_API_KEY", PLANTED_KEY)
    root_a, root_b, elsewhere = tmp_path / "A", tmp_path / "B", tmp_path / "elsewhere"
    labels = {"bench": "toy", "method": "raw", "model": "m"}
    with StubOpenAI() as stub:
        node = {
            "_target_": "pos_bench.models.openai.OpenAIModel",
            "model": "stub-model",
            "base_url": stub.url.replace("://", f"://user:{PLANTED_PASSWORD}@") + "/v1",
            "api_key_env": "TRAVEL_API_KEY",
            "timeout": PATIENT,
        }
        recorded = root_a / "toy" / "raw" / "m" / "run-1"
        run(config(root_a, node), recorded, labels)
        assert stub.requests
    copy = tmp_path / "shared-with-a-colleague" / "run-1"
    shutil.copytree(recorded, copy)
    shutil.rmtree(root_a)
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    replayed = root_b / "toy" / "raw" / "replay" / "run-1"
    run(config(root_b, {"_target_": "pos_bench.models.replay.Replayed", "run": str(copy)}), replayed, labels)
    assert_same_rows_from_the_cache(copy, replayed)
    assert (root_b / "cache" / "responses.sqlite").is_file() and not root_a.exists()
    for folder in (copy, replayed):
        for path in (p for p in folder.rglob("*") if p.is_file()):
            data = path.read_bytes()
            assert PLANTED_KEY.encode() not in data and PLANTED_PASSWORD.encode() not in data, path


def test_a_replay_answers_from_the_copy_even_when_a_cache_file_is_missing_entirely(tmp_path):
    # cache.mode=off: nothing but the copied folder can answer
    labels = {"bench": "toy", "method": "raw", "model": "m"}
    replies = [f'{{"thought": "step {i}", "action": "{a}"}}' for i, a in enumerate(["look", "inventory"] * 3)]
    scripted = {"_target_": "pos_bench.models.scripted.ScriptedModel", "replies": {"agent": replies}}
    recorded = tmp_path / "recorded"
    run({**config(tmp_path, scripted), "cache": {"mode": "off"}}, recorded, labels)
    copy = tmp_path / "copy"
    shutil.copytree(recorded, copy)
    shutil.rmtree(recorded)
    replay = {"_target_": "pos_bench.models.replay.Replayed", "run": str(copy)}
    replayed = tmp_path / "replayed"
    run({**config(tmp_path, replay), "cache": {"mode": "off"}}, replayed, labels)
    assert rows(replayed) == rows(copy)
    assert calls(replayed) and all(c["cached"] for c in calls(replayed))
    assert {c["reply"] for c in calls(replayed)} == {c["reply"] for c in calls(copy)}


@pytest.mark.parametrize("name", ["..", "../../etc", "/etc", "a/b", 7])
def test_an_index_that_points_outside_its_folder_is_refused(tmp_path, name):
    from pos_bench.models.replay import single_run

    (tmp_path / "index.json").write_text(json.dumps([{"folder": name}]))
    with pytest.raises(ValueError, match="is not the name of a run folder"):
        single_run(tmp_path)
