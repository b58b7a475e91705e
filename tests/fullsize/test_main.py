"""`scripts/bench_fullsize.py` (`python -m pos_bench.fullsize`) at small size, toy with two methods of two
episodes each: every figure it prints is computed from the sweep it played (the run folders, the stand-in's own
counts, the report it built)."""

from __future__ import annotations

import json
import os
import re
import statistics
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from pos_bench import events
from pos_bench.fullsize.processes import alive, descendants
from pos_bench.standin.service import CallCost, ServiceModel, service_bound
from tests.conftest import REPO

SPEED = 400.0


@pytest.fixture(scope="module")
def sweep(tmp_path_factory) -> tuple[str, Path]:
    root = tmp_path_factory.mktemp("fullsize")
    command = [
        sys.executable,
        "scripts/bench_fullsize.py",
        "bench=toy",
        "method=raw,pos",
        "bench.limit=2",
        "bench.max_turns=3",
        "--jobs=2",
        "--cores=2",
        "--backend=loky",
        "--sample-s=0.2",
        f"--standin=--tokens-per-s {SPEED:g}",
        f"--results={root}",
    ]
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout, root


def run_folder(root: Path, method: str) -> Path:
    (folder,) = (root / "toy" / method / "vllm").glob("*/run.json")
    return folder.parent


def calls_of(folder: Path) -> list[list[events.Call]]:
    return [
        [e for e in events.read(p) if isinstance(e, events.Call)]
        for p in sorted(folder.glob("episodes/*/events.jsonl"))
    ]


def field(pattern: str, text: str) -> list[str]:
    found = re.search(pattern, text, flags=re.MULTILINE)
    assert found, f"{pattern!r} not in the printout:\n{text}"
    return list(found.groups())


def test_the_counts_are_the_sweeps(sweep):
    out, root = sweep
    folders = {m: run_folder(root, m) for m in ("raw", "pos")}
    calls = {m: calls_of(f) for m, f in folders.items()}
    total = sum(len(c) for episodes in calls.values() for c in episodes)
    hits = sum(e.cached for episodes in calls.values() for c in episodes for e in c)
    episodes, errors, printed, cached = field(
        r"(\d+) episodes, (\d+) errors, ([\d,]+) calls \(([\d,]+) from", out
    )
    assert (int(episodes), int(errors), int(printed.replace(",", "")), int(cached)) == (4, 0, total, hits)
    answered, requests = field(r"stand-in served ([\d,]+) of ([\d,]+) requests", out)
    assert int(answered) == int(requests) == total - hits


def test_the_run_table_is_the_stand_in_model_over_the_recorded_calls_and_the_recorded_span(sweep):
    out, root = sweep
    for method in ("raw", "pos"):
        episodes = calls_of(run_folder(root, method))
        chains = [
            [
                CallCost(c.usage.input_tokens, c.usage.cached_input_tokens, c.usage.output_tokens)
                for c in calls
                if not c.cached
            ]
            for calls in episodes
        ]
        times = [
            [e.time for e in events.read(p)] for p in run_folder(root, method).glob("episodes/*/events.jsonl")
        ]
        wall = max(max(t) for t in times) - min(min(t) for t in times)
        played = sum(
            e.cpu_seconds
            for p in run_folder(root, method).glob("episodes/*/events.jsonl")
            for e in events.read(p)
            if isinstance(e, (events.Reset, events.Step))
        )
        (row,) = field(rf"^toy/{method}\s+(.*)$", out)
        _, _, _, shown_wall, service, env, env_run, limit, ratio, _ = (float(cell) for cell in row.split())
        assert env_run == pytest.approx(played, abs=0.051)
        bound = service_bound(chains, 2, ServiceModel(tokens_per_s=SPEED))
        assert service == pytest.approx(bound, abs=0.051)
        assert shown_wall == pytest.approx(wall, abs=0.051)
        assert limit == pytest.approx(max(bound, env / 2), abs=0.051)
        assert ratio == pytest.approx(wall / max(bound, env / 2), rel=0.05, abs=0.011)


def test_transcript_bytes_and_the_report_are_measured_on_disk(sweep):
    out, root = sweep
    sizes = [
        sum(f.stat().st_size for f in folder.iterdir() if f.is_file())
        for folder in root.glob("toy/*/vllm/*/episodes/*")
    ]
    mean, largest = field(r"transcripts per episode: mean ([\d.]+) kB, max ([\d.]+) kB", out)
    assert float(mean) == pytest.approx(statistics.fmean(sizes) / 1e3, abs=0.051)
    assert float(largest) == pytest.approx(max(sizes) / 1e3, abs=0.051)
    (report_mb,) = field(r"report [\d.]+ s \(([\d.]+) MB\)", out)
    assert float(report_mb) == pytest.approx((root / "report.html").stat().st_size / 1e6, abs=0.0051)


