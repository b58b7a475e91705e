"""python -m pos_bench.export PATH OUT [--format parquet|inspect]: every run at or below PATH (a run folder,
a `<bench>/<method>/<model>` folder, or a results root) exported into OUT under a stable name per run,
`<bench>__<method>__<model>[__<run folder>]`:

- `parquet` (default): a Hugging Face `datasets` dataset per run, `OUT/<name>/episodes.parquet` and
  `OUT/<name>/steps.parquet`, the way eval harnesses share samples;
- `inspect`: an inspect_ai eval log per run, `OUT/<name>.eval`, that `inspect view OUT` opens
  (see `pos_bench.export.inspect_log`).

Read each parquet file back as its own dataset (the two have different columns):
    datasets.load_dataset("parquet", data_files="OUT/<name>/episodes.parquet", split="train")
    datasets.load_dataset("parquet", data_files="OUT/<name>/steps.parquet", split="train")

Nested values whose shape differs per benchmark or method (task meta, usage, the method report, a step's
memory record, the prompt messages) are stored as JSON strings, so every row has the same schema.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable
from pathlib import Path

from pos_bench.analysis.runs import find_runs, read_json
from pos_bench.events import DamagedFile
from pos_bench.export.parquet import export
from pos_bench.extras import MissingExtra, require


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
    from pos_bench.export.inspect_log import write_inspect_log

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
        prog="python -m pos_bench.export",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
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
    except DamagedFile as error:
        print(f"error: {error}", file=sys.stderr)
        raise SystemExit(2) from None
    except (ValueError, MissingExtra) as error:
        raise SystemExit(str(error)) from error
    for path in written:
        print(path)


if __name__ == "__main__":
    main()
