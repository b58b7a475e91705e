"""Imported by the forkserver process when it starts (`forkserver.py`): imports the run's modules there, once,
for every worker forked from it. What they made is then moved out of the garbage collector's sight
(`gc.freeze`): a worker's collections neither walk it nor write to it, so its memory stays shared with the
server."""

import gc
import os

from pos_bench.runner.pool.forkserver import PRELOAD_VARIABLE, preload

preload(os.environ.get(PRELOAD_VARIABLE, ""))
gc.collect()
gc.freeze()
