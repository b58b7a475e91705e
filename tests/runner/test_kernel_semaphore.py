"""`runner.kernel_semaphore`: units shared through a file, given back by the kernel when a holder dies."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from pos_bench.runner.kernel_semaphore import KernelSemaphore, available

pytestmark = pytest.mark.skipif(not available(), reason="System V semaphores are Linux's here")


@pytest.fixture
def path(tmp_path: Path) -> Iterator[Path]:
    file = tmp_path / "semaphore-1"
    yield file
    try:
        KernelSemaphore(file, 1).remove()
    except OSError:
        pass


def taker(semaphore: KernelSemaphore) -> threading.Event:
    """Set once a thread, started now, has taken a unit (and given it back)."""
    got = threading.Event()

    def take() -> None:
        with semaphore.held():
            got.set()

    threading.Thread(target=take, daemon=True).start()
    return got


def taken_within(semaphore: KernelSemaphore, seconds: float) -> bool:
    return taker(semaphore).wait(seconds)


HOLD_AND_WAIT = """
import sys, time
from pathlib import Path
from pos_bench.runner.kernel_semaphore import KernelSemaphore
with KernelSemaphore(Path(sys.argv[1]), 1).held():
    print("held", flush=True)
    time.sleep(60)
"""


def test_a_holder_killed_mid_step_gives_its_unit_back(path: Path) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_AND_WAIT, str(path)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        semaphore = KernelSemaphore(path, 1)
        assert not taken_within(semaphore, 0.3)  # the other process holds the one unit
        holder.kill()
        holder.wait(10)
        assert taken_within(semaphore, 5), "the killed holder's unit was not given back"
    finally:
        holder.kill()
        holder.wait(10)


def test_processes_opening_one_file_share_one_set(path: Path) -> None:
    first = KernelSemaphore(path, 1)
    assert KernelSemaphore(path, 1).id == first.id == int(path.read_text())


def test_a_file_naming_a_set_that_is_gone_or_not_ours_gets_a_new_one(path: Path) -> None:
    gone = KernelSemaphore(path, 1)
    gone.remove()
    fresh = KernelSemaphore(path, 1)
    assert int(path.read_text()) == fresh.id
    with fresh.held():
        pass
    path.write_text("not an id")
    assert KernelSemaphore(path, 1).id == int(path.read_text()) != fresh.id
    fresh.remove()


def test_a_set_removed_while_a_run_uses_it_is_made_again(path: Path) -> None:
    semaphore = KernelSemaphore(path, 1)
    old = semaphore.id
    KernelSemaphore(path, 1).remove()  # what `ipcrm -s` does
    with semaphore.held():
        assert semaphore.id != old
    assert taken_within(KernelSemaphore(path, 1), 5)


def test_a_unit_given_back_after_its_set_was_removed_is_not_added_to_the_new_set(path: Path) -> None:
    semaphore = KernelSemaphore(path, 1)
    with semaphore.held():
        semaphore.remove()
        fresh = KernelSemaphore(path, 1)  # the next episode's gate makes a new set
    with fresh.held():  # its one unit, and no second one
        got = taker(KernelSemaphore(path, 1))
        assert not got.wait(0.3)
    assert got.wait(5)