def test_the_measured_side_of_the_estimate_is_each_runs_mean_per_episode(sweep):
    out, root = sweep
    for method in ("raw", "pos"):
        rows = [
            json.loads(line) for line in (run_folder(root, method) / "results.jsonl").read_text().splitlines()
        ]
        calls = statistics.fmean(sum(u["calls"] for u in row["usage"].values()) for row in rows)
        (measured,) = field(rf"^toy/{method}\s+[\d,.]+ → ([\d,.]+) \(", out)
        assert float(measured.replace(",", "")) == pytest.approx(calls, abs=0.51)


def test_an_estimate_that_fails_is_said_in_one_line_of_the_printout_its_traceback_on_stderr(capsys):
    from pos_bench.fullsize.printout import estimate_lines
    from pos_bench.fullsize.sweep import predicted_or_why

    prediction, why = predicted_or_why(["bench=toy", "method=no_such_method"], probe_tasks=1)
    assert prediction == {}
    assert "no_such_method" in why and "\n" not in why
    err = capsys.readouterr().err
    assert "Traceback" in err and "the estimate failed" in err
    (header, _) = estimate_lines([], prediction, why)
    assert header.endswith(f"the estimate failed before the sweep: {why}")


def test_memory_files_and_processes_come_from_samples(sweep):
    out, _ = sweep
    peak, first, last = field(
        r"driver RSS: peak (\d+) MB; while the first \d+ episodes ran (\d+) MB, the last \d+ (\d+) MB", out
    )
    assert 20 < int(peak) < 4000 and int(first) <= int(peak) and int(last) <= int(peak)
    files, early, late = field(
        r"open files: driver at most (\d+) \(at most (\d+) while .*?, (\d+) while", out
    )
    assert int(files) >= 3  # stdin, stdout, stderr at least
    assert 3 <= int(early) <= int(files) and 3 <= int(late) <= int(files)
    (left,) = field(r"left running 5 s after the sweep: (\d+)", out)
    assert left == "0"


def test_the_servers_an_episode_recorded_are_summed_per_run():
    from pos_bench.fullsize.printout import server_lines
    from pos_bench.fullsize.record import Run

    rows = (
        {"extras": {"servers": 5, "servers_rss_mb": 400.0}},
        {"extras": {"servers": 7, "servers_rss_mb": 600.0}},
    )
    (line,) = server_lines([Run(Path("."), "loca/raw", {}, rows, ())])
    assert (
        line == "servers per episode (loca/raw): 6.0 processes, RSS mean 500 MB, max 600 MB over 2 episodes"
    )
    assert server_lines([Run(Path("."), "toy/raw", {}, ({"extras": {}},), ())]) == []


def test_the_env_cpu_where_an_episode_played_leaves_out_the_benchmark_roles_calls_inside_its_steps(tmp_path):
    from pos_bench.fullsize.record import read_episode
    from pos_bench.transcript import Transcript

    log = Transcript(tmp_path / "events.jsonl")
    log.write(events.Reset(task={"id": "case-1"}, cpu_seconds=0.1))
    log.write(events.Call(role="agent", cpu_seconds=0.01))
    log.write(events.Call(role="benchmark_provider", cpu_seconds=0.02))  # asked inside the step
    log.write(events.Step(turn=0, action="ask", cpu_seconds=0.05))
    log.write(events.Call(role="benchmark_judge", cpu_seconds=0.3))  # at scoring, outside every step
    log.write(events.Score(score={"success": False}))
    log.close()
    assert read_episode(tmp_path).env_cpu == pytest.approx(0.1 + 0.05 - 0.02)


def test_a_methods_own_model_cpu_joins_the_limit_and_leaves_the_client_figure(tmp_path):
    from pos_bench.fullsize.printout import RunFigures
    from pos_bench.fullsize.record import EnvCost, read_episode
    from pos_bench.transcript import Transcript

    log = Transcript(tmp_path / "events.jsonl")
    log.write(events.Reset(task={"id": "game-1"}, cpu_seconds=0.1))
    log.write(events.Step(turn=0, action="look", cpu_seconds=0.05))
    log.write(events.Memory(turn=0, record={"embedding": {"calls": 2, "cpu_seconds": 0.25}}))
    log.write(events.Memory(turn=1, record={"embedding": {"calls": 1}}))  # an older transcript: no figure
    log.write(events.Memory(turn=2, record="a text record"))
    log.write(events.Score(score={"success": False}))
    log.close()
    assert read_episode(tmp_path).local_cpu == pytest.approx(0.25)

    figures = RunFigures(
        "alfworld/pace", 1, 0, 10, 0, wall=1.0, cpu=0.5, service=0.05, env=EnvCost(0.15, 1), cores=2
    )
    assert figures.limit == pytest.approx(0.075)
    with_local = replace(figures, local=0.25)
    assert with_local.limit == pytest.approx((0.15 + 0.25) / 2)
    assert with_local.client_ms_per_call == pytest.approx((0.5 - 0.15 - 0.25) / 10 * 1e3)


