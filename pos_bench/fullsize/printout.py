"""The full-size check's figures per run, and the printout of the whole sweep."""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pos_bench.fullsize.processes import Sample, cpu_between
from pos_bench.fullsize.record import EnvCost, Episode, Run, env_cpu, per_episode, slots
from pos_bench.fullsize.sweep import Built, Played
from pos_bench.runner.pool import one_episode_per_process
from pos_bench.standin.service import ServiceModel, service_bound

MB = 1e6


@dataclass(frozen=True)
class RunFigures:
    label: str
    episodes: int
    errors: int
    calls: int
    cache_hits: int
    wall: float
    """From the first episode's start to the last one's end."""
    cpu: float
    """CPU seconds the driver and workers used over that span (from the samples)."""
    service: float
    env: EnvCost
    """The environments' CPU played again alone (`env_cpu`): what the limit divides by the cores."""
    cores: int
    env_played: float | None = None
    """The environments' CPU where the run played (`Episode.env_cpu`, summed); None when a transcript lacks it
    or the run played several episodes per process (`threaded`). Above `env` by what sharing the cores cost them
    (their steps interrupted, their caches cold)."""
    local: float = 0.0
    """The CPU of the method's own model where the run played (PACE's encoder, `Episode.local_cpu`): compute
    the method needs on these cores, as an environment's steps are, so it joins them in the limit."""
    threaded: bool = False
    """The run played several episodes in each process (`runner.backend` threading or ray). A transcript's CPU
    figures are then the whole process's (`Step.cpu_seconds`, `Call.cpu_seconds`: every thread's CPU while the
    step or call was under way), so they hold the other episodes' work too and are not the episode's."""

    @property
    def env_in_cpu(self) -> float:
        """The part of `cpu` that was the environments': as measured where they played, when it was."""
        return self.env.seconds if self.env_played is None else self.env_played

    @property
    def limit(self) -> float:
        return max(self.service, (self.env.seconds + self.local) / self.cores)

    @property
    def client_ms_per_call(self) -> float:
        """The harness's own CPU per model call while the run played: its CPU less the environments' and the
        method's own model's."""
        return (self.cpu - self.env_in_cpu - self.local) / max(self.calls, 1) * 1e3


def run_figures(
    run: Run, model: ServiceModel, samples: Sequence[Sample], *, cores: int, env_sample: int
) -> RunFigures:
    start = min((e.started for e in run.episodes), default=0.0)
    end = max((e.ended for e in run.episodes), default=0.0)
    threaded = played_in_threads(run.config)
    return RunFigures(
        label=run.label,
        episodes=len(run.rows),
        errors=sum(row.get("status") == "error" for row in run.rows),
        calls=run.calls,
        cache_hits=sum(e.cache_hits for e in run.episodes),
        wall=end - start,
        cpu=cpu_between(samples, start, end),
        service=service_bound([e.calls for e in run.episodes], slots(run.config), model),
        env=env_cpu(run, env_sample),
        cores=cores,
        env_played=None
        if threaded or any(e.env_cpu is None for e in run.episodes)
        else sum(e.env_cpu for e in run.episodes),
        local=sum(e.local_cpu for e in run.episodes),
        threaded=threaded,
    )


def played_in_threads(config: Mapping[str, Any]) -> bool:
    """Whether a run's processes each played several episodes at once: every backend but loky's one episode
    per process (`pos_bench.runner.pool.one_episode_per_process`)."""
    return not one_episode_per_process(str((config.get("runner") or {}).get("backend", "loky")))


