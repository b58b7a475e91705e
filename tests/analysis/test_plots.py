"""Figure 4's data: success per context length, read from LOCA-Bench's `length` and mini-LOCA's `scale`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pos_bench.analysis.plots import per_length
from pos_bench.analysis.runs import load_run


def write_run(folder: Path, key: str, outcomes: dict[str, list[bool]], unplayed: int = 0) -> Path:
    folder.mkdir(parents=True)
    rows = []
    for length, successes in outcomes.items():
        for i, success in enumerate(successes):
            rows.append(
                {
                    "task_id": f"{length}/f/{i}",
                    "status": "done",
                    "success": success,
                    "task_meta": {key: length},
                }
            )
    rows += [
        {"task_id": f"8k/refused/{i}", "status": "error", "unplayed": "refused", "task_meta": {key: "8k"}}
        for i in range(unplayed)
    ]
    (folder / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return folder


@pytest.mark.parametrize("key", ["length", "scale"])
def test_success_per_length_in_length_order_without_refused_episodes(tmp_path, key):
    outcomes = {"16k": [True, False, False, False], "8k": [True, True, False]}
    run = load_run(write_run(tmp_path / "loca" / "raw" / "m", key, outcomes, unplayed=2))
    frame = per_length([run])
    assert list(frame["length"]) == ["8k", "16k"]
    assert list(frame["n"]) == [3, 4]  # the refused 8k episodes are not in n
    assert list(frame["success %"]) == pytest.approx([200 / 3, 25.0])
