"""Each episode's steps as a packed block of its own (`pack`), for the report's page, within a byte bound, packed
on every core the process may use once the transcripts are big enough to pay for it (`analysis.cores`).

Packing an episode reads its whole transcript, and decoding every line's JSON is most of a report's time at size
(a 1,072-episode ALFWorld sweep: 1.1 GB of transcripts, about 14 s of one core). The blocks come back in the
episodes' order, and packing stops at the first block past the bound, as it does one episode at a time, so the
blocks embedded are the first episodes' whichever way they were packed.
"""

from __future__ import annotations

import base64
import gzip
import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from pos_bench import events
from pos_bench.analysis.cores import in_order, worth_spreading
from pos_bench.report.episodes import Strings, turns


def pack(data: Any) -> str:
    """JSON → gzip → base64, inflated in the page by the browser's DecompressionStream."""
    raw = json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return base64.b64encode(gzip.compress(raw, compresslevel=6, mtime=0)).decode("ascii")


def pack_episode(path: Path) -> str:
    """One episode's steps (`turns`), its texts interned within its block; one event in memory at a time."""
    strings = Strings()
    return pack({"turns": turns(events.read(path), strings), "strings": strings.items})


def packed(paths: Sequence[Path]) -> Iterator[str]:
    """`pack_episode` of each path, in order, spread on the cores when the transcripts are big enough."""
    return in_order(pack_episode, paths, spread=worth_spreading(paths))


class Blocks:
    """The packed steps of episodes, one block each in the order they were added, within a byte bound: the
    blocks embedded are the first that fit, and from the first that does not, no later episode's is."""

    def __init__(self, max_bytes: float):
        self.max_bytes = max_bytes
        self.paths: list[Path] = []
        self.items: list[str] = []

    def add(self, path: Path) -> int:
        """Queue an episode's transcript; its block's index once `pack` has run (see `index`)."""
        self.paths.append(path)
        return len(self.paths) - 1

    def pack(self) -> None:
        size = 0
        stream = packed(self.paths)
        try:
            for block in stream:
                if size + len(block) > self.max_bytes:
                    break  # the bound is reached: no later episode is packed either
                self.items.append(block)
                size += len(block)
        finally:
            stream.close()

    def index(self, added: int) -> int | None:
        """The block of the episode `add` numbered `added`, or None when it is past the bound."""
        return added if added < len(self.items) else None

    @property
    def left_out(self) -> int:
        return len(self.paths) - len(self.items)
