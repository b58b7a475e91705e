import signal
import threading
import time

import pytest

from pos_bench.runner import RunInterrupted, run, stop
from tests.runner.test_run import RAW, config, lines


def test_a_stop_whose_keyboard_interrupt_python_lost_still_ends_the_run_within_a_tick(tmp_path, monkeypatch):
    monkeypatch.setattr(stop, "RECEIVED", [])
    cfg = config(method=RAW, n_tasks=40)
    cfg["model"]["delay"] = 0.05
    results = tmp_path / "results.jsonl"

    def signal_arrives_but_its_interrupt_is_swallowed():
        while not (results.is_file() and results.read_text().strip()):
            time.sleep(0.02)
        stop.RECEIVED.append(signal.SIGINT)  # what the handler records before its raise is lost

    threading.Thread(target=signal_arrives_but_its_interrupt_is_swallowed, daemon=True).start()
    with pytest.raises(RunInterrupted, match="episodes are saved"):
        run(cfg, tmp_path, {"bench": "toy", "method": "raw"})
    assert 1 <= len(lines(results)) < 40
    assert stop.exit_code() == 130


def test_sigterm_exits_143_and_ctrl_c_130(monkeypatch):
    monkeypatch.setattr(stop, "RECEIVED", [signal.SIGTERM])
    assert stop.exit_code() == 143
    monkeypatch.setattr(stop, "RECEIVED", [signal.SIGINT])
    assert stop.exit_code() == 130
