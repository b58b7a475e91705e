"""Where RCA-100 cases come from (SPEC-BENCH §4.2, §4.8, §4.10), and reading one case or its answer key.

Two sources, one layout (`cases/tNNN/` with seven files, `manifest.txt`, labels in `answer_key/tNNN.gt.json`):
- `synthetic` (default): `n` generated cases, written once into a versioned folder of the pos_bench cache and
  renamed into place, so parallel workers or a killed run never see half a set;
- `real`: the user's copy of RCA-100 v1.1 (`data_dir` or `$RCA100_DATA`) and the answer key they obtained
  from the Alibaba Cloud AIOps Team (`answer_key` or `$RCA100_ANSWER_KEY`). pos_bench ships no labels.

`load_case` never opens the answer key; only `load_answer` does, and the environment calls it when scoring.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from pos_bench.benchmarks import staging
from pos_bench.benchmarks.rca.shop import GENERATOR_VERSION
from pos_bench.benchmarks.rca.synthetic import CASE_FILES, generate

SOURCES = ("synthetic", "real")
DATA_URL = "https://aiops-benchmark.oss-cn-hongkong.aliyuncs.com/rca/rca100/v1.1/"
HOW_TO_GET = (
    f"Download RCA-100 v1.1 (manifest.txt and cases/tNNN/ with {len(CASE_FILES)} files each) from {DATA_URL} "
    "and set bench.data_dir or RCA100_DATA to the folder holding manifest.txt and cases/. The labels "
    "(answer_key/tNNN.gt.json) are not public: request them from the Alibaba Cloud AIOps Team and set "
    "bench.answer_key or RCA100_ANSWER_KEY. Offline, bench=rca_synthetic runs the synthetic stand-in."
)


@dataclass(frozen=True)
class Dataset:
    """A resolved case set: the case folders, their order and the separate answer-key folder."""

    cases: Path
    answer_key: Path
    ids: tuple[str, ...]
    kind: str
    """synthetic | real"""

    def case_dir(self, case_id: str) -> Path:
        return self.cases / case_id


@dataclass(frozen=True)
class CaseData:
    """Everything the query tools may read for one case; no label in here."""

    task: dict[str, Any]
    topology: dict[str, Any]
    metrics: pd.DataFrame
    logs: pd.DataFrame
    traces: pd.DataFrame
    events: pd.DataFrame
    alerts: pd.DataFrame


@dataclass(frozen=True)
class AnswerKey:
    entities: tuple[str, ...]
    types: tuple[str, ...]


def synthetic(n: int, seed: int, cache: Path | None = None) -> Dataset:
    """`n` synthetic cases for `seed`, generated on first use into the cache (atomic rename)."""
    base = cache or staging.cache_root("rca100")
    target = base / f"synthetic-v{GENERATOR_VERSION}-seed{seed}-n{n}"
    if not (target / "manifest.txt").is_file():
        base.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=base))
        try:
            generate(tmp, n, seed)
            try:
                tmp.rename(target)
            except OSError:
                if not (target / "manifest.txt").is_file():  # someone else's rename must have won
                    raise
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return Dataset(
        target / "cases", target / "answer_key", read_manifest(target / "manifest.txt"), "synthetic"
    )


CASE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}")
"""A case id is a plain folder name under `cases/`: starts with a letter or digit (so never `.` or `..`), no
separator, at most 100 characters."""


def read_manifest(path: Path) -> tuple[str, ...]:
    """The case ids of `manifest.txt`, one per non-blank line; an id that is not a plain folder name, or one
    listed twice, is an error naming the file and the lines."""
    ids: dict[str, int] = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        case_id = line.strip()
        if not case_id:
            continue
        if not CASE_ID.fullmatch(case_id):
            raise ValueError(
                f"{path} line {number}: case id {case_id!r} is not a plain folder name "
                "(letters, digits, '.', '_', '-', starting with a letter or digit)"
            )
        if case_id in ids:
            raise ValueError(f"{path} lines {ids[case_id]} and {number}: case id {case_id!r} is listed twice")
        ids[case_id] = number
    return tuple(ids)


def real(data_dir: str | None, answer_key: str | None) -> Dataset:
    """The user's RCA-100 copy and answer key; one error naming every place searched when either is missing."""
    roots = [Path(p).expanduser() for p in (data_dir, os.environ.get("RCA100_DATA")) if p]
    keys = [Path(p).expanduser() for p in (answer_key, os.environ.get("RCA100_ANSWER_KEY")) if p]
    keys += [r / "answer_key" for r in roots]
    root = next((r for r in roots if (r / "manifest.txt").is_file() and (r / "cases").is_dir()), None)
    key = next((k for k in keys if k.is_dir() and any(k.glob("*.gt.json"))), None)
    if root is None or key is None:
        missing = [
            f"{what} not found (searched: {', '.join(map(str, places)) or 'nothing given'})"
            for what, found, places in (
                ("cases (manifest.txt + cases/)", root, roots),
                ("answer key (*.gt.json)", key, keys),
            )
            if found is None
        ]
        raise FileNotFoundError(f"RCA-100 {'; '.join(missing)}. {HOW_TO_GET}")
    return Dataset(root / "cases", key, read_manifest(root / "manifest.txt"), "real")


def resolve(source: str, *, data_dir: str | None, answer_key: str | None, n: int, seed: int) -> Dataset:
    if source == "synthetic":
        return synthetic(n, seed)
    return real(data_dir, answer_key)


def check(dataset: Dataset, ids: tuple[str, ...] | list[str]) -> None:
    """Every selected case has its seven files and a label; raise naming the first gaps."""
    gaps = [
        f"{case_id}/{name}"
        for case_id in ids
        for name in CASE_FILES
        if not (dataset.case_dir(case_id) / name).is_file()
    ]
    gaps += [f"answer_key/{i}.gt.json" for i in ids if not (dataset.answer_key / f"{i}.gt.json").is_file()]
    if gaps:
        raise FileNotFoundError(
            f"{len(gaps)} RCA-100 files are missing under {dataset.cases.parent} (first: {', '.join(gaps[:5])}). "
            + HOW_TO_GET
        )


def load_case(dataset: Dataset, case_id: str) -> CaseData:
    folder = dataset.case_dir(case_id)
    frames = {
        stem: pd.read_parquet(folder / f"{stem}.parquet")
        for stem in ("metrics", "logs", "traces", "events", "alerts")
    }
    return CaseData(
        task=json.loads((folder / "task.json").read_text(encoding="utf-8")),
        topology=json.loads((folder / "topology.json").read_text(encoding="utf-8")),
        **frames,
    )


def load_answer(dataset: Dataset, case_id: str) -> AnswerKey:
    """The labelled root-cause entities and fault types; called by the environment only when scoring."""
    payload = json.loads((dataset.answer_key / f"{case_id}.gt.json").read_text(encoding="utf-8"))

    def names(key: str) -> tuple[str, ...]:
        value = payload.get(key) or []
        return tuple(str(v) for v in ([value] if isinstance(value, str) else value))

    return AnswerKey(entities=names("root_cause_entities"), types=names("root_cause_types"))