@pytest.mark.parametrize("backend", ["threading", "ray"])
def test_a_run_played_in_threads_has_no_env_run_figure_since_its_steps_cpu_holds_the_other_threads(
    tmp_path, backend
):
    from pos_bench.fullsize.printout import pace_lines, run_figures, run_table
    from pos_bench.fullsize.record import Run, read_episode
    from pos_bench.fullsize.sweep import Played
    from pos_bench.transcript import Transcript

    log = Transcript(tmp_path / "events.jsonl")
    log.write(events.Reset(task={"id": "toy-0"}, cpu_seconds=0.5))  # every thread's CPU while it ran
    log.write(events.Call(role="agent", cpu_seconds=0.2))
    log.write(events.Step(turn=0, action="look", cpu_seconds=0.5))
    log.write(events.Score(score={"success": False}))
    log.close()
    episode = read_episode(tmp_path)
    config = {
        "bench": {"_target_": "pos_bench.benchmarks.toy.ToyBenchmark"},
        "runner": {"n_jobs": 4},
        "model": {},
    }
    played = Played(1.0, 2.0, 0, (), (), "")

    def figures(runner: dict) -> object:
        run = Run(tmp_path, "toy/raw", {**config, "runner": runner}, ({"status": "done"},), (episode,))
        return run_figures(run, ServiceModel(), [], cores=2, env_sample=0)

    alone = figures({"n_jobs": 4, "backend": "loky"})
    assert alone.env_played == pytest.approx(1.0) and not alone.threaded
    threaded = figures({"n_jobs": 4, "backend": backend})
    assert threaded.threaded and threaded.env_played is None
    assert threaded.env_in_cpu == threaded.env.seconds  # the environments played again alone
    row, note = run_table([threaded])[1:]
    assert row.split()[7] == "-"
    assert "played in threads has no env_run" in note
    assert "inside the calls (Call.cpu_seconds) not per call" in pace_lines(played, [threaded], [episode])[1]
    assert "median 200.00 ms" in pace_lines(played, [alone], [episode])[1]


def test_sigterm_stops_the_stand_in_and_the_sweep_it_started(tmp_path):
    import signal
    import time

    command = [
        sys.executable,
        "scripts/bench_fullsize.py",
        "bench=toy",
        "method=raw",
        "bench.limit=4",
        "bench.max_turns=50",
        "--jobs=2",
        "--backend=threading",
        "--standin=--tokens-per-s 20",
        f"--results={tmp_path}",
    ]
    child = subprocess.Popen(command, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 120
    while time.time() < deadline and not list(tmp_path.glob("toy/raw/*/*/episodes/*/events.jsonl")):
        time.sleep(0.2)
    assert child.poll() is None, child.communicate()[1][-2000:]
    family = descendants(child.pid)
    assert len(family) >= 2  # the stand-in and the sweep
    child.send_signal(signal.SIGTERM)
    assert child.wait(timeout=180) == 128 + signal.SIGTERM
    time.sleep(1)
    assert alive(set(family)) == []


def test_the_stand_in_is_reached_around_a_proxy_the_environment_names(monkeypatch):
    import httpx2

    from pos_bench.fullsize.sweep import standin, standin_stats
    from pos_bench.models.transport import DeadlineTransport

    nobody = "http://127.0.0.1:9"  # no proxy listens there: a call sent to it would fail
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
        monkeypatch.setenv(name, nobody)
    monkeypatch.setenv("no_proxy", "gpu-host.example")
    with standin([f"--tokens-per-s={SPEED:g}"]) as url:
        assert standin_stats(url)["requests"] == 0  # urllib, as the check reads the stand-in's counts
        transport = DeadlineTransport(None, 1 << 20)  # the providers' transport, as a worker builds it
        assert transport.proxy_for(httpx2.URL(url)) is None
        assert transport.proxy_for(httpx2.URL("http://api.example.com/v1")) is not None
    assert os.environ["no_proxy"] == "gpu-host.example" and "NO_PROXY" not in os.environ
