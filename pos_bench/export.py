"""python -m pos_bench.export PATH OUT [--format parquet|inspect]: every run at or below PATH (a run folder,
a `<bench>/<method>/<model>` folder, or a results root) exported into OUT under a stable name per run,
`<bench>__<method>__<model>[__<run folder>]`:

- `parquet` (default): a Hugging Face `datasets` dataset per run, `OUT/<name>/episodes.parquet` and
  `OUT/<name>/steps.parquet`, the way eval harnesses share samples;
- `inspect`: an inspect_ai eval log per run, `OUT/<name>.eval`, that `inspect view OUT` opens
  (see `pos_bench.analysis.inspect_log`).

Read each parquet file back as its own dataset (the two have different columns):
    datasets.load_dataset("parquet", data_files="OUT/<name>/episodes.parquet", split="train")
    datasets.load_dataset("parquet", data_files="OUT/<name>/steps.parquet", split="train")

Nested values whose shape differs per benchmark or method (task meta, usage, the method report, a step's
memory record, the prompt messages) are stored as JSON strings, so every row has the same schema.
"""

from __future__ import annotations

import argparse
import json
import math
import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from pos_bench.analysis.runs import (
    Run,
    episode_folder,
    episode_result,
    find_runs,
    load_run,
    read_json,
    read_jsonl,
)
from pos_bench.extras import MissingExtra, require


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _clean(value: Any) -> Any:
    return None if isinstance(value, float) and math.isnan(value) else value


def episode_rows(run: Run) -> list[dict[str, Any]]:
    rows = []
    recorded = {r.get("task_id"): r for r in read_jsonl(run.folder / "results.jsonl")}
    for e in run.episodes.to_dict("records"):
        full = episode_result(run.folder, recorded.get(e["task_id"], {"task_id": e["task_id"]}))
        rows.append(
            {
                "run": run.name,
                "bench": run.bench,
                "method": run.method,
                "model": run.model,
                "flags": list(run.flags),
                "fingerprint": run.fingerprint,
                "task_id": e["task_id"],
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


def step_rows(run: Run, task_id: str, events: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One row per environment step: the policy prompt and reply behind it, the step, the memory record after."""
    rows: list[dict[str, Any]] = []
    tokens: dict[str, int] = {}
    last_agent: Mapping[str, Any] = {}
    for e in events:
        kind = e.get("kind")
        if kind == "call":
            usage = e.get("usage") or {}
            role = str(e.get("role"))
            tokens[role] = (
                tokens.get(role, 0) + int(usage.get("input_tokens", 0)) + int(usage.get("output_tokens", 0))
            )
            if role == "agent":
                last_agent = e
        elif kind == "step":
            rows.append(
                {
                    "run": run.name,
                    "task_id": task_id,
                    "turn": int(e.get("turn", len(rows))),
                    "thought": str(e.get("thought", "")),
                    "action": _json(e.get("action")),
                    "observation": str((e.get("observation") or {}).get("text", "")),
                    "prompt": _json((last_agent.get("prompt") or {}).get("messages", [])),
                    "reply": str(last_agent.get("reply", "")),
                    "memory": "null",
                    "tokens": "{}",
                }
            )
        elif kind == "memory" and rows and rows[-1]["turn"] == e.get("turn"):
            rows[-1]["memory"] = _json(e.get("record"))
            rows[-1]["tokens"], tokens = _json(tokens), {}
    if rows and rows[-1]["tokens"] == "{}" and tokens:
        rows[-1]["tokens"] = _json(tokens)
    return rows


EPISODE_TYPES = {
    "run": "string",
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
            "`uv sync --extra export` (or `pip install pos_bench[export]`)"
        ) from missing

    run = load_run(run_dir)
    steps = []
    for task in run.episodes["task_id"]:
        steps += step_rows(run, task, read_jsonl(episode_folder(run_dir, task) / "events.jsonl"))
    out.mkdir(parents=True, exist_ok=True)
    paths = {"episodes": out / "episodes.parquet", "steps": out / "steps.parquet"}
    for split, rows, types in (("episodes", episode_rows(run), EPISODE_TYPES), ("steps", steps, STEP_TYPES)):
        if not rows:
            raise ValueError(f"{run_dir} has no {split} to export")
        Dataset.from_list(rows, features=features(types)).to_parquet(str(paths[split]))
    return paths


def run_stem(run_dir: Path) -> str:
    """A run's file name, the same whichever folder above it is exported: bench, method and model labels, then
    the run folder's own name when it differs from the model (a fingerprinted run folder)."""
    labels = read_json(run_dir / "run.json").get("labels") or {}
    fallback = run_dir.parts[-3:] if len(run_dir.parts) >= 3 else ("run",) * 3
    parts = [
        str(labels.get(key) or part) for key, part in zip(("bench", "method", "model"), fallback, strict=True)
    ]
    if run_dir.name != parts[-1]:
        parts.append(run_dir.name)
    return re.sub(r"[^A-Za-z0-9._=-]+", "_", "__".join(parts))


def _parquet(run_dir: Path, out: Path, stem: str) -> list[Path]:
    require("export", "datasets", what="Exporting a run as parquet")
    return list(export(run_dir, out / stem).values())


def _inspect(run_dir: Path, out: Path, stem: str) -> list[Path]:
    from pos_bench.analysis.inspect_log import write_inspect_log

    return [write_inspect_log(run_dir, out / f"{stem}.eval")]


WRITERS: dict[str, Callable[[Path, Path, str], list[Path]]] = {"parquet": _parquet, "inspect": _inspect}
"""--format → the writer of one run's files into OUT."""


def export_runs(path: Path, out: Path, fmt: str = "parquet") -> list[Path]:
    """Export every run folder at or below `path` (found as the analysis finds them); returns the files written."""
    runs = find_runs([path])
    if not runs:
        raise ValueError(f"no run folder (one holding run.json or results.jsonl) at or below {path}")
    stems = [run_stem(folder) for folder in runs]
    clash = sorted({s for s in stems if stems.count(s) > 1})
    if clash:
        raise ValueError(
            f"several runs under {path} have the same labels ({', '.join(clash)}): export them one by one"
        )
    return [
        file for folder, stem in zip(runs, stems, strict=True) for file in WRITERS[fmt](folder, out, stem)
    ]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "path", type=Path, help="a run folder, a <bench>/<method>/<model> folder or a results root"
    )
    parser.add_argument("out", type=Path, help="the folder the exported files go to")
    parser.add_argument("--format", choices=sorted(WRITERS), default="parquet", dest="fmt")
    args = parser.parse_args()
    if not args.path.is_dir():
        raise SystemExit(f"no such folder: {args.path}")
    try:
        written = export_runs(args.path, args.out, args.fmt)
    except (ValueError, MissingExtra) as error:
        raise SystemExit(str(error)) from error
    for path in written:
        print(path)


if __name__ == "__main__":
    main()
