"""`runner.env_slots`: at most N environment steps at once on a host, across threads and processes."""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path

import pytest

from pos_bench.benchmarks.toy import ToyBenchmark
from pos_bench.protocols import local_compute, playing_under
from pos_bench.runner import kernel_semaphore
from pos_bench.runner.env_slots import EnvSlots, env_gate, host_cores
from pos_bench.runner.preflight import RunnerConfig


def most_at_once(intervals: list[tuple[float, float]]) -> int:
    edges = sorted([(start, 1) for start, _ in intervals] + [(end, -1) for _, end in intervals])
    now = most = 0
    for _, change in edges:
        now += change
        most = max(most, now)
    return most


KERNEL_OR_FILES = pytest.mark.parametrize(
    "kernel",
    [
        pytest.param(
            True, id="kernel", marks=pytest.mark.skipif(not kernel_semaphore.available(), reason="no semget")
        ),
        pytest.param(False, id="lock-files"),
    ],
)


@pytest.fixture(autouse=True)
def sets_removed(tmp_path: Path) -> Iterator[None]:
    """The kernel's semaphore sets a test made in its folder are removed after it (they outlive processes)."""
    yield
    for file in tmp_path.glob("semaphore-*"):
        with contextlib.suppress(OSError, ValueError):
            kernel_semaphore.KernelSemaphore(file, int(file.name.split("-")[1])).remove()


def hold(folder: str, count: int, seconds: float, kernel: bool = True) -> tuple[float, float]:
    with EnvSlots(count, Path(folder), kernel=kernel).held():
        started = time.monotonic()
        time.sleep(seconds)
        return started, time.monotonic() - 0.005  # the release itself is after this: leave it a margin


@KERNEL_OR_FILES
def test_threads_of_one_process_take_at_most_the_slots(tmp_path: Path, kernel: bool) -> None:
    with ThreadPoolExecutor(6) as pool:
        intervals = list(pool.map(lambda _: hold(str(tmp_path), 2, 0.2, kernel), range(6)))
    assert most_at_once(intervals) == 2


@KERNEL_OR_FILES
def test_processes_take_at_most_the_slots(tmp_path: Path, kernel: bool) -> None:
    with ProcessPoolExecutor(5) as pool:
        intervals = list(pool.map(hold, [str(tmp_path)] * 5, [3] * 5, [0.3] * 5, [kernel] * 5))
    assert most_at_once(intervals) == 3
    # five holds of 0.3 s through three slots take two rounds, not one and not five
    span = max(end for _, end in intervals) - min(start for start, _ in intervals)
    assert 0.55 < span < 1.2


@KERNEL_OR_FILES
def test_a_waiting_step_takes_whichever_slot_is_given_back(tmp_path: Path, kernel: bool) -> None:
    # two of three slots stay taken for the whole test; a step waiting while all three are taken gets the third
    # as soon as its holder gives it back, three times over (a waiter bound to one slot chosen at random gets it
    # all three times with a chance of 1 in 27)
    slots = EnvSlots(3, tmp_path, kernel=kernel)
    end = threading.Event()

    def hold_until(event: threading.Event, taken: threading.Event) -> None:
        with slots.held():
            taken.set()
            event.wait(30)

    def step(got: threading.Event) -> None:
        with slots.held():
            got.set()

    held_for_good = [threading.Event() for _ in range(2)]
    try:
        for taken in held_for_good:
            threading.Thread(target=hold_until, args=(end, taken), daemon=True).start()
            assert taken.wait(5)
        for _ in range(3):
            give_back, taken, got = threading.Event(), threading.Event(), threading.Event()
            threading.Thread(target=hold_until, args=(give_back, taken), daemon=True).start()
            assert taken.wait(5)
            waiter = threading.Thread(target=step, args=(got,), daemon=True)
            waiter.start()
            assert not got.wait(0.2)  # every slot is taken
            give_back.set()
            assert got.wait(5), "the waiting step did not take the slot given back"
            waiter.join(5)
    finally:
        end.set()


