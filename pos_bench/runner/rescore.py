"""`python -m pos_bench.runner.rescore RUN_DIR [override …]`: judge a finished run again from its transcripts.

The run's config is composed again from the overrides recorded for RUN_DIR (its `index.json` entry) plus the
ones given here, e.g. `bench.judge=llm +model@roles.benchmark_judge=qwen`. Every episode's submission is read
back from `episodes/<id>/events.jsonl` and scored by the benchmark's own scorer (`RescorableBenchmark`); no
episode is played and the policy model is never called. The new rows and summary are written beside the old
ones, named and labelled after the benchmark labels that changed (e.g. `summary.judge=qwen3.7-plus.json`);
the judge's calls go to `episodes/<id>/rescore.<tag>.jsonl`.

Exit status: 0 when every finished episode was scored again; 1 when some transcript was missing, empty or
damaged (those episodes are `error` rows naming the file in the new rows; `results.jsonl` is untouched); 2 when
nothing was scored (a refused override, an unreadable `run.json` or `results.jsonl`, a bad config).
"""

from __future__ import annotations

import json
import re
import sys
import traceback
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from hydra import compose, initialize_config_dir
from hydra.utils import instantiate
from omegaconf import OmegaConf

from pos_bench import events
from pos_bench.models.roles import build_model
from pos_bench.protocols import LabelledBenchmark, RescorableBenchmark
from pos_bench.redact import redactor_for
from pos_bench.runner.overrides import checked_overrides
from pos_bench.runner.overrides import settable as settable_overrides
from pos_bench.runner.preflight import ConfigError
from pos_bench.runner.results import ResultsError, ResultsFile
from pos_bench.runner.summary import Summary, format_table, summarize, write_summary
from pos_bench.transcript import Recorded, Transcript, find_episode
from pos_bench.types import EpisodeResult, Task, Usage

CONF = Path(__file__).resolve().parents[2] / "conf"


@dataclass(frozen=True)
class Rescored:
    summary: Summary
    results: Path
    summary_path: Path
    tag: str
    unreadable: tuple[str, ...] = ()
    """The errors of episodes whose transcript could not be read (each names its file)."""


PLACE_KEYS = ("results_root", "cache.", "report")
"""Recorded overrides that say where the recording machine kept things, not how the run played."""


def recorded_overrides(run_dir: Path) -> list[str]:
    """The command-line overrides the run folder was made with: from its `run.json`, else (a run written
    before `run.json` kept them) from its parent's `index.json`. A run no longer under its recorded results
    root (copied or moved) loses the places of `PLACE_KEYS`, so this machine's defaults serve it. The folder
    may come from anyone: every override is checked to be a plain choice or value (`overrides.checked_overrides`)."""
    path = run_dir / "run.json"
    meta = read_run_json(path) if path.is_file() else {}
    found = meta.get("overrides")
    if found is None:
        found, path = index_overrides(run_dir), run_dir.parent / "index.json"
    found = checked_overrides(found, path)
    roots = [o.partition("=")[2] for o in found if _key(o) == "results_root"]
    if roots and Path(roots[-1]).resolve() in run_dir.resolve().parents:
        return found
    return [o for o in found if not _key(o).startswith(PLACE_KEYS)]


def read_run_json(path: Path) -> dict[str, Any]:
    """A run folder's `run.json` as a mapping, or one line naming the file and what is wrong with it."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise ConfigError(f"{path} cannot be read: {error.strerror}") from None
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as error:
        raise ConfigError(f"{path} is not JSON text ({type(error).__name__})") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path} holds a JSON {type(data).__name__}, not the object a run writes")
    return data


def index_overrides(run_dir: Path) -> Any:
    index = run_dir.parent / "index.json"
    try:
        entries = json.loads(index.read_text(encoding="utf-8")) if index.is_file() else []
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as error:
        raise ConfigError(f"{index} cannot be read as JSON ({type(error).__name__})") from None
    for entry in entries if isinstance(entries, list) else []:
        if isinstance(entry, dict) and entry.get("folder") == run_dir.name:
            return entry.get("overrides", [])
    raise ConfigError(
        f"{run_dir} records no overrides in its run.json and is not registered in {index}: re-scoring needs a "
        "run made with `python -m pos_bench`"
    )


def _key(override: str) -> str:
    return override.lstrip("+~").partition("=")[0]


def merged(recorded: Sequence[str], new: Sequence[str]) -> list[str]:
    """`recorded` with every override of a key that `new` sets replaced by the new one."""
    settable = settable_overrides(new)
    replaced = {_key(o) for o in settable}
    kept = [o for o in recorded if _key(o) not in replaced and not _key(o).startswith("hydra.")]
    return kept + settable


def compose_config(overrides: Sequence[str]) -> dict[str, Any]:
    with initialize_config_dir(str(CONF), version_base="1.3"):
        cfg = compose("config", overrides=list(overrides))
    return OmegaConf.to_container(cfg, resolve=True)  # type: ignore[return-value]


def _tag(old: Mapping[str, Any], new: Mapping[str, str]) -> str:
    changed = {k: v for k, v in new.items() if old.get(k) != v} or dict(new)
    text = ",".join(f"{k}={v}" for k, v in changed.items()) or "rescored"
    return re.sub(r"[^A-Za-z0-9._=,-]+", "_", text)[:80]


def _usage(old: Mapping[str, Usage], new: Mapping[str, Usage]) -> dict[str, Usage]:
    """The episode's usage with the old scoring calls replaced by the new ones (roles the scorer used)."""
    return {**{r: u for r, u in old.items() if r not in new and r != "benchmark_judge"}, **new}


