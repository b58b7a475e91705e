"""Run folders → typed `Run` records with one row per episode, labels, status and fingerprint.

A run folder is what `runner.run` writes: `run.json`, `results.jsonl`, `episodes/<task>/` and, once finished,
`summary.json`. Everything is read defensively, because runs may be in progress, killed, or written by an
older or newer runner. Fields relied on (all optional except a readable folder):

- `run.json`: `labels.{bench,method,model,label}`, `model.smoke`, `config.bench.{judge,source}`,
  `config.prices`, and `identity.fingerprint` (shown by its first 8 characters, as in the run folder's name;
  else a top-level `fingerprint`, else a hash of `config`);
  any label whose value is `rules` or `judge_rules` (ClinDiag judged by rules); `labels.judge` naming any other
  model than the paper's judge is flagged `judge=<model>`.
- `results.jsonl` rows: `task_id`, `trial` (absent: 0), `status`, `success`, `score`, `steps`, `turns`, `usage`, `task_meta`,
  `error`, optional `report`, and `peak_input_tokens` / `dependency_m` (recomputed from `events.jsonl` when absent).
- `episodes/<task>/result.json` (the full row, method report included) and `events.jsonl` (call events with
  per-call usage). A folder without `result.json` is an episode still running (`running`, while a process
  holds the run folder's lock) or killed mid-way (`interrupted`, when none does).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
from filelock import FileLock, Timeout

from pos_bench import events
from pos_bench.events import DamagedFile
from pos_bench.runner.summary import BENCHMARK_ROLE_PREFIX, POLICY_ROLE, context_load, role_cost
from pos_bench.transcript import find_episode
from pos_bench.types import usage_from_json

PAPER_BENCHMARKS = ("alfworld", "loca", "rca100", "clindiag")
"""Benchmark ids of the paper's Table 1 (SPEC README); any other benchmark is a stand-in or a test bed."""

CLUSTER_KEYS = ("family", "task_type", "subset")
"""Task-meta keys whose values group cases that resemble each other (LOCA family, ALFWorld task type,
ClinDiag subset); the first one present with two or more values is the run's cluster."""

UNFINISHED = ("running", "interrupted")
"""Statuses of an episode with no result: started while a writer holds the run folder, or left by one that
is gone (it never finishes unless the run is resumed)."""


@dataclass(frozen=True)
class Run:
    """One run folder. `episodes` has one row per recorded or started episode (see `episode_frame`)."""

    folder: Path
    bench: str
    method: str
    model: str
    flags: tuple[str, ...]
    """Labels a reader must see beside every number: smoke, rules, judge=…, stand-in, errors,
    served=N revisions, in progress."""
    fingerprint: str
    episodes: pd.DataFrame
    total_tasks: int | None
    """Tasks the run will play when known (run.json `tasks`), else None."""
    cost: float | None

    @property
    def name(self) -> str:
        return f"{self.bench}/{self.method}/{self.model}"

    @property
    def tag(self) -> str:
        """The name followed by its flags, e.g. `toy/pos/scripted [stand-in, errors]`."""
        return self.name + (f" [{', '.join(self.flags)}]" if self.flags else "")

    @property
    def finished(self) -> pd.DataFrame:
        """Episodes with a result (done or error); errors count as failures, as in the summary. Episodes the model
        never got to act in (`unplayed`: refused, overflow) are left out, as in the summary: they are shown apart."""
        e = self.episodes
        played = e["unplayed"].isna() if "unplayed" in e else True
        return e[~e["status"].isin(UNFINISHED) & played]

    @property
    def finished_episodes(self) -> list[tuple[str, int]]:
        """(task id, trial) of each finished episode: the key of its folder when a task is played K times."""
        f = self.finished
        if not len(f):
            return []
        trials = f["trial"].astype(int) if "trial" in f else [0] * len(f)
        return list(zip(f["task_id"].astype(str), trials, strict=True))


