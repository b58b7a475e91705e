"""How well PACE's relevance encoder tells steps that bear on a goal from steps that do not (SPEC-BASE §5.4).

    .venv/bin/python scripts/pace_encoder_margin.py [PAIRS_JSON] [--hashing]

PAIRS_JSON holds {"pairs": [{"goal", "step", "relevant"}, ...]} (default: the test fixture
tests/baselines/pace/relevance_pairs.json). Prints the mean cosine of each kind and their margin for the
default encoder (MiniLM, the `pace` extra) or, with --hashing, the unit tests' hashing encoder.
Exits 1 when the margin is below 0.15.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from baselines.pace.encoder import HashingEncoder, MiniLMEncoder, relevance_margin

FIXTURE = Path(__file__).resolve().parents[1] / "tests" / "baselines" / "pace" / "relevance_pairs.json"
REQUIRED = 0.15


def main(argv: list[str]) -> int:
    paths = [a for a in argv if not a.startswith("--")]
    pairs = json.loads(Path(paths[0] if paths else FIXTURE).read_text(encoding="utf-8"))["pairs"]
    encoder = HashingEncoder() if "--hashing" in argv else MiniLMEncoder()
    result = relevance_margin(encoder, pairs)
    print(json.dumps(dict(encoder.describe()), ensure_ascii=False))
    print(
        f"pairs {result.pairs}: relevant {result.relevant:.3f}  irrelevant {result.irrelevant:.3f}  "
        f"margin {result.margin:.3f} (required ≥ {REQUIRED})"
    )
    return 0 if result.margin >= REQUIRED else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
