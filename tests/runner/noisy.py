"""The toy benchmark whose environment logs like a dependency does (an MCP server's worker at INFO and
WARNING, a deprecation warning) and like pos_bench does, once per step, and when its tasks are listed before the run starts: for the quiet-console test."""

from __future__ import annotations

import logging
import warnings

from pos_bench.benchmarks.toy import ToyBenchmark, ToyEnv
from pos_bench.types import Action, Observation

DEPENDENCY = logging.getLogger("mcp.server.lowlevel.worker")
OWN = logging.getLogger("pos_bench.tests.noisy")


class NoisyEnv(ToyEnv):
    def step(self, action: Action) -> Observation:
        DEPENDENCY.info("NOISY-INFO processing request of type CallToolRequest")
        DEPENDENCY.warning("NOISY-WARNING worker pool is almost full")
        warnings.warn("NOISY-DEPRECATION this argument will be removed", FutureWarning, stacklevel=1)
        OWN.warning("OWN-LINE a pos_bench record")
        return super().step(action)


class NoisyBenchmark(ToyBenchmark):
    def tasks(self):
        """Asked by the pre-flight check, before the run folder exists: a dependency logs and warns here too."""
        DEPENDENCY.info("NOISY-EARLY a server started to list its tools")
        warnings.warn("NOISY-EARLY-DEPRECATION this module is deprecated", UserWarning, stacklevel=1)
        return super().tasks()

    def make_env(self, model) -> NoisyEnv:
        return NoisyEnv(self.text_version)
