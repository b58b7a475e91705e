"""An OpenAI-compatible stand-in endpoint on 127.0.0.1 that answers at the pace of a vLLM-like deployment, with
schema-valid replies (issue 44; the model, its parameters and their sources: docs/fullsize.md).

    python scripts/standin_server.py --port 8000                        # an 8B model on one data-centre GPU
    python scripts/standin_server.py --port 8000 --tokens-per-s 15 --batch-tokens-per-s 40   # a laptop
    python scripts/standin_server.py --port 8000 --rate-429 0.01 --rate-5xx 0.01

then play against it with `model=vllm model.base_url=http://127.0.0.1:8000/v1 model.model=standin`.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pos_bench.standin.command import main

if __name__ == "__main__":
    sys.exit(main())
