"""Play a sweep against the stand-in endpoint and print what it cost the harness: wall time against the limit
the endpoint allows, client CPU per call, memory, files and processes over time, transcript bytes, the time to
build the tables and the report, and the estimate against the measured calls and tokens (issue 44; the options,
the figures and how to run the full-size check: docs/fullsize.md; the code: pos_bench/fullsize/).

    python scripts/bench_fullsize.py +experiment=table1_alfworld --jobs 16
    python scripts/bench_fullsize.py +experiment=table1_clindiag method=raw,pos --jobs 16
    python scripts/bench_fullsize.py bench=toy method=raw,pos bench.limit=2 --jobs 2     # a small look
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pos_bench.fullsize.__main__ import main

if __name__ == "__main__":
    sys.exit(main())
