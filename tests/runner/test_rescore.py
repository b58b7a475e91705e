"""Re-scoring a finished ClinDiag run from its transcripts with another judge: a real `python -m pos_bench` run
judged by rules, then `python -m pos_bench.runner.rescore` with an LLM judge served by a loopback OpenAI-compatible
stub. No episode is played again and the policy is never called."""

import json
import os
import shutil
import subprocess
import sys

import pytest

from pos_bench.benchmarks.clindiag.judge import JUDGE_RULES
from pos_bench.runner.rescore import merged
from tests.conftest import REPO
from tests.models.stub_openai_server import StubOpenAI

SUBMISSION = {
    "thought": "scripted",
    "action": {
        "name": "submit_diagnosis",
        "arguments": {"final_diagnosis": "Imaginary syndrome of fixtures", "diagnostic_reasoning": "none"},
    },
}


def scripted_judge(body):
    """The LLM judge's stand-in: every submission is judged correct, with a reason naming the judge."""
    return json.dumps({"diagnosis_correct": True, "differential_hit": False, "reason": "stub judge"})


def python(*args, env):
    return subprocess.run(
        [sys.executable, *args], check=False, capture_output=True, text=True, cwd=REPO, env=env, timeout=600
    )


def played_run(results_root, env, *, limit: int, threads: bool = False):
    """A rules-judged ClinDiag run of the scripted model's one submission; its run folder."""
    backend = ["runner.backend=threading"] if threads else []
    played = python(
        "-m",
        "pos_bench",
        "bench=clindiag",
        f"bench.limit={limit}",
        "method=raw",
        "model=scripted",
        f"model.default='{json.dumps(SUBMISSION)}'",
        *backend,
        "runner.progress=false",
        "cache.mode=off",
        f"results_root={results_root}",
        env=env,
    )
    assert played.returncode == 0, played.stderr
    (run_dir,) = [p.parent for p in results_root.glob("clindiag/raw/scripted/*/summary.json")]
    return run_dir


@pytest.fixture()
def env(shared, tmp_path):
    return {
        **os.environ,
        "CLINDIAG_DATA": str(shared / "benchmarks" / "clindiag"),
        "HOME": str(tmp_path),
        "XDG_CACHE_HOME": os.environ.get("XDG_CACHE_HOME", str(tmp_path / "cache")),
    }


def test_a_rules_judged_run_is_judged_again_by_an_llm_judge_without_replaying(tmp_path, env):
    results_root = tmp_path / "results"
    run_dir = played_run(results_root, env, limit=3, threads=True)
    before = json.loads((run_dir / "summary.json").read_text())
    run_meta = json.loads((run_dir / "run.json").read_text())
    assert before["labels"]["judge"] == run_meta["labels"]["judge"] == "rules"
    assert before["episodes"] == 3 and before["success_rate"] == 0.0
    events_before = {p: p.read_text() for p in run_dir.glob("episodes/*/events.jsonl")}

    with StubOpenAI(answer=scripted_judge) as stub:
        rescored = python(
            "-m",
            "pos_bench.runner.rescore",
            str(run_dir),
            "bench.judge=llm",
            "+model@roles.benchmark_judge=openai",
            f"roles.benchmark_judge.base_url={stub.url}/v1",
            "roles.benchmark_judge.model=stub-judge",
            "roles.benchmark_judge.api_key_env=null",
            "roles.benchmark_judge.response_mode=json_object",
            env=env,
        )
        requests = list(stub.requests)
    assert rescored.returncode == 0, rescored.stderr
    assert "stub-judge" in rescored.stdout
    after = json.loads((run_dir / "summary.judge=stub-judge.json").read_text())
    assert after["labels"]["judge"] == "stub-judge" and after["labels"]["scored_from"] == "events.jsonl"
    assert after["episodes"] == 3 and after["success_rate"] == 1.0
    assert json.loads((run_dir / "summary.json").read_text()) == before  # the old summary is kept as it was
    # One judge request per submitted episode, and nothing else reached any model.
    assert len(requests) == 3
    assert all(r["messages"][0]["content"] == JUDGE_RULES for r in requests)
    calls = [
        json.loads(line)
        for path in run_dir.glob("episodes/*/rescore.judge=stub-judge.jsonl")
        for line in path.read_text().splitlines()
    ]
    assert [c["role"] for c in calls if c["kind"] == "call"] == ["benchmark_judge"] * 3
    assert {p: p.read_text() for p in run_dir.glob("episodes/*/events.jsonl")} == events_before
    rows = [json.loads(x) for x in (run_dir / "results.judge=stub-judge.jsonl").read_text().splitlines()]
    old_rows = [json.loads(x) for x in (run_dir / "results.jsonl").read_text().splitlines()]
    assert [r["usage"]["agent"] for r in rows] == [r["usage"]["agent"] for r in old_rows]
    assert all(r["usage"]["benchmark_judge"]["calls"] == 1 for r in rows)
    assert all(r["extras"]["rules_diagnosis_correct"] is False for r in rows)


def test_an_llm_judge_without_a_fixed_model_stops_the_run_before_any_episode(tmp_path, env):
    results_root = tmp_path / "results"
    refused = python(
        "-m",
        "pos_bench",
        "bench=clindiag",
        "bench.judge=llm",
        "model=scripted",
        f"results_root={results_root}",
        env=env,
    )
    assert refused.returncode == 2
    message = [line for line in refused.stderr.splitlines() if line.startswith("error:")]
    assert len(message) == 1 and "roles.benchmark_judge" in message[0] and "clindiag_paper" in message[0]
    assert not list(results_root.glob("**/episodes"))