def drift(samples: Sequence[Sample], ends: Sequence[float]) -> tuple[int, float, float]:
    """Mean driver RSS while the first k episodes ran and while the last k did (k ≤ 100, half the episodes);
    the summary and tables built after the last episode are left out."""
    ends = sorted(ends)
    k = min(100, max(len(ends) // 2, 1))
    first = [s.driver_rss for s in samples if s.time <= ends[k - 1]] or [samples[0].driver_rss]
    last = [s.driver_rss for s in samples if ends[-k] <= s.time <= ends[-1]]
    if not last:  # the last episodes ended between two samples: the sample just before the last end
        last = [next((s for s in reversed(samples) if s.time <= ends[-1]), samples[-1]).driver_rss]
    return k, statistics.fmean(first), statistics.fmean(last)


def files_drift(samples: Sequence[Sample], ends: Sequence[float], k: int) -> tuple[int, int]:
    """The driver's most open files while the first k episodes ran and while the last k did."""
    ends = sorted(ends)
    first = [s.driver_files for s in samples if s.time <= ends[k - 1]] or [samples[0].driver_files]
    last = [s.driver_files for s in samples if ends[-k] <= s.time <= ends[-1]] or [samples[-1].driver_files]
    return max(first), max(last)


def timeline(samples: Sequence[Sample], points: int = 10) -> str:
    """The driver's RSS, the workers' together and the largest worker's, at up to `points` moments."""
    step = max(len(samples) // points, 1)
    return ", ".join(
        f"{s.time - samples[0].time:.0f}s {s.driver_rss / MB:.0f}/{s.workers_rss / MB:.0f}/"
        f"{s.worker_rss_max / MB:.0f}"
        for s in samples[::step]
    )


def printout(
    model: ServiceModel,
    played: Played,
    stats: Mapping[str, Any],
    runs: Sequence[Run],
    figures: Sequence[RunFigures],
    prediction: Mapping[str, tuple[float, float, float]],
    built: Built | None,
    estimate_failed: str = "",
) -> str:
    episodes = [e for run in runs for e in run.episodes]
    lines = [
        *header_lines(model, played, stats, figures),
        "",
        *run_table(figures),
        "",
        *pace_lines(played, figures, episodes),
        *memory_lines(played, episodes),
        *server_lines(runs),
        *transcript_lines(episodes),
    ]
    if built is not None:
        lines.append(
            f"tables {built.tables_s:.1f} s, report {built.report_s:.1f} s ({built.report_bytes / MB:.2f} MB) "
            "over the sweep" + "".join(f"; FAILED {f}" for f in built.failed)
        )
        if built.browser:
            lines.append(built.browser)
    return "\n".join([*lines, "", *estimate_lines(runs, prediction, estimate_failed)])


def header_lines(
    model: ServiceModel, played: Played, stats: Mapping[str, Any], figures: Sequence[RunFigures]
) -> list[str]:
    cached = stats["cached_tokens"] / max(stats["prompt_tokens"], 1)
    return [
        (
            f"full-size check: {len(figures)} runs, {sum(f.episodes for f in figures)} episodes, "
            f"{sum(f.errors for f in figures)} errors, {sum(f.calls for f in figures):,} calls "
            f"({sum(f.cache_hits for f in figures):,} from the response cache); sweep exit {played.code}"
        ),
        (
            f"stand-in: {model.tokens_per_s:g} tok/s alone, {model.batch_tokens_per_s:g} tok/s batch, prefill "
            f"{model.prefill_tokens_per_s:g} tok/s, first token {model.first_token_s:g} s, batch ≤ {model.max_batch}"
        ),
        (
            f"stand-in served {stats['answered']:,} of {stats['requests']:,} requests ({stats['streamed']:,} "
            f"streamed; {stats['refused_429']} × 429, "
            f"{stats['failed_5xx']} × 500, {stats['client_gone']} left by their client), at most "
            f"{stats['max_in_flight']} in flight, {cached:.0%} of prompt tokens cached; its own CPU "
            f"{stats['cpu_seconds']:.1f} s"
        ),
    ]


def run_table(figures: Sequence[RunFigures]) -> list[str]:
    """One row per run; the `local_s` column (a method's own model computing in the workers) only when a run
    has one."""
    local = any(f.local for f in figures)
    head = (
        f"{'run':<28} {'eps':>5} {'err':>4} {'calls':>7} {'wall_s':>8} {'service_s':>9} {'env_cpu_s':>9} "
        f"{'env_run_s':>9} {'local_s'.rjust(8) + ' ' if local else ''}"
        f"{'limit_s':>8} {'wall/limit':>10} {'client_ms/call':>14}"
    )
    rows = [
        f"{f.label:<28} {f.episodes:>5} {f.errors:>4} {f.calls:>7} {f.wall:>8.1f} {f.service:>9.1f} "
        f"{f.env.seconds:>9.1f} {'-' if f.env_played is None else f'{f.env_played:.1f}':>9} "
        f"{f'{f.local:>8.1f} ' if local else ''}"
        f"{f.limit:>8.1f} {f.wall / f.limit if f.limit else 0:>10.2f} {f.client_ms_per_call:>14.2f}"
        for f in figures
    ]
    cores = figures[0].cores if figures else 1
    compute = "(env CPU + local) " if local else "env CPU "
    note = (
        f"(limit = max(service bound, {compute}/ {cores} cores); env CPU from "
        f"{sum(f.env.sampled for f in figures)} episodes replayed alone; env_run = the env CPU where the run "
        "played, from its transcripts; "
        + ("local = the method's own model's CPU where the run played (PACE's encoder); " if local else "")
        + "client = driver and workers' CPU over the run's span less env_run (env CPU where it is missing)"
        + (" and local" if local else "")
        + ", per call)"
    )
    if any(f.threaded for f in figures):
        note += "; a run played in threads has no env_run: a step's CPU where it played holds the other threads' too"
        if any(f.threaded and f.local for f in figures):
            note += ", as its local does"
    return [head, *rows, note]


def pace_lines(played: Played, figures: Sequence[RunFigures], episodes: Sequence[Episode]) -> list[str]:
    limit = sum(f.limit for f in figures)
    wall = sum(f.wall for f in figures)
    calls = sum(f.calls for f in figures)
    harness = sum(f.cpu - f.env_in_cpu - f.local for f in figures)
    in_calls = [cpu for e in episodes for cpu in e.in_call_cpu]
    if any(f.threaded for f in figures):
        inside = (
            "not per call: the episodes played in threads, so a call's figure holds the other threads' CPU"
        )
    elif in_calls:
        inside = f"median {statistics.median(in_calls) * 1e3:.2f} ms, mean {statistics.fmean(in_calls) * 1e3:.2f} ms"
    else:
        inside = "none recorded"
    return [
        (
            f"wall: runs {wall:.1f} s against the limit {limit:.1f} s ({wall / limit if limit else 0:.2f}×); the "
            f"whole sweep {played.wall:.1f} s (start-up, pre-flight and summaries included)"
        ),
        (
            f"client CPU per call: {harness / max(calls, 1) * 1e3:.2f} ms over the runs' spans; the whole sweep "
            f"{played.cpu:.1f} CPU-s (start-up included); inside the calls (Call.cpu_seconds) {inside}"
        ),
    ]


def transcript_lines(episodes: Sequence[Episode]) -> list[str]:
    files = [e.files for e in episodes]
    sizes = [sum(f.values()) for f in files]
    if not sizes:
        return []
    names = sorted({name for f in files for name in f})
    parts = ", ".join(f"{n} {statistics.fmean(f.get(n, 0) for f in files) / 1e3:.1f}" for n in names)
    return [
        (
            f"transcripts per episode: mean {statistics.fmean(sizes) / 1e3:.1f} kB, max {max(sizes) / 1e3:.1f} kB "
            f"(mean kB: {parts}); all episodes {sum(sizes) / MB:.1f} MB"
        )
    ]


def memory_lines(played: Played, episodes: Sequence[Episode]) -> list[str]:
    samples = played.samples
    if not samples:
        return ["memory: no samples (the sweep ended before the first)"]
    ends = [e.ended for e in episodes] or [samples[-1].time]
    k, first, last = drift(samples, ends)
    files_first, files_last = files_drift(samples, ends, k)
    peak = max(samples, key=lambda s: s.workers_rss)
    return [
        (
            f"driver RSS: peak {max(s.driver_rss for s in samples) / MB:.0f} MB; while the first {k} episodes ran "
            f"{first / MB:.0f} MB, the last {k} {last / MB:.0f} MB ({(last - first) / first:+.0%})"
        ),
        (
            f"child processes (workers and their helpers): at most {max(s.workers for s in samples)}, one at most "
            f"{max(s.worker_rss_max for s in samples) / MB:.0f} MB, together at most {peak.workers_rss / MB:.0f} MB"
        ),
        f"RSS over time (s: driver/all workers/largest worker MB): {timeline(samples)}",
        (
            f"open files: driver at most {max(s.driver_files for s in samples)} (at most {files_first} while the "
            f"first {k} episodes ran, {files_last} while the last {k} did; {samples[-1].driver_files} at the end), "
            f"workers together at most {max(s.workers_files for s in samples)}; "
            f"child processes left running 5 s after the sweep: {len(played.left_running)}"
            + "".join(f"\n  still running: {line}" for line in played.left_running)
        ),
    ]


def server_lines(runs: Sequence[Run]) -> list[str]:
    """What each episode's own servers took (LOCA's score extras `servers`, `servers_rss_mb`), when recorded."""
    lines = []
    for run in runs:
        extras = [row.get("extras") or {} for row in run.rows]
        sizes = [
            float(e["servers_rss_mb"]) for e in extras if isinstance(e.get("servers_rss_mb"), int | float)
        ]
        counts = [int(e["servers"]) for e in extras if isinstance(e.get("servers"), int)]
        if sizes:
            lines.append(
                f"servers per episode ({run.label}): {statistics.fmean(counts) if counts else 0:.1f} processes, "
                f"RSS mean {statistics.fmean(sizes):.0f} MB, max {max(sizes):.0f} MB over {len(sizes)} episodes"
            )
    return lines


def estimate_lines(
    runs: Sequence[Run], prediction: Mapping[str, tuple[float, float, float]], failed: str = ""
) -> list[str]:
    """The estimate's calls and tokens per episode beside the measured ones; `failed`, why no estimate was taken."""
    lines = [
        "per episode: estimate → measured (ratio)"
        + (f"; the estimate failed before the sweep: {failed}" if failed else ""),
        f"{'run':<28} {'calls':>24} {'tokens in':>30} {'tokens out':>26}",
    ]
    for run in runs:
        measured = per_episode(run.rows)
        guess = prediction.get(run.label)
        if guess is None:
            lines.append(f"{run.label:<28} (no estimate for this run)")
            continue
        cells = [
            f"{g:,.0f} → {m:,.0f} ({m / g if g else float('nan'):.2f})"
            for g, m in zip(guess, measured, strict=True)
        ]
        lines.append(f"{run.label:<28} {cells[0]:>24} {cells[1]:>30} {cells[2]:>26}")
    return lines
