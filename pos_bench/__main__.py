"""`python -m pos_bench bench=… method=… model=…`: compose the config, check it, pick the run folder of its
fingerprint, run, print the summary table and the errors' causes.

Exit codes: 0 done; 1 every episode errored; 2 nothing was run (a config error, another process on the run
folder, a bad results or cache file, other episode code); 3 the disk is full (free space, rerun to resume); 130
interrupted (rerun the same command to resume).
"""

from __future__ import annotations

import json
import os
import re
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.core.utils import JobStatus
from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf

from pos_bench.models.cache import CacheError
from pos_bench.redact import redactor_for
from pos_bench.runner import DiskFull, RunInterrupted, RunLocked, preflight, run
from pos_bench.runner.identity import RunIndex, RunMismatch, run_identity
from pos_bench.runner.preflight import ConfigError
from pos_bench.runner.results import ResultsError
from pos_bench.runner.summary import Summary, format_errors, format_notes, format_table
from pos_bench.types import to_jsonable

REFUSALS = (ConfigError, RunMismatch, RunLocked, ResultsError, CacheError)
"""Errors that stop a run before (or instead of) playing: one message, exit code 2."""

KEY_OVERRIDE = re.compile(r"^[A-Za-z_][\w-]*(\.[\w-]+)+=")


def settable(arguments: list[str]) -> list[str]:
    """Command-line arguments with every plain `a.b=value` turned into `++a.b=value` (set or add), so any key a
    constructor takes is settable without `+`; a misspelt key is then caught by the pre-flight check, which
    names the valid ones. Group choices (`model=openai`), `hydra.*` keys and prefixed overrides are kept."""
    return [
        f"++{arg}" if KEY_OVERRIDE.match(arg) and not arg.startswith("hydra.") else arg for arg in arguments
    ]


def run_labels(cfg: dict[str, Any], description: dict[str, Any]) -> dict[str, Any]:
    """Labels come from the Hydra choices; a run on a smoke-test model (SmolLM2) is labelled `smoke`, one on
    the scripted test double `test`."""
    choices = HydraConfig.get().runtime.choices
    label = "smoke" if description.get("smoke") else "test" if description.get("test") else "full"
    return {
        "bench": choices.get("bench"),
        "method": choices.get("method"),
        "model": choices.get("model"),
        "label": label,
    }


def run_command(cfg: DictConfig) -> Summary:
    plain = OmegaConf.to_container(cfg, resolve=True)
    prepared = preflight(plain)
    identity = run_identity(plain, prepared.description, prepared.upstream)
    hydra_cfg = HydraConfig.get()
    runs = RunIndex(Path(hydra_cfg.runtime.output_dir))
    run_dir = runs.folder_for(identity, list(hydra_cfg.overrides.task))
    print(f"run folder: {run_dir} (fingerprint {identity.short}; runs here: {runs.path})", flush=True)
    labels = run_labels(plain, dict(prepared.description))
    summary = run(plain, run_dir, labels, prepared=prepared, identity=identity)
    redactor = redactor_for(plain)
    print(redactor.text(format_table([summary])))
    for extra in (format_notes(summary), format_errors(summary, run_dir)):
        if extra:
            print(redactor.text(extra))
    print(f"results: {run_dir}")
    return summary


TERMINATED: list[int] = []
"""Set when SIGTERM arrived: the run stops as on Ctrl-C, with exit code 143 instead of 130."""


def stop_on_sigterm() -> None:
    """`kill PID` (SIGTERM, what a scheduler or a container stop sends) stops the run as Ctrl-C does: the
    episodes that finished are saved, temporary folders removed, the resume line printed."""

    def handler(signum: int, _frame: Any) -> None:
        TERMINATED.append(signum)
        raise KeyboardInterrupt

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, handler)


@hydra.main(version_base="1.3", config_path="../conf", config_name="config")
def main(cfg: DictConfig) -> Summary:
    stop_on_sigterm()
    try:
        summary = run_command(cfg)
    except REFUSALS as error:
        print(f"error: {error}", file=sys.stderr, flush=True)
        raise SystemExit(2) from None
    except DiskFull as error:
        print(f"error: {error}", file=sys.stderr, flush=True)
        raise SystemExit(3) from None
    except (RunInterrupted, KeyboardInterrupt) as error:
        print(str(error) or "interrupted; run the same command again to resume.", file=sys.stderr, flush=True)
        sys.stdout.flush()
        os._exit(
            143 if TERMINATED else 130
        )  # threads still playing an episode must not hold the exit; saved rows are on disk
    if summary.episodes and summary.errors == summary.episodes:
        print("error: every episode errored (causes above)", file=sys.stderr, flush=True)
        raise SystemExit(1)
    return summary


SWEEP_LOG = "POS_BENCH_SWEEP_LOG"
"""Environment variable naming the file where a sweep's jobs list their summaries."""


class SweepTable(Callback):
    """After a `-m` sweep, print one table with a row per finished job.

    With a launcher that runs jobs in other processes or on other hosts (submitit), `on_job_end` runs
    there and `on_multirun_end` here, so each job appends its summary to a file in the sweep directory
    (named by an environment variable the jobs inherit) and the table is read back from it.
    """

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        log = Path(config.hydra.sweep.dir).resolve() / f".sweep-{os.getpid()}-{time.time_ns()}.jsonl"
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_text("")
        os.environ[SWEEP_LOG] = str(log)

    def on_job_end(self, config: DictConfig, job_return: Any, **kwargs: Any) -> None:
        log = os.environ.get(SWEEP_LOG)
        if log and job_return.status == JobStatus.COMPLETED and isinstance(job_return.return_value, Summary):
            row = {"num": job_return.hydra_cfg.hydra.job.num, "summary": to_jsonable(job_return.return_value)}
            with open(log, "a", encoding="utf-8") as f:  # one short line per job: appends do not interleave
                f.write(json.dumps(row, ensure_ascii=False) + "\n")

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        log = Path(os.environ.pop(SWEEP_LOG, "") or "/nonexistent")
        if not log.is_file():
            return
        rows = sorted((json.loads(line) for line in log.read_text().splitlines()), key=lambda r: r["num"])
        log.unlink()
        if rows:
            print("\n== sweep ==")
            print(format_table([row["summary"] for row in rows]))


if __name__ == "__main__":
    sys.argv = [sys.argv[0], *settable(sys.argv[1:])]
    main()
