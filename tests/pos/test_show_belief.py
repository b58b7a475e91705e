"""scripts/show_belief.py renders a played episode's belief trajectory from its files."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from pos_bench.benchmarks.toy import ToyBenchmark
from pos_bench.loop import play
from pos_bench.pos.method import Pos
from pos_bench.transcript import Recorded, Transcript, write_result

from .test_episode import scenario

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "show_belief.py"


def test_renders_statuses_health_and_tokens(tmp_path):
    spec = importlib.util.spec_from_file_location("show_belief", SCRIPT)
    show = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(show)
    bench = ToyBenchmark(n_tasks=1, max_turns=10)
    log = Transcript(tmp_path / "events.jsonl")
    model = Recorded(scenario().model(), log)
    method = Pos(model, trapping={"window_size": 4, "max_cycle_length": 2})
    result = play(
        bench.tasks()[0], bench.make_env(model), method, model, brief=bench.brief, max_turns=10, log=log
    )
    log.close()
    write_result(tmp_path / "result.json", result)
    text = show.render(tmp_path, worlds=True)
    assert "belief update: repaired" in text and "belief update: rejected" in text
    assert "recovery directive:" in text and "H=0.00" in text
    assert "sentinel_progress" in text and "Active Gap:" in text
    (tmp_path / "result.json").unlink()
    unfinished = show.render(tmp_path, worlds=False)
    assert "belief update: rejected" in unfinished and "outcome: none yet" in unfinished
