import contextlib
import ctypes
import gc
import json
import os
import signal
import subprocess
import sys
import time
import weakref

import pytest
from filelock import FileLock

from pos_bench.protocols import MethodBase
from pos_bench.runner import RunLocked, run, shorter_gc_pauses
from pos_bench.runner.identity import RunMismatch
from pos_bench.runner.preflight import ConfigError
from pos_bench.runner.results import ResultsError, ResultsFile
from pos_bench.transcript import episode_dir
from tests.conftest import REPO

RAW = {"_target_": "baselines.raw.RawHistory", "_partial_": True}
EXPERT = {"_target_": "baselines.expert.Expert", "_partial_": True}


def config(method=EXPERT, n_tasks=4, limit=None, **runner):
    return {
        "bench": {
            "_target_": "pos_bench.benchmarks.toy.ToyBenchmark",
            "n_tasks": n_tasks,
            "limit": limit,
            "max_turns": 10,
        },
        "method": method,
        "model": {"_target_": "pos_bench.models.scripted.ScriptedModel"},
        "runner": {"n_jobs": 1, "backend": "threading", "progress": False, **runner},
        "roles": {},
        "expert": True,  # the toy oracle's plan, which ExplodesOnTask1 follows too
    }


def lines(path):
    return [json.loads(x) for x in path.read_text().splitlines()]


def test_run_writes_results_transcripts_and_summary(tmp_path):
    summary = run(config(n_jobs=2, backend="loky"), tmp_path, {"bench": "toy", "method": "expert"})
    assert summary.episodes == 4 and summary.success_rate == 1.0
    rows = lines(tmp_path / "results.jsonl")
    assert sorted(r["task_id"] for r in rows) == [f"toy/00{i}" for i in range(4)]
    assert all("report" not in r and "final_observation" not in r for r in rows)  # compact rows
    episode = episode_dir(tmp_path, "toy/000")
    full = json.loads((episode / "result.json").read_text())
    assert full["success"] is True and "report" in full and full["final_observation"]
    kinds = [json.loads(x)["kind"] for x in (episode / "events.jsonl").read_text().splitlines()]
    assert kinds[0] == "reset" and "step" in kinds and kinds[-1] == "score"
    saved = json.loads((tmp_path / "summary.json").read_text())
    assert saved["by_group"]["task_type"]["clean"] == 1.0
    meta = json.loads((tmp_path / "run.json").read_text())
    assert len(meta["identity"]["fingerprint"]) == 64


def test_only_a_run_that_calls_a_model_records_one(tmp_path):
    expert = run(
        config(n_tasks=1), tmp_path / "expert", {"bench": "toy", "method": "expert", "model": "scripted"}
    )
    meta = json.loads((tmp_path / "expert" / "run.json").read_text())
    assert meta["model"] == {} and meta["identity"]["settings"]["model"] is None
    assert meta["labels"]["model"] == expert.labels["model"] == "none"
    model = {
        "_target_": "pos_bench.models.scripted.ScriptedModel",
        "default": {"_target_": "pos_bench.models.scripted.schema_reply", "_partial_": True},
    }
    raw = {**config(method=RAW, n_tasks=1), "model": model, "expert": False}
    played = run(raw, tmp_path / "raw", {"bench": "toy", "method": "raw", "model": "scripted"})
    meta = json.loads((tmp_path / "raw" / "run.json").read_text())
    assert meta["model"]["provider"] == "scripted" and meta["identity"]["settings"]["model"]["describe"]
    assert meta["labels"]["model"] == played.labels["model"] == "scripted"


def test_rerun_resumes_without_replaying(tmp_path):
    run(config(n_tasks=6, limit=4), tmp_path, {})
    stamp = (episode_dir(tmp_path, "toy/001") / "result.json").stat().st_mtime_ns
    run(config(n_tasks=6), tmp_path, {})
    ids = [r["task_id"] for r in lines(tmp_path / "results.jsonl")]
    assert sorted(ids) == [f"toy/00{i}" for i in range(6)] and len(ids) == len(set(ids))
    assert (episode_dir(tmp_path, "toy/001") / "result.json").stat().st_mtime_ns == stamp