def test_a_step_ends_cleanly_when_the_waiter_it_rings_has_just_left(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the head of the line stops listening between the ending step's opening the bell and its ringing it (seen
    # in two of 134 ALFWorld episodes: the episode ended with BrokenPipeError)
    slots = EnvSlots(1, tmp_path, kernel=False)
    assert slots.bell is not None
    head = os.open(slots.bell, os.O_RDWR | os.O_NONBLOCK)
    real_open = os.open

    def open_then_head_leaves(path: str, flags: int, *args: int) -> int:
        fd = real_open(path, flags, *args)
        if path == slots.bell:
            os.close(head)
        return fd

    monkeypatch.setattr(os, "open", open_then_head_leaves)
    with slots.held():
        pass
    monkeypatch.undo()
    with slots.held():  # and the slot was given back
        pass


def test_a_waiting_step_gets_its_slot_where_there_can_be_no_bell(tmp_path: Path) -> None:
    (tmp_path / "bell-1").write_text(
        ""
    )  # a plain file where the named pipe would be, as on a file system without one
    slots = EnvSlots(1, tmp_path, kernel=False)
    assert slots.bell is None
    give_back, taken, got = threading.Event(), threading.Event(), threading.Event()

    def hold() -> None:
        with slots.held():
            taken.set()
            give_back.wait(30)

    def step() -> None:
        with slots.held():
            got.set()

    threading.Thread(target=hold, daemon=True).start()
    assert taken.wait(5)
    threading.Thread(target=step, daemon=True).start()
    assert not got.wait(0.2)
    give_back.set()
    assert got.wait(5)


@KERNEL_OR_FILES
def test_a_slot_is_given_back_when_the_step_fails(tmp_path: Path, kernel: bool) -> None:
    slots = EnvSlots(1, tmp_path, kernel=kernel)
    with pytest.raises(RuntimeError), slots.held():
        raise RuntimeError("the step failed")
    done = threading.Event()

    def take() -> None:
        with slots.held():
            done.set()

    threading.Thread(target=take, daemon=True).start()
    assert done.wait(5)


def open_descriptors(folder: Path) -> int:
    """This process's descriptors of files in `folder` (other tests' threads may be closing theirs meanwhile)."""
    found = 0
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):
            found += os.readlink(f"/proc/self/fd/{fd}").startswith(str(folder))
    return found


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="counts descriptors through /proc")
def test_a_take_whose_give_back_raised_leaves_the_thread_its_descriptors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pos_bench.runner import env_slots

    slots = EnvSlots(2, tmp_path, kernel=False)
    with slots.held():
        pass
    before = open_descriptors(tmp_path)

    def broken(line: int) -> bool:
        raise OSError("flock failed")

    monkeypatch.setattr(env_slots, "someone_waits", broken)
    with pytest.raises(OSError, match="flock failed"), slots.held():
        pass
    monkeypatch.undo()
    for _ in range(5):  # not a nested take each time, opening descriptors of its own
        with slots.held():
            assert open_descriptors(tmp_path) == before
    assert open_descriptors(tmp_path) == before


def test_a_thread_keeps_its_descriptors_between_steps_and_a_nested_take_gets_its_own(tmp_path: Path) -> None:
    slots = EnvSlots(2, tmp_path, kernel=False)
    with slots.held():
        pass
    before = open_descriptors(tmp_path)
    for _ in range(50):
        with slots.held():
            pass
    assert open_descriptors(tmp_path) == before == 3  # two slots and the line
    with slots.held():  # the outer take holds one slot, the nested one the other: a third finds none
        with slots.held():
            got = threading.Event()

            def third() -> None:
                with slots.held():
                    got.set()

            other = threading.Thread(target=third, daemon=True)
            other.start()
            assert not got.wait(0.3)
        assert got.wait(5)  # the nested take gave its slot back, and only its own
    other.join(5)
    # the nested take's and the ended thread's are closed; the process's bell, opened when a step first waited,
    # stays open
    assert open_descriptors(tmp_path) == before + 1


def test_a_step_given_back_with_nobody_waiting_rings_no_bell(tmp_path: Path) -> None:
    slots = EnvSlots(1, tmp_path, kernel=False)
    assert slots.bell is not None
    listener = os.open(slots.bell, os.O_RDWR | os.O_NONBLOCK)
    try:
        with slots.held():
            pass
        with pytest.raises(BlockingIOError):
            os.read(listener, 16)
    finally:
        os.close(listener)


class Computing(ToyBenchmark):
    compute_bound = True


def test_the_default_limits_only_a_compute_bound_benchmark() -> None:
    computing = env_gate(None, Computing())
    assert isinstance(computing.__self__, EnvSlots)  # type: ignore[attr-defined]
    assert computing.__self__.count == host_cores()  # type: ignore[attr-defined]
    assert env_gate(None, ToyBenchmark()) is contextlib.nullcontext
    assert env_gate(0, Computing()) is contextlib.nullcontext
    assert env_gate(3, ToyBenchmark()).__self__.count == 3  # type: ignore[attr-defined]


def test_alfworld_says_its_steps_compute() -> None:
    from pos_bench.benchmarks.alfworld.benchmark import AlfWorldBenchmark

    assert AlfWorldBenchmark.compute_bound is True


def test_a_negative_setting_is_refused() -> None:
    with pytest.raises(ValueError, match="runner.env_slots must be ≥ 0"):
        RunnerConfig(env_slots=-1)


def test_local_compute_holds_the_gate_of_the_episode_being_played_and_none_outside_one() -> None:
    taken = []

    @contextlib.contextmanager
    def gate():
        taken.append(threading.get_ident())
        yield

    with local_compute():
        pass
    assert taken == []
    with playing_under(gate):
        with local_compute():
            pass
        other = threading.Thread(
            target=lambda: local_compute().__enter__()
        )  # another thread: not this episode
        other.start()
        other.join()
    with local_compute():
        pass
    assert taken == [threading.get_ident()]
