"""Every server of an episode is gone after its worker is killed (issue 44): a server launched through the
tether (`tether.py`) dies with the thread that launched it, as the episode's fastmcp servers are launched from
the episode's event-loop thread. Checked with a real SIGKILL of a worker process, beside the same launch
without the tether, whose servers outlive the kill (so the test can tell)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pos_bench.benchmarks.loca.real.servers import tethered
from pos_bench.fullsize.processes import children, footprint

SERVER = [sys.executable, "-c", "import time; time.sleep(600)"]

WORKER = """
import os, subprocess, sys, threading, time, json
argv = json.loads(sys.argv[1])
env = {**os.environ, "POS_BENCH_TETHER_PARENT": str(os.getpid())}  # as servers.tether_environ sets it
pids = []
def launch():  # the episode's event-loop thread: it launches the servers and stays up
    for _ in range(2):
        pids.append(subprocess.Popen(argv, env=env).pid)
    time.sleep(600)
threading.Thread(target=launch, daemon=True).start()
while len(pids) < 2:
    time.sleep(0.01)
print(" ".join(map(str, pids)), flush=True)
time.sleep(600)
"""


def running(pid: int) -> bool:
    """Alive and not a zombie waiting to be reaped."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def servers_after_a_kill(argv: list[str]) -> list[int]:
    import json

    worker = subprocess.Popen(
        [sys.executable, "-c", WORKER, json.dumps(argv)], stdout=subprocess.PIPE, text=True
    )
    pids = [int(p) for p in worker.stdout.readline().split()]
    assert len(pids) == 2 and all(running(p) for p in pids)
    os.kill(worker.pid, signal.SIGKILL)
    worker.wait()
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and any(running(p) for p in pids):
        time.sleep(0.05)
    return [p for p in pids if running(p)]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_tethered_servers_die_with_a_killed_worker_and_untethered_ones_do_not():
    assert servers_after_a_kill(tethered(SERVER)) == []
    survivors = servers_after_a_kill(SERVER)
    try:
        assert len(survivors) == 2  # without the tether they are orphans, adopted and still running
    finally:
        for pid in survivors:
            os.kill(pid, signal.SIGKILL)


def test_a_tether_whose_launcher_is_already_gone_does_not_start_the_server():
    from pos_bench.benchmarks.loca.real.servers import tether_environ

    named = tether_environ({"PATH": os.environ["PATH"]})
    assert named["POS_BENCH_TETHER_PARENT"] == str(os.getpid())
    stale = {**named, "POS_BENCH_TETHER_PARENT": "1"}  # a launcher other than the tether's parent
    server = tethered([sys.executable, "-c", "print('served')"])
    done = subprocess.run(server, env=stale, capture_output=True, text=True, check=False)
    assert done.returncode == 1 and "served" not in done.stdout
    show = tethered([sys.executable, "-c", "import os; print(os.environ.get('POS_BENCH_TETHER_PARENT'))"])
    served = subprocess.run(show, env=named, capture_output=True, text=True, check=False)
    assert served.returncode == 0 and served.stdout.strip() == "None"  # the server does not see the name


def test_the_tether_adds_no_process_it_becomes_the_server():
    server = subprocess.Popen(tethered(SERVER))
    try:
        time.sleep(0.5)
        assert b"time.sleep(600)" in Path(f"/proc/{server.pid}/cmdline").read_bytes()
        parent = int(Path(f"/proc/{server.pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        assert parent == os.getpid()  # no tether process in between
    finally:
        server.kill()
        server.wait()


def test_the_footprint_counts_the_servers_started_since_and_their_memory():
    before = children()
    started = [subprocess.Popen(SERVER) for _ in range(2)]
    try:
        time.sleep(0.3)
        count, rss_mb = footprint(before)
        assert count == 2 and 2 < rss_mb < 500
    finally:
        for server in started:
            server.kill()
            server.wait()
    assert footprint(before) == (0, 0.0)
