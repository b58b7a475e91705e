"""The pos_bench side of an inspect task: the run folder it writes and one episode per sample, played by the
runner's own `run_episode` (the same model stack, transcript, result and failure ledger as `python -m
pos_bench`). Synchronous: inspect's samples call `play` from worker threads.

Each eval writes a new run folder, `<results_root>/inspect/<bench>/<method>/<model>/<time>-<id>`, with its
`run.json` (config, overrides, fingerprint, model description), `results.jsonl`, the episodes' folders and
`summary.json`, so the analysis, the report, the export and `model=replay model.run=<folder>` read it like any
run. It is never resumed: inspect's `eval-retry` plays its unfinished samples again, into a new folder.
"""

from __future__ import annotations

import copy
import re
import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from pos_bench.build import build
from pos_bench.redact import redactor_for
from pos_bench.runner import code_history, write_run_json
from pos_bench.runner.code import code_record
from pos_bench.runner.episode import run_episode
from pos_bench.runner.identity import run_identity
from pos_bench.runner.preflight import preflight
from pos_bench.runner.results import ResultsFile, record
from pos_bench.runner.summary import summarize, write_summary
from pos_bench.types import EpisodeResult, Task


@dataclass
class RunFolder:
    """One model's run folder of the eval, and the config it plays."""

    cfg: dict[str, Any]
    path: Path
    results: ResultsFile
    labels: dict[str, Any]


def folder_label(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._=-]+", "_", text).strip("_") or "model"


class EvalRun:
    """The episodes of one inspect task: its benchmark's tasks (the dataset) and, per inspect model, the run
    folder its samples write."""

    def __init__(self, cfg: Mapping[str, Any], overrides: Sequence[str], *, bench: str, method: str):
        self.cfg = dict(cfg)
        self.overrides = list(overrides)
        self.bench = bench
        self.method = method
        self.tasks: list[Task] = list(build(self.cfg["bench"]).tasks())
        self._by_id = {task.id: task for task in self.tasks}
        self._folders: dict[str, RunFolder] = {}
        self._lock = threading.Lock()

    def task(self, task_id: str, epoch: int = 1) -> Task:
        """The benchmark task of a sample; inspect's epoch `e` is pos_bench's trial `e - 1`."""
        return replace(self._by_id[str(task_id)], trial=epoch - 1)

    def folder(self, model: str) -> RunFolder:
        """The run folder for inspect's `model`, made (pre-flight, run.json) by the first sample to ask."""
        with self._lock:
            if model not in self._folders:
                self._folders[model] = self._start(model)
            return self._folders[model]

    def _start(self, model: str) -> RunFolder:
        cfg = copy.deepcopy(self.cfg)
        cfg["model"]["name"] = model
        prepared = preflight(cfg)
        identity = run_identity(cfg, prepared.description, prepared.upstream)
        stamp = time.strftime("%Y%m%d-%H%M%S") + "-" + uuid.uuid4().hex[:6]
        path = Path(cfg["results_root"]) / "inspect" / self.bench / self.method / folder_label(model) / stamp
        path.mkdir(parents=True)
        labels = {"bench": self.bench, "method": self.method, "model": "inspect", "label": "full"}
        labels |= prepared.labels
        redactor = redactor_for(cfg)
        history = code_history(path, code_record(), allow_change=True)
        write_run_json(path, cfg, labels, prepared, identity, redactor, history, overrides=self.overrides)
        return RunFolder(cfg, path, ResultsFile(path / "results.jsonl", redactor), labels)

    def play(self, model: str, task: Task) -> tuple[EpisodeResult, Path]:
        """Play `task` with inspect's `model` (an error becomes the result, as in any run), record its row and
        refresh the run's summary; returns the result and the run folder."""
        run = self.folder(model)
        result = run_episode(run.cfg, task, run_dir=run.path.resolve())
        with self._lock:
            record(run.results, result)
            summary = summarize(run.results.read(), run.labels, run.cfg.get("prices"))
            write_summary(run.path / "summary.json", summary, redactor_for(run.cfg))
        return result, run.path
