"""`python -m pos_bench bench=… method=… model=…`: compose the config, run, print the summary table."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.core.utils import JobStatus
from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf

from pos_bench.models.roles import build_model
from pos_bench.protocols import Unsupported
from pos_bench.runner import run
from pos_bench.summary import Summary, format_table


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
    try:
        summary = run(plain, run_dir, run_labels(plain))
    except Unsupported as refusal:
        raise SystemExit(f"error: {refusal}") from None
    print(format_table([summary]))
    print(f"results: {run_dir}")
    return summary


class SweepTable(Callback):
    """After a `-m` sweep, print one table with a row per finished job."""

    def __init__(self) -> None:
        self.summaries: list[Summary] = []

    def on_job_end(self, config: DictConfig, job_return: Any, **kwargs: Any) -> None:
        if job_return.status == JobStatus.COMPLETED and isinstance(job_return.return_value, Summary):
            self.summaries.append(job_return.return_value)

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        if self.summaries:
            print("\n== sweep ==")
            print(format_table(self.summaries))


if __name__ == "__main__":
    main()
