"""The full-size check (issue 44): a sweep played against the stand-in endpoint (`pos_bench.standin`), and what
it cost the harness (`python -m pos_bench.fullsize`, `scripts/bench_fullsize.py`; docs/fullsize.md).

- `sweep.py`: the stand-in and the sweep in child processes, the estimate before, the tables and report after;
- `processes.py`: the sweep's processes sampled while it plays;
- `record.py`: what the run folders recorded, and the environments' CPU;
- `printout.py`: the figures and the printout.
"""
