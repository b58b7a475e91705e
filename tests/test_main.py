"""The command line: compose, run, print; resume; sweeps; clear errors on bad choices and values."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import REPO


def cli(*args, check=True, env=None):
    return subprocess.run(
        [sys.executable, "-m", "pos_bench", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=check,
        timeout=300,
        env=env,
    )


def runs(root, choices):
    """The run folders under `<root>/<bench>/<method>/<model>/`, from its index."""
    index = root / choices / "index.json"
    return [root / choices / e["folder"] for e in json.loads(index.read_text())] if index.exists() else []


def only_run(root, choices):
    (folder,) = runs(root, choices)
    return folder


def test_run_prints_the_summary_table(tmp_path):
    out = cli(
        "bench=toy", "method=expert", "model=scripted", f"results_root={tmp_path}", "runner.progress=false"
    )
    assert "100.0%" in out.stdout and "expert" in out.stdout
    summary = json.loads((only_run(tmp_path, "toy/expert/scripted") / "summary.json").read_text())
    # the expert calls no model, so neither the model label nor the scripted double's `test` label applies
    assert summary["labels"] == {"bench": "toy", "method": "expert", "model": "none", "label": "full"}
    assert summary["episodes"] == 8


def test_overrides_compose(tmp_path):
    out = cli(
        "bench=toy",
        "bench.limit=2",
        "bench.start=3",
        "method=expert",
        "model=scripted",
        "runner.n_jobs=2",
        f"results_root={tmp_path}",
        "runner.progress=false",
    )
    rows = (only_run(tmp_path, "toy/expert/scripted") / "results.jsonl").read_text().splitlines()
    assert sorted(json.loads(x)["task_id"] for x in rows) == ["toy/003", "toy/004"]
    # two worker processes (loky) ended normally: no leaked-semaphore warning, no traceback
    assert "leaked" not in out.stderr and "Traceback" not in out.stderr


def test_keys_a_user_is_told_to_set_need_no_plus(tmp_path):
    cli(
        "bench=toy",
        "bench.limit=1",
        "method=raw",
        "model=scripted",
        "model.delay=0",
        "retry.max_attempts=2",
        "prices.default.input_per_mtok=1",
        "prices.default.output_per_mtok=2",
        f"results_root={tmp_path}",
        "runner.progress=false",
    )
    summary = json.loads((only_run(tmp_path, "toy/raw/scripted") / "summary.json").read_text())
    assert summary["cost"]["agent"] > 0


def test_changed_settings_get_their_own_run_folder_and_n_jobs_does_not(tmp_path):
    base = ["bench=toy", "bench.limit=1", "method=expert", "model=scripted", f"results_root={tmp_path}"]
    cli(*base, "bench.max_turns=5", "runner.progress=false")
    cli(*base, "bench.max_turns=5", "runner.progress=false", "runner.n_jobs=2")
    assert len(runs(tmp_path, "toy/expert/scripted")) == 1
    cli(*base, "bench.max_turns=6", "runner.progress=false")
    folders = runs(tmp_path, "toy/expert/scripted")
    assert len(folders) == 2 and folders[0].name.startswith("max_turns-5-")
    index = json.loads((tmp_path / "toy/expert/scripted/index.json").read_text())
    assert index[1]["differs_from"][0]["differs_in"] == ["bench.max_turns"]
    for folder in folders:
        assert len((folder / "results.jsonl").read_text().splitlines()) == 1


@pytest.mark.parametrize(
    "choice", ["method=no_such_method", "method=raw,no_such_method", "+experiment=no_such_method"]
)
def test_a_bad_choice_exits_2_with_one_line_naming_the_valid_ones(tmp_path, choice):
    args = ["-m"] if "," in choice else []
    out = cli(*args, "bench=toy", choice, f"results_root={tmp_path}", check=False)
    assert out.returncode == 2
    assert len(out.stderr.strip().splitlines()) == 1 and "no_such_method: no such choice" in out.stderr
    options = "quickstart" if "experiment" in choice else "expert"
    assert options in out.stderr and "Traceback" not in out.stderr


@pytest.mark.parametrize(
    ("override", "expected"),
    [
        ("runner.n_jobs=0", "runner.n_jobs must be a positive number"),
        ("runner.n_jobs=abc", "runner.n_jobs='abc': Input should be a valid integer"),
        ("bench.limit=abc", "bench.limit='abc': Input should be a valid integer"),
        ("bench.limit=1.5", "bench.limit=1.5: Input should be a valid integer"),
        ("method.windw=3", "method.windw: not a setting of Expert"),
        ("model.delay=nan", "model.delay=nan: not a finite number"),
        ("runner.episode_timeout=nan", "runner.episode_timeout=nan: not a finite number"),
        ("runner.episode_timeout=inf", "runner.episode_timeout=inf: not a finite number"),
        ("bench.limit=-inf", "bench.limit=-inf: not a finite number"),
    ],
)
def test_a_bad_value_stops_before_the_first_episode_naming_the_key(tmp_path, override, expected):
    out = cli(
        "bench=toy", "method=expert", "model=scripted", override, f"results_root={tmp_path}", check=False
    )
    assert out.returncode == 2 and expected in out.stderr
    assert "Traceback" not in out.stderr and not list(tmp_path.rglob("results.jsonl"))
    assert not list(tmp_path.iterdir())  # not even the job folder and empty log Hydra made before the job


@pytest.mark.parametrize("override", ["runer.n_jobs=8", "cach.mode=off", "foo.bar=1", "+foo=1", "~foo"])
def test_a_misspelt_top_level_key_exits_2_naming_the_valid_ones(tmp_path, override):
    out = cli(
        "bench=toy", "method=expert", "model=scripted", override, f"results_root={tmp_path}", check=False
    )
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1 and "cache, " in out.stderr and "runner" in out.stderr
    assert not list(tmp_path.rglob("*.jsonl"))


@pytest.mark.parametrize("override", ["results_root=", "results_root=''", "cache.path="])
def test_an_empty_path_is_refused_before_anything_is_written(tmp_path, override):
    out = cli("bench=toy", "method=expert", "model=scripted", override, check=False, env={**os.environ})
    assert out.returncode == 2 and "an empty path" in out.stderr and "Traceback" not in out.stderr
    assert not Path("/toy").exists()


def test_a_missing_api_key_stops_before_the_first_episode(tmp_path):
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    out = cli(
        "bench=toy",
        "method=raw",
        "model=openai",
        "model.api_key_env=NO_SUCH_KEY_VAR",
        f"results_root={tmp_path}",
        check=False,
        env=env,
    )
    assert out.returncode == 2 and "NO_SUCH_KEY_VAR is unset or empty" in out.stderr


DEAD_OPENAI = (
    "model=openai",
    "model.base_url=http://127.0.0.1:9/v1",
    "runner.check_endpoints=false",
    "model.api_key_env=null",
    "retry.max_attempts=1",
    "cache.mode=off",
)
"""An OpenAI-compatible model at a closed port, tried once, the pre-flight check off: every episode errors."""


def test_a_run_where_every_episode_errored_exits_nonzero_and_prints_the_cause(tmp_path):
    out = cli(
        "bench=toy",
        "bench.limit=2",
        "method=raw",
        *DEAD_OPENAI,
        f"results_root={tmp_path}",
        "runner.progress=false",
        check=False,
    )
    assert out.returncode == 1, out.stderr
    assert "2x RetryBudgetExhausted" in out.stdout and "example transcript:" in out.stdout
    assert "every episode errored" in out.stderr


def test_multirun_prints_one_row_per_method(tmp_path):
    out = cli(
        "-m",
        "bench=toy",
        "bench.limit=2",
        "method=raw,expert",
        "model=scripted",
        f"results_root={tmp_path}",
        "runner.progress=false",
    )
    sweep = out.stdout.split("== sweep ==")[1]
    assert "raw" in sweep and "expert" in sweep
    assert (only_run(tmp_path, "toy/raw/scripted") / "summary.json").exists()
    assert (only_run(tmp_path, "toy/expert/scripted") / "summary.json").exists()


def test_a_sweep_lists_a_failed_job_with_its_cause_and_still_writes_the_report(tmp_path):
    out = cli(
        "-m",
        "bench=toy",
        "bench.limit=2",
        "method=raw,expert",
        *DEAD_OPENAI,
        f"results_root={tmp_path}",
        f"report={tmp_path}/sweep.html",
        "runner.progress=false",
        check=False,
    )
    assert out.returncode == 1, out.stderr
    sweep = out.stdout.split("== sweep ==")[1]
    assert "expert" in sweep and "100.0%" in sweep  # the job that ran
    assert "toy/raw/openai failed: every episode errored (RetryBudgetExhausted" in sweep
    assert f"report: {tmp_path}/sweep.html" in sweep and (tmp_path / "sweep.html").stat().st_size > 0


def test_ctrl_c_stops_cleanly_with_one_line_on_how_to_resume(tmp_path):
    proc = subprocess.Popen(
        [sys.executable, "-m", "pos_bench", "bench=toy", "bench.n_tasks=40", "method=raw", "model=scripted",
         "model.delay=0.2", "runner.n_jobs=2", "runner.progress=false", f"results_root={tmp_path}"],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip
    deadline = time.time() + 120
    while time.time() < deadline and not list(tmp_path.rglob("results.jsonl")):
        time.sleep(0.1)
    time.sleep(0.5)
    os.killpg(proc.pid, signal.SIGINT)  # what a terminal sends on Ctrl-C
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130
    assert "Traceback" not in err and "run the same command again to resume" in err
    assert "leaked" not in err and "KeyboardInterrupt" not in err
    folder = only_run(tmp_path, "toy/raw/scripted")
    saved = len((folder / "results.jsonl").read_text().splitlines())
    assert f"interrupted: {saved} of 40 episodes are saved" in err


def test_extras_say_how_they_are_averaged(tmp_path):
    out = cli("bench=rca_synthetic", "bench.limit=1", "method=raw", "model=scripted", f"results_root={tmp_path}",
              "runner.progress=false")  # fmt: skip
    assert (
        "note: extras are means over the episodes each one applies to, an errored episode counting as 0"
        in out.stdout
    )


def test_sigterm_stops_like_ctrl_c_with_the_resume_line_and_no_leftovers(tmp_path):
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    proc = subprocess.Popen(
        [sys.executable, "-m", "pos_bench", "bench=toy", "bench.n_tasks=40", "method=raw", "model=scripted",
         "model.delay=0.2", "runner.n_jobs=2", "runner.backend=loky", "runner.progress=false",
         f"results_root={tmp_path / 'r'}"],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
        env={**os.environ, "TMPDIR": str(scratch)},
    )  # fmt: skip
    deadline = time.time() + 120
    while time.time() < deadline and not list((tmp_path / "r").rglob("results.jsonl")):
        time.sleep(0.1)
    time.sleep(0.5)
    proc.send_signal(signal.SIGTERM)  # to the main process only, as `kill PID` does
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, err
    assert "Traceback" not in err and "run the same command again to resume" in err
    assert "leaked" not in err
    assert not [p.name for p in scratch.iterdir() if p.name.startswith("pos_bench_")]


@pytest.mark.parametrize("flags", [["-m", "--cfg", "job"], ["--multirun", "--cfg=job"], ["-m", "-c", "job"]])
def test_cfg_job_on_a_sweep_prints_every_jobs_composed_config(tmp_path, flags):
    out = cli(
        *flags, "method=raw,pos", "bench=toy", "model=scripted", f"results_root={tmp_path}", check=False
    )
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
    heads = [line for line in out.stdout.splitlines() if line.startswith("# job ")]
    assert len(heads) == 2 and heads[0].endswith("method=raw") and heads[1].endswith("method=pos")
    assert (
        "baselines.raw.RawHistory" in out.stdout
        and "pos_bench.pos.method.Pos" in out.stdout.split("# job 1")[1]
    )
    assert not list(tmp_path.rglob("*.jsonl"))  # nothing ran