def read_json(path: Path) -> dict[str, Any]:
    """A run folder's JSON object file; `{}` while it is not written yet. Anything else there (not UTF-8, not
    JSON, another JSON type) is a `DamagedFile`: shown as one line, never read as an empty record."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return {}
    except OSError as error:
        raise DamagedFile(f"{path} cannot be read: {error.strerror}") from None
    try:
        data = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as error:
        raise DamagedFile(f"{path} is not UTF-8 text (byte {error.start})") from None
    except (json.JSONDecodeError, RecursionError) as error:
        raise DamagedFile(f"{path} is not JSON ({type(error).__name__})") from None
    if not isinstance(data, dict):
        raise DamagedFile(f"{path} holds a JSON {type(data).__name__}, not an object")
    return data


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """Whole lines only: a torn last line of a killed run is skipped; a line that is not UTF-8 is a
    `DamagedFile` naming the file and line."""
    return list(events.json_objects(path))


def episode_folder(run_dir: Path, task_id: str, trial: int = 0) -> Path:
    """The folder of one episode's files: the runner's rule (trial t > 0 in `<task folder>@t<t>`), legacy names
    of older runs included."""
    return find_episode(run_dir, task_id, trial)


TRIAL_FOLDER = re.compile(r"^(?P<task>.+)@t(?P<trial>[1-9][0-9]*)$")
"""A later trial's episode folder name (see `episode_folder`)."""


def episode_result(run_dir: Path, row: Mapping[str, Any]) -> dict[str, Any]:
    """The full result of an episode: the episode folder's result.json when present, else the row."""
    folder = episode_folder(run_dir, str(row.get("task_id", "")), int(row.get("trial") or 0))
    full = read_json(folder / "result.json")
    return {**row, **full} if full else dict(row)


def events_context_load(episode: Iterable[events.Event]) -> tuple[float | None, float | None]:
    """Peak and Dependency recomputed from an episode's `call` events (runs older than the recorded fields)."""
    calls = [(str(e.role), e.usage) for e in episode if isinstance(e, events.Call)]
    if not any(role == POLICY_ROLE for role, _ in calls):
        return None, None
    load = context_load(calls)
    return float(load.peak_input_tokens), load.dependency_m


def _recorded(row: Mapping[str, Any], key: str) -> float | None:
    value = row.get(key, (row.get("extras") or {}).get(key))
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def episode_row(run_dir: Path, row: Mapping[str, Any], *, with_events: bool) -> dict[str, Any]:
    usage = {role: usage_from_json(u) for role, u in (row.get("usage") or {}).items()}
    out: dict[str, Any] = {
        "task_id": str(row.get("task_id", "")),
        "trial": int(row.get("trial") or 0),
        "status": str(row.get("status", "done")),
        "success": bool(row.get("success", False)),
        "score": float(row.get("score") or 0.0),
        "steps": int(row.get("steps") or 0),
        "turns": int(row.get("turns") or 0),
        "error": row.get("error"),
        "unplayed": row.get("unplayed"),
        "method_tokens": sum(
            u.input_tokens + u.output_tokens
            for r, u in usage.items()
            if not r.startswith(BENCHMARK_ROLE_PREFIX)
        ),
        # a judge that could not decide (ClinDiag's default-deny rules judge): scored as a failure, counted apart
        "undecided": bool((row.get("extras") or {}).get("undecided", False)),
        "peak": _recorded(row, "peak_input_tokens"),
        "dependency": _recorded(row, "dependency_m"),
    }
    for role, u in usage.items():
        out[f"tokens.{role}"] = u.input_tokens + u.output_tokens
    for key, value in (row.get("task_meta") or {}).items():
        out[f"meta.{key}"] = value
    if with_events and out["peak"] is None:
        path = episode_folder(run_dir, out["task_id"], out["trial"]) / "events.jsonl"
        episode = events.read(path, (events.Call,))
        out["peak"], out["dependency"] = events_context_load(episode)
    return out


