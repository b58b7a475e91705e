"""Episodes in flight that the machine's memory allows, for benchmarks whose episodes start servers of their own
(LOCA-Bench: each case's MCP servers; `bench.episode_memory_mb`).

Before the first episode, `runner.n_jobs` is compared with the memory available now (`MemAvailable`, less a
fifth kept free); when fewer episodes fit, the run plays that many at once and says so in one line. The figure per
episode is the benchmark's setting; a run records what each episode's servers really took (LOCA: the score extras
`servers` and `servers_rss_mb`), so it can be set from a first run (`pos_bench.fullsize.processes.footprint`).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from pos_bench.runner.pool import Placement

KEEP_FREE = 0.2
"""Share of the available memory left to everything else (the driver, the model cache, the system)."""


def available_mb(meminfo: Path = Path("/proc/meminfo")) -> float | None:
    """`MemAvailable` in MB, or None where the kernel does not say."""
    try:
        for line in meminfo.read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024 / 1e6
    except (OSError, ValueError, IndexError):
        return None
    return None


def episodes_that_fit(wanted: int, episode_mb: float, free_mb: float) -> int:
    return max(1, min(wanted, math.floor(free_mb * (1 - KEEP_FREE) / episode_mb)))


def fitted(
    placement: Placement, bench: Mapping[str, Any], free_mb: float | None = None
) -> tuple[Placement, str]:
    """The placement with `n_jobs` lowered to what memory allows, and the line saying so (empty when unchanged
    or when the benchmark sets no memory per episode)."""
    episode_mb = bench.get("episode_memory_mb")
    if not isinstance(episode_mb, int | float) or episode_mb <= 0:
        return placement, ""
    free_mb = available_mb() if free_mb is None else free_mb
    wanted = placement.n_jobs if placement.n_jobs > 0 else os.cpu_count() or 1
    if free_mb is None:
        return placement, ""
    fit = episodes_that_fit(wanted, float(episode_mb), free_mb)
    if fit >= wanted:
        return placement, ""
    line = (
        f"runner: {fit} episodes in flight, not {wanted}: each needs about {episode_mb:g} MB for its servers "
        f"(bench.episode_memory_mb) and {free_mb:,.0f} MB are available ({KEEP_FREE:.0%} kept free)"
    )
    return replace(placement, n_jobs=fit), line
