"""Quiet consoles on real LOCA-Bench: a run's terminal shows pos_bench's own lines and the progress bar only.

Its MCP servers' workers log at INFO and its dependencies warn about their own deprecations, in the driver (the
pre-flight check lists the tasks and imports them) and in the workers; those lines belong in the run's `run.log`.
Skipped without a checkout (`LOCA_BENCH_ROOT`), like every real LOCA test.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from pos_bench.runner.logs import RUN_LOG
from tests.conftest import REPO

ROOT = os.environ.get("LOCA_BENCH_ROOT")
pytestmark = pytest.mark.skipif(
    not ROOT,
    reason="real LOCA-Bench needs a LOCA-bench checkout: set LOCA_BENCH_ROOT (see docs/how-to/loca-setup.md)",
)
OWN_STDOUT = re.compile(r"^(run folder: |results: |note: | *bench +method | *loca +raw )")
"""pos_bench's own printed lines: the run folder, the summary table's header and row, its note, the results."""
PROGRESS = re.compile(r"^episodes: ")


def test_a_loca_runs_terminal_has_only_pos_bench_lines_and_its_log_has_the_dependencies(tmp_path):
    cmd = [
        sys.executable,
        "-m",
        "pos_bench",
        "bench=loca",
        "bench.families=[CanvasListTest,ABTesting]",
        "bench.seeds=[42]",
        "bench.max_turns=3",
        f"bench.work_dir={tmp_path / 'work'}",
        "bench.cache_dir=null",
        "method=raw",
        "model=scripted",
        "runner.backend=loky",
        "runner.n_jobs=2",
        f"results_root={tmp_path / 'results'}",
    ]
    out = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=900, check=False)
    assert out.returncode == 0, out.stderr[-3000:]
    stdout = [line for line in out.stdout.splitlines() if line.strip()]
    stderr = [line for line in re.split(r"[\r\n]", out.stderr) if line.strip()]
    assert [line for line in stdout if not OWN_STDOUT.match(line)] == []
    assert [line for line in stderr if not PROGRESS.match(line)] == []
    assert any(line.startswith(" loca") for line in stdout)  # the table is there: the run played
    (log,) = (tmp_path / "results").glob(f"loca/raw/scripted/*/{RUN_LOG}")
    dependencies = [
        line for line in log.read_text().splitlines() if " pos_bench" not in line.split("[pid")[0]
    ]
    assert dependencies, "the dependencies' lines were dropped, not moved to run.log"
