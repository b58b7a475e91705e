"""The runner end to end against a remote model: the real `openai` SDK over HTTP to the loopback stub, with
faults injected, several episodes in flight, resume, retry of errored episodes, record and offline replay."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from pos_bench.runner import run
from pos_bench.runner.summary import format_notes
from pos_bench.transcript import episode_dir
from tests.models.stub_openai_server import IMPATIENT, PATIENT, StubOpenAI

KEY = "sk-planted-run-key-5f2e9c"
TASKS = [f"toy/{i:03d}" for i in range(6)]
DOOMED = "put a hot mug in cabinet."
"""The goal of toy/002, used to make the faults follow one episode."""


@pytest.fixture
def stub(monkeypatch):
    monkeypatch.setenv("STUB_RUN_KEY", KEY)
    with StubOpenAI() as server:
        yield server


def config(
    tmp_path: Path, model: dict, *, retry_errors: bool = False, cache_mode: str = "read_write"
) -> dict:
    return {
        "bench": {"_target_": "pos_bench.benchmarks.toy.ToyBenchmark", "n_tasks": 6, "max_turns": 4},
        "method": {"_target_": "baselines.raw.RawHistory", "_partial_": True},
        "model": model,
        "roles": {},
        "runner": {"n_jobs": 3, "backend": "threading", "retry_errors": retry_errors, "progress": False},
        "cache": {"mode": cache_mode, "path": str(tmp_path / "cache" / "responses.sqlite")},
        "retry": {"max_attempts": 3, "initial_wait": 0.01, "max_wait": 0.02, "jitter": 0.0},
    }


def openai_node(url: str, timeout: float = PATIENT) -> dict:
    return {
        "_target_": "pos_bench.models.openai.OpenAIModel",
        "model": "stub-model",
        "base_url": f"{url}/v1",
        "api_key_env": "STUB_RUN_KEY",
        "timeout": timeout,
        "max_concurrency": 2,
    }


def play(cfg: dict, run_dir: Path):
    return run(cfg, run_dir, {"bench": "toy", "method": "raw", "model": "remote", "label": "full"})


def results(run_dir: Path) -> dict[str, dict]:
    lines = [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]
    assert sorted(r["task_id"] for r in lines) == sorted({r["task_id"] for r in lines}), (
        "a task appears twice"
    )
    return {r["task_id"]: r for r in lines}


def events(run_dir: Path, task_id: str) -> list[dict]:
    path = episode_dir(run_dir, task_id) / "events.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


def without(record: dict, *keys: str) -> dict:
    return {k: v for k, v in record.items() if k not in keys}


def assert_no_key_in(*folders: Path) -> None:
    for folder in folders:
        for path in folder.rglob("*"):
            if path.is_file():
                assert KEY.encode() not in path.read_bytes(), f"the API key leaked into {path}"


def doomed_after_two_steps(body: dict) -> str | None:
    """Fail (500) every call of toy/002 once two steps are in its history: the episode dies mid-way."""
    user = body["messages"][-1]["content"]
    return "500" if DOOMED in user and user.count('"observation":') >= 2 else None


def test_faults_are_retried_and_every_episode_finishes(stub, tmp_path):
    stub.faults.push("429", "500", "hang", "malformed", "ok", "500", "429", "malformed")
    run_dir = tmp_path / "run"
    cfg = config(tmp_path, openai_node(stub.url, timeout=IMPATIENT))
    cfg["retry"]["max_attempts"] = 9  # more than the faults queued, whichever episode draws them
    summary = play(cfg, run_dir)
    done = results(run_dir)
    assert sorted(done) == TASKS and all(r["status"] == "done" for r in done.values())
    assert summary.errors == 0 and summary.usage["agent"].calls == sum(
        r["usage"]["agent"]["calls"] for r in done.values()
    )
    assert_no_key_in(tmp_path)


def test_an_episode_out_of_retries_fails_alone_and_resumes_from_the_cache(stub, tmp_path):
    run_dir = tmp_path / "run"
    stub.faults.rule = doomed_after_two_steps
    play(config(tmp_path, openai_node(stub.url)), run_dir)
    first = results(run_dir)
    assert first["toy/002"]["status"] == "error" and "failed 3 times" in first["toy/002"]["error"]
    others = {t: (first[t]["status"], first[t].get("error")) for t in TASKS if t != "toy/002"}
    assert all(status == "done" for status, _ in others.values()), others
    finished_events = {t: events(run_dir, t) for t in TASKS if t != "toy/002"}

    sent = len(stub.requests)
    play(config(tmp_path, openai_node(stub.url)), run_dir)  # plain resume: nothing left to play
    assert len(stub.requests) == sent and results(run_dir) == first

    stub.faults.rule = None
    play(config(tmp_path, openai_node(stub.url), retry_errors=True), run_dir)
    second = results(run_dir)
    assert sorted(second) == TASKS and all(r["status"] == "done" for r in second.values())
    assert {t: second[t] for t in finished_events} == {t: first[t] for t in finished_events}
    assert {
        t: events(run_dir, t) for t in finished_events
    } == finished_events  # finished episodes not replayed
    calls = [e for e in events(run_dir, "toy/002") if e["kind"] == "call"]
    assert [c["cached"] for c in calls[:2]] == [True, True] and calls[2][
        "cached"
    ] is False  # resumed mid-episode
    assert len(stub.requests) - sent == len(calls) - 2  # only the calls the first attempt never completed
    assert_no_key_in(tmp_path)


def comparable(run_dir: Path) -> tuple[dict, dict]:
    rows = {t: without(r, "seconds") for t, r in results(run_dir).items()}
    logs = {
        t: [without(e, "time", "seconds", "cpu_seconds", "cached") for e in events(run_dir, t)] for t in TASKS
    }
    return rows, logs


def test_a_recorded_run_replays_offline_bit_for_bit(stub, tmp_path, monkeypatch):
    recorded = tmp_path / "toy" / "raw" / "openai"
    live = openai_node(stub.url)
    play(config(tmp_path, live), recorded)
    assert stub.max_in_flight <= 2  # model.max_concurrency, with 3 episodes in flight
    stub.stop()
    monkeypatch.delenv("STUB_RUN_KEY")  # replay needs no key either

    replayed = tmp_path / "toy" / "raw" / "replay"
    replay_node = {"_target_": "pos_bench.models.replay.Replayed", "run": str(recorded)}
    play(config(tmp_path, replay_node), replayed)
    assert comparable(replayed) == comparable(recorded)
    assert all(e["cached"] for t in TASKS for e in events(replayed, t) if e["kind"] == "call")

    same_model = tmp_path / "toy" / "raw" / "openai_replay_mode"
    play(config(tmp_path, live, cache_mode="replay"), same_model)
    assert comparable(same_model) == comparable(recorded)
    assert_no_key_in(tmp_path)


def test_a_replay_miss_fails_loudly_and_names_the_request(stub, tmp_path):
    recorded = tmp_path / "recorded"
    play(config(tmp_path, openai_node(stub.url)), recorded)
    stub.stop()
    longer = config(tmp_path, {"_target_": "pos_bench.models.replay.Replayed", "run": str(recorded)})
    longer["bench"]["max_turns"] = 6  # the recording never made the calls of turns 5 and 6
    summary = play(longer, tmp_path / "replayed")
    missed = [r for r in results(tmp_path / "replayed").values() if r["status"] == "error"]
    assert missed and summary.errors == len(missed)
    assert all("CacheMiss: replay cache miss" in r["error"] and "role agent" in r["error"] for r in missed)


class EchoesTheKey(StubOpenAI):
    """A server that refuses the key and quotes it back in the 401 body, as some do."""

    def respond(self, path, body):
        return 401, self.error_body(f"Incorrect API key provided: {self.headers[-1].get('authorization')}")


def test_a_key_echoed_in_a_401_body_reaches_no_file(monkeypatch, tmp_path):
    monkeypatch.setenv("STUB_RUN_KEY", KEY)
    with EchoesTheKey() as server:
        summary = play(config(tmp_path, openai_node(server.url)), tmp_path / "run")
    # a 401 is a request the server refused before the model acted: `refused`, kept apart (failure ledger)
    rows = (tmp_path / "run" / "results.jsonl").read_text()
    assert summary.refused == 6 and rows.count("401") >= 6
    assert_no_key_in(tmp_path)
    written = [p.read_text(errors="replace") for p in (tmp_path / "run").rglob("*") if p.is_file()]
    assert sum("[redacted $STUB_RUN_KEY]" in text for text in written) >= 3  # the echo did reach the files


def test_a_revision_change_under_the_run_is_recorded_and_flagged(stub, tmp_path):
    from pos_bench.analysis.runs import load_run

    stub.fingerprint = "fp_old"
    cfg = config(tmp_path, openai_node(stub.url), cache_mode="off")
    cfg["runner"]["n_jobs"] = 1
    served = iter(["fp_old"] * 5 + ["fp_new"] * 100)
    original = stub.answer

    def answer(body: dict) -> str:
        stub.fingerprint = next(served)  # the endpoint's weights change after five calls
        return original(body)

    stub.answer = answer
    run_dir = tmp_path / "run"
    summary = play(cfg, run_dir)
    assert summary.served == ("stub-model fp_new", "stub-model fp_old")
    rows = results(run_dir)
    assert {s for r in rows.values() for s in r["served"]} == set(summary.served)
    calls = [e for e in events(run_dir, TASKS[0]) if e["kind"] == "call"]
    assert calls and all(e["served"].startswith("stub-model fp_") for e in calls)
    assert "served=2 revisions" in load_run(run_dir).flags
    assert "2 model revisions" in format_notes(summary)


def test_an_episode_past_runner_episode_timeout_is_an_error_row_and_the_others_finish(stub, tmp_path):
    stub.faults.hang_seconds = 20.0  # every request of the doomed episode hangs past the episode timeout
    stub.faults.rule = lambda body: "hang" if DOOMED in json.dumps(body) else None
    cfg = config(tmp_path, openai_node(stub.url, timeout=120.0), cache_mode="off")
    cfg["runner"] = {"n_jobs": 2, "backend": "threading", "progress": False, "episode_timeout": 5.0}
    cfg["retry"] = {"max_attempts": 1}
    started = time.monotonic()
    play(cfg, tmp_path / "run")
    took = time.monotonic() - started
    rows = results(tmp_path / "run")
    assert sorted(rows) == TASKS
    assert rows["toy/002"]["status"] == "error" and rows["toy/002"]["error"].startswith("EpisodeTimeout:")
    assert all(r["status"] == "done" for t, r in rows.items() if t != "toy/002"), rows
    assert took < 55, "the run waited for the hung request"
