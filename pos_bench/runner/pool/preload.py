"""Imported by the forkserver process when it starts (`forkserver.py`): imports the run's modules there, once,
for every worker forked from it."""

import os

from pos_bench.runner.pool.forkserver import PRELOAD_VARIABLE, preload

preload(os.environ.get(PRELOAD_VARIABLE, ""))