def episode_frame(run_dir: Path, *, with_events: bool = True, writing: bool = True) -> pd.DataFrame:
    """One row per episode: recorded ones from results.jsonl, then started ones with no result: `running`
    while `writing` (a process holds the run folder), else `interrupted`."""
    rows = read_jsonl(run_dir / "results.jsonl")
    recorded = [episode_row(run_dir, r, with_events=with_events) for r in rows]
    seen = {(r["task_id"], r["trial"]) for r in recorded}
    started = []
    episodes = run_dir / "episodes"
    folders = sorted(p for p in episodes.iterdir() if p.is_dir()) if episodes.is_dir() else []
    known = {episode_folder(run_dir, t, k).name for t, k in seen}
    for folder in folders:
        if folder.name in known:
            continue
        later = TRIAL_FOLDER.match(folder.name)
        trial = int(later["trial"]) if later else 0
        first = next(events.read(folder / "events.jsonl"), None)
        reset = first.task if isinstance(first, events.Reset) and isinstance(first.task, Mapping) else {}
        task = reset.get("id", later["task"] if later else folder.name)
        if (task, trial) not in seen:
            started.append(
                {
                    "task_id": task,
                    "trial": trial,
                    "status": "running" if writing else "interrupted",
                    "success": False,
                    "score": 0.0,
                    "steps": 0,
                }
            )
    frame = pd.DataFrame(recorded + started)
    if frame.empty:
        frame = pd.DataFrame(
            columns=["task_id", "trial", "status", "success", "score", "steps", "turns", "error"]
        )
    return frame


def cluster_key(episodes: pd.DataFrame) -> str | None:
    """The task-meta column to cluster on (see CLUSTER_KEYS), or None."""
    for key in CLUSTER_KEYS:
        column = f"meta.{key}"
        if column in episodes and episodes[column].nunique(dropna=True) >= 2:
            return column
    return None


PAPER_JUDGE = "qwen3.7-plus"
"""The model the paper fixes for ClinDiag's judge (SPEC-BENCH §5.4; conf/model/qwen.yaml); any other judge is flagged."""


def run_flags(
    meta: Mapping[str, Any],
    episodes: pd.DataFrame,
    total: int | None,
    finished: bool,
    summary: Mapping[str, Any] | None = None,
    writing: bool = True,
) -> tuple[str, ...]:
    labels = meta.get("labels") or {}
    bench_cfg = (meta.get("config") or {}).get("bench") or {}
    flags = []
    if labels.get("label") == "smoke" or (meta.get("model") or {}).get("smoke"):
        flags.append("smoke")
    judge = labels.get("judge")
    if bench_cfg.get("judge") == "rules" or any(v in ("rules", "judge_rules") for v in labels.values()):
        flags.append("rules")
    elif judge and judge != PAPER_JUDGE:
        flags.append(f"judge={judge}")
    if labels.get("bench") not in PAPER_BENCHMARKS or bench_cfg.get("source") == "synthetic":
        flags.append("stand-in")
    if "status" in episodes and (episodes["status"] == "error").any():
        flags.append("errors")
    served = (summary or {}).get("served") or ()
    if len(served) > 1:
        flags.append(f"served={len(served)} revisions")  # the endpoint's weights changed during the run
    unfinished = "status" in episodes and episodes["status"].isin(UNFINISHED).any()
    if unfinished or not finished or (total is not None and len(episodes) < total):
        flags.append("in progress" if writing else "interrupted")
    return tuple(flags)


def has_live_writer(folder: Path) -> bool:
    """Whether a process holds the run folder's writer lock (`runner/results.py` `writer_lock`, taken before
    `run.json` is written). The kernel drops the lock when its holder dies, however it dies. A lock file this
    reader may not write (a read-only copy) is tried through a read-only handle; one that cannot be opened at all
    counts as held, the cautious answer. A folder with `run.json` and no `.lock` was left by a writer that is gone."""
    lock_path = folder / ".lock"
    if not lock_path.is_file():
        return not (folder / "run.json").is_file()
    lock = FileLock(lock_path, timeout=0)
    try:
        lock.acquire()
    except Timeout:
        return True
    except OSError:
        return held_read_only(lock_path)
    lock.release()
    return False


def held_read_only(lock_path: Path) -> bool:
    """Whether another process holds `lock_path`'s lock, asked through a read-only handle: `flock` (the lock
    `filelock` takes on POSIX) needs no write access, and a shared probe fails while the writer holds it."""
    try:
        fd = os.open(lock_path, os.O_RDONLY)
    except OSError:
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)  # closing the handle releases the probe's lock
    return False


