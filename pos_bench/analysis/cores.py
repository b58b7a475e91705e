"""Work over episodes' transcripts spread on every core the process may use, results in order.

Reading every line of a sweep's transcripts, as the report's episode blocks do, is most of its time at size (a
1,072-episode ALFWorld sweep: 1.1 GB, nearly all of it JSON to decode), and episodes are read independently. (The
tables read a few kinds of lines only, a few seconds over that sweep: workers saved too little there.) Workers are
forked: they import nothing and start in milliseconds; they run no thread of the parent's, only the function
given. A few items are in flight at a time, so memory holds one transcript per worker and the results not yet
taken; a caller that stops taking results (a bound reached) stops the work once those in flight are done.
"""

from __future__ import annotations

import multiprocessing
import os
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")

SPREAD_BYTES = 50e6
"""Transcripts' total size from which reading them is spread on the cores: starting the workers takes a
fraction of a second, decoding a transcript about 15 ms per MB."""


def cores() -> int:
    return len(os.sched_getaffinity(0))


def worth_spreading(transcripts: Iterable[Path]) -> bool:
    """Whether these transcripts are big enough, and the cores many enough, for workers to pay."""
    return cores() > 1 and sum(p.stat().st_size for p in transcripts if p.is_file()) >= SPREAD_BYTES


def in_order(work: Callable[[T], R], items: Sequence[T], *, spread: bool) -> Iterator[R]:
    """`work` of each item, in the items' order: here, or with `spread` in forked workers, one per core, two items
    per worker at most queued ahead."""
    if not spread:
        yield from map(work, items)
        return
    workers = cores()
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
        ahead: deque[Future[R]] = deque()
        for item in items:
            ahead.append(pool.submit(work, item))
            if len(ahead) > 2 * workers:
                yield ahead.popleft().result()
        while ahead:
            yield ahead.popleft().result()
