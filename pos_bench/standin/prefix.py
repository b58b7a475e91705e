"""The stand-in's prefix cache: how many of a prompt's tokens a vLLM-like server would not read again.

Like vLLM's automatic prefix caching, a prompt is cut into blocks of `block_tokens`; a block is reused when
the same block, after the same earlier blocks, was read before and is still held. Blocks are dropped least
recently used first once more than `capacity_tokens` are held (the KV cache's spare room). Only whole
blocks count, and the last prompt token is always read again (the server needs its logits).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence


class PrefixCache:
    def __init__(self, capacity_tokens: int = 400_000, block_tokens: int = 16):
        if capacity_tokens < 0:
            raise ValueError(f"capacity_tokens must be ≥ 0, got {capacity_tokens}")
        if block_tokens < 1:
            raise ValueError(f"block_tokens must be ≥ 1, got {block_tokens}")
        self.capacity_blocks = capacity_tokens // block_tokens
        self.block_tokens = block_tokens
        self._blocks: OrderedDict[int, None] = OrderedDict()

    def read(self, tokens: Sequence[int]) -> int:
        """The prompt `tokens` were read: returns how many of them came from the cache, and keeps their
        blocks for later prompts."""
        size = self.block_tokens
        reusable = max(len(tokens) - 1, 0) // size
        cached, chain, hit = 0, 0, True
        for start in range(0, len(tokens) - len(tokens) % size, size):
            chain = hash((chain, tuple(tokens[start : start + size])))
            if hit and start // size < reusable and chain in self._blocks:
                cached += size
                self._blocks.move_to_end(chain)
                continue
            hit = False
            self._blocks[chain] = None
            self._blocks.move_to_end(chain)
        while len(self._blocks) > self.capacity_blocks:
            self._blocks.popitem(last=False)
        return cached

    @property
    def held_tokens(self) -> int:
        return len(self._blocks) * self.block_tokens