def load_run(folder: Path, *, with_events: bool = True, trials: int | None = None) -> Run:
    """The run at `folder`; `trials` keeps only its first K trials per task (None: every trial it played)."""
    meta = read_json(folder / "run.json")
    labels = meta.get("labels") or {}
    parts = folder.parts[-3:] if len(folder.parts) >= 3 else ("?",) * 3
    writing = has_live_writer(folder)
    episodes = episode_frame(folder, with_events=with_events, writing=writing)
    if trials is not None:
        episodes = episodes[episodes["trial"] < trials].reset_index(drop=True)
    total = meta.get("tasks") if isinstance(meta.get("tasks"), int) else None
    summary = read_json(folder / "summary.json")
    config = meta.get("config") or {}
    fingerprint = (
        str((meta.get("identity") or {}).get("fingerprint") or meta.get("fingerprint") or "")[:8]
        or hashlib.sha256(json.dumps(config, sort_keys=True, default=str).encode()).hexdigest()[:12]
    )
    return Run(
        folder=folder,
        bench=str(labels.get("bench") or parts[0]),
        method=str(labels.get("method") or parts[1]),
        model=str(labels.get("model") or parts[2]),
        flags=run_flags(meta, episodes, total, finished=bool(summary), summary=summary, writing=writing),
        fingerprint=str(fingerprint),
        episodes=episodes,
        total_tasks=total,
        cost=_cost(summary, meta, folder),
    )


def _cost(summary: Mapping[str, Any], meta: Mapping[str, Any], folder: Path) -> float | None:
    if summary.get("cost"):
        return float(sum(summary["cost"].values()))
    prices = (meta.get("config") or {}).get("prices")
    if not prices:
        return None
    usage: dict[str, Any] = {}
    for row in read_jsonl(folder / "results.jsonl"):
        for role, u in (row.get("usage") or {}).items():
            usage[role] = usage.get(role, usage_from_json({})) + usage_from_json(u)
    return float(sum(role_cost(usage, prices).values()))


def find_runs(paths: Iterable[Path]) -> list[Path]:
    """Run folders at or below each path (a folder holding run.json or results.jsonl), sorted."""
    found: set[Path] = set()
    for path in paths:
        for marker in ("run.json", "results.jsonl"):
            if (path / marker).exists():
                found.add(path)
            found.update(p.parent for p in path.rglob(marker) if "episodes" not in p.relative_to(path).parts)
    return sorted(found)


def load_runs(paths: Iterable[Path], *, with_events: bool = True, trials: int | None = None) -> list[Run]:
    return [load_run(folder, with_events=with_events, trials=trials) for folder in find_runs(paths)]


def _left(run: Run, done: int) -> int | None:
    """Episodes still to play: exact when run.json records the task count, 0 for a finished run, else unknown."""
    if run.total_tasks is not None:
        return run.total_tasks - done
    return None if {"in progress", "interrupted"} & set(run.flags) else 0


def runs_index(runs: Iterable[Run]) -> pd.DataFrame:
    """Every run with its labels, fingerprint, episodes done / left, errors and their commonest cause, tokens, cost."""
    rows = []
    for run in runs:
        e = run.episodes
        unplayed = e["unplayed"] if "unplayed" in e else pd.Series(dtype=object)
        errors = e[(e["status"] == "error") & unplayed.isna()] if "status" in e else e.iloc[0:0]
        causes = Counter(str(msg).split(":", 1)[0] for msg in errors.get("error", []) if msg)
        done = int((~e["status"].isin(UNFINISHED)).sum()) if "status" in e else 0
        rows.append(
            {
                "run": run.name,
                "flags": ", ".join(run.flags) or "–",
                "fingerprint": run.fingerprint,
                "done": done,
                "left": _left(run, done),
                "running": int((e["status"] == "running").sum()) if "status" in e else 0,
                "interrupted": int((e["status"] == "interrupted").sum()) if "status" in e else 0,
                "errors": len(errors),
                "refused": int((unplayed == "refused").sum()),
                "overflow": int((unplayed == "overflow").sum()),
                "commonest error": (
                    f"{causes.most_common(1)[0][0]} ×{causes.most_common(1)[0][1]}" if causes else "–"
                ),
                "method tokens": int(e["method_tokens"].sum()) if "method_tokens" in e else 0,
                "cost": run.cost,
            }
        )
    return pd.DataFrame(rows)
