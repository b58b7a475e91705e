"""`python -m pos_bench bench=… method=… model=…`: compose the config, run, print the summary table."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.core.utils import JobStatus
from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf

from pos_bench.models.roles import build_model
from pos_bench.runner import run
from pos_bench.summary import Summary, format_table, read_summary


def run_labels(cfg: dict[str, Any]) -> dict[str, Any]:
    """Labels come from the Hydra choices; a run on a smoke-test model (SmolLM2) is labelled `smoke`."""
    choices = HydraConfig.get().runtime.choices
    smoke = bool(build_model(cfg).describe().get("smoke", False))
    return {
        "bench": choices.get("bench"),
        "method": choices.get("method"),
        "model": choices.get("model"),
        "label": "smoke" if smoke else "full",
    }


@hydra.main(version_base="1.3", config_path="../conf", config_name="config")
def main(cfg: DictConfig) -> Summary:
    plain = OmegaConf.to_container(cfg, resolve=True)
    run_dir = Path(HydraConfig.get().runtime.output_dir)
    summary = run(plain, run_dir, run_labels(plain))
    print(format_table([summary]))
    print(f"results: {run_dir}")
    return summary


SWEEP_LOG = "POS_BENCH_SWEEP_LOG"
"""Environment variable naming the file where a sweep's jobs list their summaries."""


class SweepTable(Callback):
    """After a `-m` sweep, print one table with a row per finished job.

    With a launcher that runs jobs in other processes or on other hosts (submitit), `on_job_end` runs
    there and `on_multirun_end` here, so the jobs name their `summary.json` in a file in the sweep
    directory (found through an environment variable the jobs inherit) and the table is read back from it.
    """

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        log = Path(config.hydra.sweep.dir).resolve() / f".sweep-{os.getpid()}-{time.time_ns()}.tsv"
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_text("")
        os.environ[SWEEP_LOG] = str(log)

    def on_job_end(self, config: DictConfig, job_return: Any, **kwargs: Any) -> None:
        log = os.environ.get(SWEEP_LOG)
        if log and job_return.status == JobStatus.COMPLETED and isinstance(job_return.return_value, Summary):
            where = Path(job_return.hydra_cfg.hydra.runtime.output_dir) / "summary.json"
            with open(log, "a", encoding="utf-8") as f:
                f.write(f"{job_return.hydra_cfg.hydra.job.num}\t{where}\n")

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        log = Path(os.environ.pop(SWEEP_LOG, "") or "/nonexistent")
        if not log.is_file():
            return
        rows = sorted(
            (int(n), path) for n, path in (line.split("\t") for line in log.read_text().splitlines())
        )
        log.unlink()
        if rows:
            print("\n== sweep ==")
            print(format_table([read_summary(Path(path)) for _, path in rows]))


if __name__ == "__main__":
    main()