def test_new_overrides_replace_recorded_ones_of_the_same_key():
    recorded = ["bench=clindiag", "++bench.limit=3", "++bench.judge=rules", "hydra.run.dir=x"]
    assert merged(recorded, ["bench.judge=llm", "+model@roles.benchmark_judge=qwen"]) == [
        "bench=clindiag",
        "++bench.limit=3",
        "++bench.judge=llm",
        "+model@roles.benchmark_judge=qwen",
    ]


def test_the_old_command_name_still_works_and_names_the_new_one():
    out = subprocess.run(
        [sys.executable, "-m", "pos_bench.rescore"], cwd=REPO, capture_output=True, text=True, check=False
    )
    assert out.returncode == 2 and "pos_bench.runner.rescore RUN_DIR" in out.stdout
    assert out.stderr.strip() == "note: the command is now `python -m pos_bench.runner.rescore`"


def without_paths(text: str, *folders) -> str:
    for folder in folders:
        text = text.replace(str(folder), "<run>")
    return text


def test_a_copied_run_is_rescored_and_tabled_as_the_original(tmp_path, env):
    # The copy is a lone run folder (no index.json beside it) whose results root is deleted before it is read.
    results_root = tmp_path / "A"
    original = played_run(results_root, env, limit=2)
    on_original = python("-m", "pos_bench.runner.rescore", str(original), env=env)
    tables_original = python("scripts/tables.py", str(original), env=env)
    assert on_original.returncode == 0 and tables_original.returncode == 0, on_original.stderr
    copy = tmp_path / "elsewhere" / original.name
    shutil.copytree(original, copy)
    shutil.rmtree(results_root)
    on_copy = python("-m", "pos_bench.runner.rescore", str(copy), env=env)
    tables_copy = python("scripts/tables.py", str(copy), env=env)
    assert on_copy.returncode == 0, on_copy.stderr
    assert "clindiag" in on_copy.stdout and "episodes" in on_copy.stdout
    assert without_paths(on_copy.stdout, copy) == without_paths(on_original.stdout, original)
    assert "clindiag" in tables_copy.stdout and tables_copy.stdout == tables_original.stdout
    assert not results_root.exists()


def test_recorded_overrides_come_from_run_json_without_the_recording_machines_places(tmp_path):
    from pos_bench.runner.rescore import recorded_overrides

    run_dir = tmp_path / "root" / "toy" / "raw" / "scripted" / "run-1"
    run_dir.mkdir(parents=True)
    places = [f"results_root={tmp_path / 'root'}", "++cache.path=/lab/c.sqlite", "report=r.html"]
    command = ["bench=clindiag", "++bench.limit=2", *places]
    (run_dir / "run.json").write_text(json.dumps({"overrides": command}))
    assert recorded_overrides(run_dir) == command  # still where it was recorded: as it was
    copy = tmp_path / "elsewhere" / "run-1"
    shutil.copytree(run_dir, copy)
    assert recorded_overrides(copy) == ["bench=clindiag", "++bench.limit=2"]
    (copy / "run.json").write_text(json.dumps({}))  # an older run: its index.json entry
    (copy.parent / "index.json").write_text(json.dumps([{"folder": "run-1", "overrides": ["bench=toy"]}]))
    assert recorded_overrides(copy) == ["bench=toy"]


@pytest.mark.parametrize("damage", ["emptied", "deleted", "not utf-8", "cut short", "not json"])
def test_a_missing_or_damaged_transcript_is_an_error_row_never_a_result(damage, tmp_path, env):
    results_root = tmp_path / "results"
    run_dir = played_run(results_root, env, limit=2, threads=True)
    rows_before = (run_dir / "results.jsonl").read_text()
    damaged, intact = sorted(run_dir.glob("episodes/*/events.jsonl"))
    text = damaged.read_text()
    if damage == "emptied":
        damaged.write_text("")
    elif damage == "deleted":
        damaged.unlink()
    elif damage == "not utf-8":
        damaged.write_bytes(text.encode()[:40] + b"\xff\xfe\xfd" + text.encode()[40:])
    elif damage == "cut short":
        damaged.write_text("".join(text.splitlines(keepends=True)[:1]))
    else:
        damaged.write_text(text.replace("\n", "\n}{garbage\n", 1))
    rescored = python("-m", "pos_bench.runner.rescore", str(run_dir), env=env)
    assert rescored.returncode == 1, rescored.stdout + rescored.stderr
    assert str(damaged) in rescored.stderr and "Traceback" not in rescored.stderr
    (new_rows,) = run_dir.glob("results.*.jsonl")
    rows = {json.loads(x)["task_id"]: json.loads(x) for x in new_rows.read_text().splitlines()}
    broken = [r for r in rows.values() if r["status"] == "error"]
    assert len(broken) == 1 and str(damaged) in broken[0]["error"]
    assert [r["status"] for r in rows.values()].count("done") == 1  # the intact episode is scored as before
    assert (run_dir / "results.jsonl").read_text() == rows_before  # the original rows are kept
    assert intact.exists()