class TranscriptUnreadable(ValueError):
    """A finished episode's `events.jsonl` is missing, empty or damaged: it cannot be scored again."""


def read_transcript(path: Path) -> list[events.Event]:
    """The whole transcript of a finished episode, every line read; never a partial one.

    A finished episode's file opens with its `reset` and closes with its `score`; a file without them (emptied,
    cut short), with bytes that are not UTF-8 or with a line that is not a JSON object cannot stand for the
    episode, so scoring it would turn a missing record into a result."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise TranscriptUnreadable(f"{path} is missing") from None
    except UnicodeDecodeError as error:
        raise TranscriptUnreadable(f"{path} is not UTF-8 text (byte {error.start})") from None
    rows = []
    for number, line in enumerate(text.splitlines(), start=1):
        try:
            row = json.loads(line)
        except (json.JSONDecodeError, RecursionError):
            raise TranscriptUnreadable(f"{path} line {number} is not JSON") from None
        if not isinstance(row, dict):
            raise TranscriptUnreadable(f"{path} line {number} is not a JSON object")
        rows.append(row)
    kinds = [row.get("kind") for row in rows]
    if events.Reset.kind not in kinds or events.Score.kind not in kinds:
        raise TranscriptUnreadable(
            f"{path} is not a finished episode's transcript (no reset or no score event)"
        )
    try:
        return events.parse_all(rows)
    except (TypeError, ValueError, KeyError) as error:
        raise TranscriptUnreadable(f"{path} holds an event that cannot be read ({error})") from None


def rescore_one(
    benchmark: RescorableBenchmark, cfg: Mapping[str, Any], task: Task, old: EpisodeResult, log_path: Path
) -> EpisodeResult:
    """One episode scored again; a scorer failure or an unreadable transcript becomes an `error` row (the
    original row in `results.jsonl` is left as it was)."""
    log = Transcript(log_path, keep=False, redactor=redactor_for(cfg))
    model = Recorded(build_model(cfg), log)
    try:
        episode = read_transcript(log_path.parent / "events.jsonl")
        score = benchmark.score_transcript(task, episode, model)
        return replace(
            old,
            success=score.success,
            score=score.value,
            extras=dict(score.extras),
            usage=_usage(old.usage, model.usage),
        )
    except TranscriptUnreadable as error:
        log.write(events.Error(error=f"TranscriptUnreadable: {error}", traceback=""))
        return replace(old, status="error", success=False, score=0.0, error=f"rescore: unreadable: {error}")
    except Exception as error:  # noqa: BLE001 - the episode boundary: record it, the other episodes go on
        log.write(events.Error(error=f"{type(error).__name__}: {error}", traceback=traceback.format_exc()))
        return replace(
            old, status="error", success=False, score=0.0, error=f"rescore: {type(error).__name__}: {error}"
        )
    finally:
        log.close()


def rescore(run_dir: Path, overrides: Sequence[str]) -> Rescored:
    """Score every finished episode of `run_dir` again under the config changed by `overrides`."""
    cfg = compose_config(merged(recorded_overrides(run_dir), overrides))
    try:
        benchmark = instantiate(cfg["bench"], _convert_="all")
    except Exception as error:
        raise ConfigError(f"bench cannot be built: {type(error).__name__}: {error}") from error
    if not isinstance(benchmark, RescorableBenchmark):
        raise ConfigError(f"{type(benchmark).__name__} cannot score an episode from its transcript")
    meta = read_run_json(run_dir / "run.json")
    new_labels = dict(benchmark.labels) if isinstance(benchmark, LabelledBenchmark) else {}
    tag = _tag(meta.get("labels", {}), new_labels)
    labels = {**meta.get("labels", {}), **new_labels, "scored_from": "events.jsonl"}
    tasks = {t.id: t for t in benchmark.tasks()}
    results: list[EpisodeResult] = []
    for old in ResultsFile(run_dir / "results.jsonl").read():
        if old.status != "done":
            results.append(old)
            continue
        task = tasks.get(old.task_id, Task(old.task_id, meta=old.task_meta))
        log_path = find_episode(run_dir, old.task_id, old.trial) / f"rescore.{tag}.jsonl"
        results.append(rescore_one(benchmark, cfg, task, old, log_path))
    redactor = redactor_for(cfg)
    out = ResultsFile(run_dir / f"results.{tag}.jsonl", redactor)
    out.path.unlink(missing_ok=True)
    for result in results:
        out.append(result)
    summary = summarize(results, labels, cfg.get("prices"))
    summary_path = run_dir / f"summary.{tag}.json"
    write_summary(summary_path, summary, redactor)
    unreadable = tuple(r.error for r in results if r.error and r.error.startswith("rescore: unreadable:"))
    return Rescored(summary, out.path, summary_path, tag, unreadable)


def main(argv: Iterable[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0].startswith("-"):
        print(__doc__)
        return 2
    try:
        outcome = rescore(Path(args[0]), args[1:])
    except (ConfigError, ResultsError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(format_table([outcome.summary]))
    print(f"rescored: {outcome.summary_path} (rows: {outcome.results})")
    for error in outcome.unreadable:
        print(f"error: {error}", file=sys.stderr)
    return 1 if outcome.unreadable else 0


if __name__ == "__main__":
    raise SystemExit(main())
