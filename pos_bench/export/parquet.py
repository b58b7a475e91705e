"""A run's episodes and steps as a Hugging Face `datasets` dataset in
parquet (`OUT/episodes.parquet`, `OUT/steps.parquet`), the way eval harnesses share samples.

Read each file back as its own dataset (the two have different columns):
    datasets.load_dataset("parquet", data_files="OUT/episodes.parquet", split="train")
    datasets.load_dataset("parquet", data_files="OUT/steps.parquet", split="train")

Nested values whose shape differs per benchmark or method (task meta, usage, the method report, a step's
memory record, the prompt messages) are stored as JSON strings, so every row has the same schema.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from pos_bench import events
from pos_bench.analysis.runs import Run, episode_folder, episode_result, load_run, read_jsonl


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _clean(value: Any) -> Any:
    return None if isinstance(value, float) and math.isnan(value) else value


def episode_rows(run: Run) -> list[dict[str, Any]]:
    rows = []
    recorded = {
        (r.get("task_id"), int(r.get("trial") or 0)): r for r in read_jsonl(run.folder / "results.jsonl")
    }
    for e in run.episodes.to_dict("records"):
        key = (e["task_id"], int(e["trial"]))
        full = episode_result(run.folder, recorded.get(key, {"task_id": key[0], "trial": key[1]}))
        rows.append(
            {
                "run": run.name,
                "bench": run.bench,
                "method": run.method,
                "model": run.model,
                "flags": list(run.flags),
                "fingerprint": run.fingerprint,
                "task_id": e["task_id"],
                "trial": int(e["trial"]),
                "status": e["status"],
                "success": bool(e["success"]),
                "score": float(e["score"]),
                "steps": int(e.get("steps") or 0),
                "turns": int(_clean(e.get("turns")) or 0),
                "error": _clean(e.get("error")),
                "method_tokens": int(_clean(e.get("method_tokens")) or 0),
                "peak": _clean(e.get("peak")),
                "dependency": _clean(e.get("dependency")),
                "task_meta": _json(full.get("task_meta", {})),
                "usage": _json(full.get("usage", {})),
                "extras": _json(full.get("extras", {})),
                "report": _json(full.get("report", {})),
            }
        )
    return rows


def step_rows(
    run: Run, task_id: str, episode: Iterable[events.Event], trial: int = 0
) -> list[dict[str, Any]]:
    """One row per environment step: the policy prompt and reply behind it, the step, the memory record after."""
    rows: list[dict[str, Any]] = []
    tokens: dict[str, int] = {}
    last_agent = events.Call()
    for e in episode:
        if isinstance(e, events.Call):
            role = str(e.role)
            tokens[role] = tokens.get(role, 0) + e.usage.input_tokens + e.usage.output_tokens
            if role == "agent":
                last_agent = e
        elif isinstance(e, events.Step):
            rows.append(
                {
                    "run": run.name,
                    "task_id": task_id,
                    "trial": trial,
                    "turn": int(len(rows) if e.turn is None else e.turn),
                    "thought": "" if e.thought is None else str(e.thought),
                    "action": _json(e.action),
                    "observation": str((e.observation or {}).get("text", "")),
                    "prompt": _json((last_agent.prompt or {}).get("messages", [])),
                    "reply": str(last_agent.reply),
                    "memory": "null",
                    "tokens": "{}",
                }
            )
        elif isinstance(e, events.Memory) and rows and rows[-1]["turn"] == e.turn:
            rows[-1]["memory"] = _json(e.record)
            rows[-1]["tokens"], tokens = _json(tokens), {}
    if rows and rows[-1]["tokens"] == "{}" and tokens:
        rows[-1]["tokens"] = _json(tokens)
    return rows


EPISODE_TYPES = {
    "run": "string",
    "trial": "int64",
    "bench": "string",
    "method": "string",
    "model": "string",
    "flags": ["string"],
    "fingerprint": "string",
    "task_id": "string",
    "status": "string",
    "success": "bool",
    "score": "float64",
    "steps": "int64",
    "turns": "int64",
    "error": "string",
    "method_tokens": "int64",
    "peak": "float64",
    "dependency": "float64",
    "task_meta": "string",
    "usage": "string",
    "extras": "string",
    "report": "string",
}
STEP_TYPES = {
    "run": "string",
    "task_id": "string",
    "trial": "int64",
    "turn": "int64",
    "thought": "string",
    "action": "string",
    "observation": "string",
    "prompt": "string",
    "reply": "string",
    "memory": "string",
    "tokens": "string",
}


def features(types: Mapping[str, Any]):
    """Fixed column types, so a column that happens to be all null (no errors) is still typed."""
    from datasets import Features, List, Value  # the `export` extra, checked by `export`

    return Features({k: List(Value(v[0])) if isinstance(v, list) else Value(v) for k, v in types.items()})


def export(run_dir: Path, out: Path) -> dict[str, Path]:
    """Write the parquet files; returns name → path."""
    try:
        from datasets import Dataset  # heavy; only the export needs it
    except ImportError as missing:
        raise RuntimeError(
            "pos_bench.export needs the Hugging Face `datasets` package: install the extra with "
            "`uv sync --inexact --extra export` (or `pip install pos_bench[export]`)"
        ) from missing

    run = load_run(run_dir)
    steps = []
    for task, trial in zip(run.episodes["task_id"], run.episodes["trial"], strict=True):
        episode = events.read(episode_folder(run_dir, task, int(trial)) / "events.jsonl")
        steps += step_rows(run, task, episode, int(trial))
    out.mkdir(parents=True, exist_ok=True)
    paths = {"episodes": out / "episodes.parquet", "steps": out / "steps.parquet"}
    for split, rows, types in (("episodes", episode_rows(run), EPISODE_TYPES), ("steps", steps, STEP_TYPES)):
        if not rows:
            raise ValueError(f"{run_dir} has no {split} to export")
        Dataset.from_list(rows, features=features(types)).to_parquet(str(paths[split]))
    return paths
