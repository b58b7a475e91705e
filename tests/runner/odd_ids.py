"""A toy benchmark whose task ids are the hostile and colliding ones of issue 30 (for the runner's tests and
`scripts/reliability_report.py`)."""

from __future__ import annotations

from dataclasses import replace

from pos_bench.benchmarks.toy import ToyBenchmark
from pos_bench.types import Task

ODD_IDS = ("..", ".", "a/b", "café", "cafe\u0301", "cafè", "case x", "case__x", "Case X", "../../escape")
"""`café` twice (NFC and NFD), names that the old rule sent to one folder, and ids that climb out."""


class OddIds(ToyBenchmark):
    """The toy tasks, renamed to `ids` in order (toy's own episodes, so the expert still solves them)."""

    def __init__(self, ids: list[str] | None = None, **toy):
        self.ids = list(ids or ODD_IDS)
        super().__init__(n_tasks=len(self.ids), **toy)

    def tasks(self) -> list[Task]:
        return [replace(task, id=new) for task, new in zip(super().tasks(), self.ids, strict=True)]
