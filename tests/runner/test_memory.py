"""Episodes in flight limited to what memory allows (`runner/memory.py`), said before the first episode."""

from __future__ import annotations

from pathlib import Path

from pos_bench.runner.memory import available_mb, episodes_that_fit, fitted
from pos_bench.runner.pool import Placement


def test_a_benchmark_with_servers_gets_as_many_episodes_as_fit_and_a_line_saying_so():
    placement, line = fitted(Placement(n_jobs=16), {"episode_memory_mb": 1000}, free_mb=5000)
    assert placement.n_jobs == 4  # 5000 MB less a fifth, 1000 MB each
    assert line.startswith("runner: 4 episodes in flight, not 16") and "bench.episode_memory_mb" in line


def test_nothing_changes_when_everything_fits_or_no_memory_is_declared():
    assert fitted(Placement(n_jobs=4), {"episode_memory_mb": 100}, free_mb=5000) == (Placement(n_jobs=4), "")
    assert fitted(Placement(n_jobs=64), {}, free_mb=10) == (Placement(n_jobs=64), "")


def test_at_least_one_episode_runs_and_all_cores_count_as_wanted():
    assert episodes_that_fit(8, 10_000, 500) == 1
    placement, line = fitted(Placement(n_jobs=-1), {"episode_memory_mb": 1e9}, free_mb=100)
    assert placement.n_jobs == 1 and line


def test_available_memory_is_read_from_meminfo(tmp_path: Path):
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal:       16000000 kB\nMemAvailable:    8000000 kB\n")
    assert available_mb(meminfo) == 8000000 * 1024 / 1e6
    assert available_mb(tmp_path / "absent") is None
    assert available_mb() is None or available_mb() > 0
