"""Cost of PoS's plain-Python bookkeeping per step (gap identity, snapshot index, projection, distances,
health, diagnosis) on synthetic worlds of growing size, with K = 8.

    .venv/bin/python scripts/bench_pos.py [--sizes 50 200 1000] [--steps 40]

Prints wall and CPU milliseconds per step for each world size (CPU time is the fairer figure on a shared
machine) and how the cost grows between sizes.
"""

from __future__ import annotations

import argparse
import random
import time

from pos_bench.pos.gaps import Gap, GapIds, GapPointer, select_active_gap, stabilise
from pos_bench.pos.health import HealthTransition, Snapshot, TrappingConfig, assess, window_of


def synthetic_world(n_records: int, rng: random.Random, step: int) -> dict:
    """About a third each of entities, states and relations; one state changes per step."""
    n = max(1, n_records // 3)
    ents = {f"e{i}": {"entity_id": f"e{i}", "entity_type": "object", "name": f"thing {i}"} for i in range(n)}
    states = {
        f"s{i}": {
            "state_id": f"s{i}",
            "entity_id": f"e{i}",
            "description": f"thing {i} is in place {i % 7}",
            "probability": 1.0,
            "reason": None,
            "source_type": "observed",
        }
        for i in range(n)
    }
    moved = rng.randrange(n)
    states[f"s{moved}"]["description"] = f"thing {moved} moved at step {step}"
    rels = {
        f"r{i}": {
            "relation_id": f"r{i}",
            "source_id": f"e{i}",
            "target_id": f"e{(i + 1) % n}",
            "description": "next to",
            "probability": 1.0,
            "reason": None,
            "source_type": "observed",
        }
        for i in range(n_records - 2 * n)
    }
    return {"entities": ents, "states": states, "relations": rels}


def run(size: int, steps: int) -> tuple[float, float]:
    rng = random.Random(size)
    config = TrappingConfig(window_size=8, max_cycle_length=4)
    gaps = [Gap(target=f"find where thing {i} is", reason="unseen") for i in range(4)]
    worlds = [synthetic_world(size, rng, s) for s in range(steps)]  # built outside the timer: the LLM's job
    ids, transitions, snapshots, memo = GapIds(), [], {}, {}
    active = GapPointer(gap_type="epistemic", target=gaps[0].target)
    started, cpu = time.perf_counter(), time.process_time()
    for step, world in enumerate(worlds):
        current = stabilise([Gap(target=g.target + " now", reason=g.reason) for g in gaps], gaps)
        active = select_active_gap(active, None, {"epistemic": current, "achievement": []})
        e_ids = ids.reconcile("epistemic", current)
        snapshots[step] = Snapshot(step, world, tuple(e_ids), memo=memo)
        transitions.append(HealthTransition(step, 0, None, "look", "", False, False, progress=step % 3 == 0))
        assess(
            window_of(transitions, snapshots, 8), {"gap_type": "epistemic", **current[0].model_dump()}, config
        )
    wall, used = time.perf_counter() - started, time.process_time() - cpu
    return wall * 1000 / steps, used * 1000 / steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[50, 200, 1000])
    parser.add_argument("--steps", type=int, default=40)
    args = parser.parse_args()
    previous = None
    print(f"{'records':>8} {'wall ms':>9} {'cpu ms':>8} {'growth (cpu / records)':>24}")
    for size in args.sizes:
        wall, cpu = run(size, args.steps)
        growth = f"{cpu / previous[1]:.1f}x / {size / previous[0]:.0f}x" if previous else "-"
        print(f"{size:>8} {wall:>9.2f} {cpu:>8.2f} {growth:>24}")
        previous = (size, cpu)


if __name__ == "__main__":
    main()