def test_other_settings_in_the_same_folder_are_refused_with_the_differing_keys(tmp_path):
    run(config(n_tasks=2), tmp_path, {})
    changed = config(n_tasks=2)
    changed["bench"]["max_turns"] = 3
    with pytest.raises(RunMismatch, match="bench.max_turns"):
        run(changed, tmp_path, {})
    assert len(lines(tmp_path / "results.jsonl")) == 2


def test_a_torn_last_line_is_moved_aside_with_a_warning_and_replayed(tmp_path, capsys):
    run(config(n_tasks=2), tmp_path, {})
    path = tmp_path / "results.jsonl"
    first, second = path.read_text().splitlines()
    path.write_text(first + "\n" + second[: len(second) // 2])
    run(config(n_tasks=2), tmp_path, {})
    assert sorted(r["task_id"] for r in lines(path)) == ["toy/000", "toy/001"]
    assert "cut off" in capsys.readouterr().err
    assert (tmp_path / "results.jsonl.torn").read_text() == second[: len(second) // 2]


def test_a_bad_line_or_a_duplicated_task_stops_the_run_naming_the_line(tmp_path):
    run(config(n_tasks=2), tmp_path, {})
    path = tmp_path / "results.jsonl"
    first, second = path.read_text().splitlines()
    path.write_text(first + "\nnot json\n" + second + "\n")
    with pytest.raises(ResultsError, match="line 2"):
        run(config(n_tasks=2), tmp_path, {})
    path.write_text(first + "\n" + second + "\n" + first + "\n")
    with pytest.raises(ResultsError, match="twice"):
        run(config(n_tasks=2), tmp_path, {})
    assert len(path.read_text().splitlines()) == 3  # nothing rewritten


class ExplodesOnTask1(MethodBase):
    def __init__(self, model):
        self.model = model

    def start(self, task, brief, first):
        if task.id == "toy/001" and not os.environ.get("POS_BENCH_TEST_DEFUSE"):
            raise RuntimeError("boom on purpose")

    def prompt(self, obs):
        from baselines.expert import Expert

        return Expert().prompt(obs)

    def update(self, step):
        return None


def test_an_exception_fails_one_episode_and_is_played_again_on_rerun(tmp_path, monkeypatch):
    method = {"_target_": "tests.runner.test_run.ExplodesOnTask1", "_partial_": True}
    summary = run(config(method, n_tasks=3), tmp_path, {})
    assert (summary.episodes, summary.errors, summary.successes) == (3, 1, 2)
    error = next(r for r in lines(tmp_path / "results.jsonl") if r["status"] == "error")
    assert "boom on purpose" in error["error"]
    assert summary.error_causes[0].cause == "RuntimeError: boom on purpose"
    assert summary.error_causes[0].example == "toy/001"
    events = (episode_dir(tmp_path, "toy/001") / "events.jsonl").read_text()
    assert "Traceback" in events
    run(config(method, n_tasks=3, retry_errors=False), tmp_path, {})
    assert len(lines(tmp_path / "results.jsonl")) == 3  # the old switch keeps errors as finished
    monkeypatch.setenv("POS_BENCH_TEST_DEFUSE", "1")
    summary = run(config(method, n_tasks=3), tmp_path, {})
    assert (summary.episodes, summary.errors, summary.successes) == (3, 0, 3)
    assert len(lines(tmp_path / "results.jsonl")) == 3


class DiesOnTask1(ExplodesOnTask1):
    """Kills its own worker process on one task, the way a segfault or the OOM killer would."""

    def start(self, task, brief, first):
        if task.id == "toy/001":
            if os.environ.get("POS_BENCH_TEST_DEATH") == "segv":
                ctypes.string_at(0)
            os.kill(os.getpid(), signal.SIGKILL)


@pytest.mark.parametrize("death", ["kill", "segv"])
def test_a_dead_worker_costs_only_its_episode(tmp_path, monkeypatch, death):
    monkeypatch.setenv("POS_BENCH_TEST_DEATH", death)
    method = {"_target_": "tests.runner.test_run.DiesOnTask1", "_partial_": True}
    summary = run(config(method, n_tasks=5, n_jobs=2, backend="loky"), tmp_path, {})
    rows = {r["task_id"]: r for r in lines(tmp_path / "results.jsonl")}
    assert len(rows) == 5 and summary.errors == 1 and summary.successes == 4
    signal_name = "SIGKILL" if death == "kill" else "SIGSEGV"
    assert rows["toy/001"]["status"] == "error" and signal_name in rows["toy/001"]["error"]
    assert (tmp_path / "summary.json").is_file()


class UnwritableReport(ExplodesOnTask1):
    def start(self, task, brief, first):
        pass

    def report(self):
        return {"seen": {"a", "b"}, "handle": object()}


def test_a_report_json_cannot_hold_is_still_written(tmp_path):
    method = {"_target_": "tests.runner.test_run.UnwritableReport", "_partial_": True}
    summary = run(config(method, n_tasks=2, n_jobs=2, backend="loky"), tmp_path, {})
    assert summary.errors == 0 and summary.successes == 2
    report = json.loads((episode_dir(tmp_path, "toy/000") / "result.json").read_text())["report"]
    assert report["seen"] == ["a", "b"] and report["handle"].startswith("<object")


class FailsAtTheEnd(ExplodesOnTask1):
    def start(self, task, brief, first):
        pass

    def update(self, step):
        if step.after is not None and step.after.done:
            raise RuntimeError("belief model down on the final step")

    def report(self):
        raise ValueError("export failed")


def test_terminal_phase_failures_keep_the_outcome_and_record_the_phase(tmp_path):
    method = {"_target_": "tests.runner.test_run.FailsAtTheEnd", "_partial_": True}
    summary = run(config(method, n_tasks=1), tmp_path, {})
    (row,) = lines(tmp_path / "results.jsonl")
    assert row["status"] == "done" and row["success"] is True and summary.successes == 1
    assert [(e["phase"], e["error_type"]) for e in row["context_errors"]] == [
        ("update", "RuntimeError"),
        ("export", "ValueError"),
    ]


def test_a_second_writer_on_the_same_folder_is_refused(tmp_path):
    tmp_path.mkdir(exist_ok=True)
    with FileLock(tmp_path / ".lock"), pytest.raises(RunLocked, match="another pos_bench process"):
        run(config(n_tasks=1), tmp_path, {})
    assert not (tmp_path / "results.jsonl").exists()


def test_a_config_error_stops_before_the_first_episode(tmp_path):
    cfg = config({**RAW, "windw": 3}, n_tasks=1)
    with pytest.raises(ConfigError, match="method.windw: not a setting of RawHistory"):
        run(cfg, tmp_path, {})
    assert not (tmp_path / "results.jsonl").exists()


def test_results_file_reads_back_records(tmp_path):
    run(config(n_tasks=1), tmp_path, {})
    (result,) = ResultsFile(tmp_path / "results.jsonl").read()
    assert result.task_id == "toy/000" and result.usage == {}


def run_results(root):
    """The results.jsonl of the one run folder under `root`/toy/raw/scripted (created by the command)."""
    found = sorted((root / "toy" / "raw" / "scripted").glob("*/results.jsonl"))
    return found[0] if found else root / "toy" / "raw" / "scripted" / "missing" / "results.jsonl"


def test_kill_minus_nine_then_resume_plays_each_episode_once(tmp_path, tmp_path_factory):
    cmd = [
        sys.executable,
        "-m",
        "pos_bench",
        "bench=toy",
        "bench.n_tasks=6",
        "bench.max_turns=4",
        "method=raw",
        "model=scripted",
        "model.delay=0.15",
        f"results_root={tmp_path}",
        "runner.progress=false",
    ]
    scratch = tmp_path_factory.mktemp("tmp")  # the run's budget folder, which a SIGKILL leaves behind
    proc = subprocess.Popen(
        cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
        env={**os.environ, "TMPDIR": str(scratch)},
    )  # fmt: skip
    deadline = time.time() + 120
    while time.time() < deadline and (
        not run_results(tmp_path).exists() or len(run_results(tmp_path).read_text().splitlines()) < 2
    ):
        time.sleep(0.1)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    results = run_results(tmp_path)
    finished = {r["task_id"]: r for r in lines(results)}
    assert 2 <= len(finished) < 6
    stamps = {t: (episode_dir(results.parent, t) / "result.json").stat().st_mtime_ns for t in finished}
    subprocess.run(cmd, cwd=REPO, check=True, capture_output=True, timeout=300)
    ids = [r["task_id"] for r in lines(results)]
    assert sorted(ids) == [f"toy/00{i}" for i in range(6)]
    for task_id, stamp in stamps.items():
        assert (episode_dir(results.parent, task_id) / "result.json").stat().st_mtime_ns == stamp


def test_a_price_table_gives_cost_per_role(tmp_path):
    cfg = config(RAW, n_tasks=1)
    cfg["model"] = {
        "_target_": "pos_bench.models.scripted.ScriptedModel",
        "default": '{"thought": "", "action": "look"}',
    }
    cfg["prices"] = {"default": {"input_per_mtok": 2.0, "output_per_mtok": 10.0}}
    summary = run(cfg, tmp_path, {})
    usage = summary.usage["agent"]
    expected = (usage.input_tokens * 2.0 + usage.output_tokens * 10.0) / 1e6
    assert summary.cost == {"agent": expected} and expected > 0
    assert run(config(RAW, n_tasks=1), tmp_path / "free", {}).cost == {}


def children_of(pid: int) -> set[int]:
    """The processes below `pid`: its children (the fork server, resource trackers) and theirs (the workers)."""
    kids = set()
    for task in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{task}/children") as f:
            kids.update(int(x) for x in f.read().split())
    for kid in list(kids):
        with contextlib.suppress(OSError):
            kids |= children_of(kid)
    return kids


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] != "Z"
    except FileNotFoundError:
        return False


def test_workers_do_not_outlive_a_killed_run(tmp_path, tmp_path_factory):
    cmd = [
        sys.executable,
        "-m",
        "pos_bench",
        "bench=toy",
        "bench.n_tasks=8",
        "bench.max_turns=6",
        "method=raw",
        "model=scripted",
        "model.delay=0.3",
        f"results_root={tmp_path}",
        "runner.progress=false",
        "runner.n_jobs=2",
        "runner.backend=loky",
    ]
    scratch = tmp_path_factory.mktemp("tmp")  # the run's budget folder, which a SIGKILL leaves behind
    proc = subprocess.Popen(
        cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
        env={**os.environ, "TMPDIR": str(scratch)},
    )  # fmt: skip
    deadline = time.time() + 120
    while time.time() < deadline and (
        not run_results(tmp_path).exists() or len(run_results(tmp_path).read_text().splitlines()) < 2
    ):
        time.sleep(0.1)
    results = run_results(tmp_path)
    workers = children_of(proc.pid)
    assert workers
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    deadline = time.time() + 15
    while time.time() < deadline and any(alive(p) for p in workers):
        time.sleep(0.2)
    survivors = [p for p in workers if alive(p)]
    for p in survivors:
        os.kill(p, signal.SIGKILL)
    assert survivors == []
    subprocess.run(cmd, cwd=REPO, check=True, capture_output=True, timeout=300)
    ids = [r["task_id"] for r in lines(results)]
    assert sorted(ids) == [f"toy/00{i}" for i in range(8)]


def test_the_expert_on_a_benchmark_without_one_stops_before_any_episode(tmp_path):
    cfg = {**config(), "bench": {"_target_": "pos_bench.benchmarks.loca.mini.benchmark.LocaBenchmark"}}
    with pytest.raises(
        ValueError, match="LocaBenchmark has none: the expert runs on bench=alfworld and bench=toy"
    ):
        run(cfg, tmp_path, {})
    assert not (tmp_path / "results.jsonl").exists() or not (tmp_path / "results.jsonl").read_text()


RCA_QUERIES = [{"name": n, "arguments": {}} for n in ("get_data_overview", "get_alerts", "list_metric_names")]


def rca_config(default: str, **loop):
    return {
        "bench": {
            "_target_": "pos_bench.benchmarks.rca.benchmark.RCABenchmark",
            "source": "synthetic",
            "n_synthetic": 1,
            "max_turns": 2,
        },
        "method": RAW,
        "model": {"_target_": "pos_bench.models.scripted.ScriptedModel", "default": default},
        "runner": {"n_jobs": 1, "backend": "threading", "progress": False},
        "roles": {},
        "loop": loop,
    }


def test_three_tool_calls_a_turn_on_rca_synthetic_are_two_turns_and_six_steps(tmp_path):
    reply = json.dumps({"thought": "batch", "actions": RCA_QUERIES})
    summary = run(rca_config(reply), tmp_path, {})
    (row,) = lines(tmp_path / "results.jsonl")
    assert (row["turns"], row["steps"], row["status"]) == (2, 6, "done")
    assert summary.mean_steps == 6
    budget = json.loads((tmp_path / "run.json").read_text())["retry_budget"]
    assert budget == {
        "missing_action_retries": 1,
        "on_json_exhausted": "error",
        "on_action_exhausted": "spend_turn",
    }


@pytest.mark.parametrize("policy", ["error", "spend_turn"])
def test_unreadable_replies_error_the_episode_or_spend_turns_as_configured(tmp_path, policy):
    run(rca_config("I cannot answer in JSON.", on_json_exhausted=policy), tmp_path, {})
    (row,) = lines(tmp_path / "results.jsonl")
    assert json.loads((tmp_path / "run.json").read_text())["retry_budget"]["on_json_exhausted"] == policy
    if policy == "error":
        assert row["status"] == "error" and "UnusableReply" in row["error"]
    else:
        assert (row["status"], row["spent_turns"], row["steps"]) == ("done", 2, 0)


def test_peak_and_dependency_per_episode_and_in_the_summary_table(tmp_path):
    from pos_bench.runner.summary import format_table

    summary = run(config(method=RAW, n_tasks=2, progress=False), tmp_path, {"bench": "toy"})
    rows = lines(tmp_path / "results.jsonl")
    for row in rows:
        folder = episode_dir(tmp_path, row["task_id"])
        calls = [json.loads(x) for x in (folder / "events.jsonl").read_text().splitlines()]
        inputs = [c["usage"]["input_tokens"] for c in calls if c["kind"] == "call" and c["role"] == "agent"]
        assert row["peak_input_tokens"] == max(inputs) > 0 and row["dependency_m"] > 0
    assert summary.mean_peak_input_tokens == sum(r["peak_input_tokens"] for r in rows) / 2
    header = format_table([summary]).splitlines()[0].split()
    assert "peak" in header and "dependency_m" in header


def test_a_bad_retry_policy_stops_the_run_before_any_episode(tmp_path):
    from pos_bench.runner.preflight import ConfigError

    with pytest.raises(ConfigError, match="on_json_exhausted"):
        run(rca_config("{}", on_json_exhausted="retry_forever"), tmp_path, {})
    assert not (tmp_path / "results.jsonl").exists()


class _Node:
    def __init__(self):
        self.me = self  # a reference cycle: only the collector frees it


def test_while_episodes_run_older_objects_are_frozen_and_new_garbage_is_still_collected():
    gc.collect()
    before = gc.get_freeze_count()
    with shorter_gc_pauses():
        assert gc.get_freeze_count() > before
        made = _Node()
        gone = weakref.ref(made)
        del made
        gc.collect()
        assert gone() is None
    assert gc.get_freeze_count() == 0  # nothing stays out of collections after the run


def test_a_process_that_froze_objects_itself_keeps_them_frozen():
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        with shorter_gc_pauses():
            pass
        # an unfreeze would empty the permanent generation; a frozen object freed meanwhile by another thread
        # of the test process (a stub server from an earlier test) may lower the count by a few
        assert gc.get_freeze_count() > 0.99 * frozen
    finally:
        gc.unfreeze()
