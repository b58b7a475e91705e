"""inspect task arguments as pos_bench settings: `-T method=pos -T bench.limit=2 -T method.sentinel.enabled=false`
are the Hydra overrides `method=pos ++bench.limit=2 ++method.sentinel.enabled=false`, composed from `conf/` with
Hydra's compose API, so a task plays the config `python -m pos_bench` would play with the same arguments.

What differs inside inspect: the model is inspect's (`model=inspect`, its name the sample's model), inspect
retries the calls (pos_bench's retry policy makes one attempt), and the response cache is off unless
`-T cache.mode=…` turns it on (inspect counts only the calls that reach it; it has a cache of its own).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

from pos_bench.runner.overrides import checked_overrides

GROUPS = ("method",)
"""Task arguments that choose a config group member rather than set a value."""
FIXED = ("bench", "model")
"""Groups the task itself chooses (the benchmark is the task, the model is inspect's)."""
PLAIN = re.compile(r"[A-Za-z0-9_./:@+-]+")

INSPECT_DEFAULTS = (
    "model=inspect",
    "++model.name=null",
    "++model.max_retries=null",
    "++model.timeout=null",
    "++retry.max_attempts=1",
    "cache.mode=off",
    "runner.progress=false",
    "runner.check_endpoints=false",
)
"""Overrides every task starts from (before its own arguments, which may change them)."""


def hydra_value(value: Any) -> str:
    """A task argument's value in Hydra's override grammar."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return json.dumps(value)
    if isinstance(value, str):
        if PLAIN.fullmatch(value) and value.lower() not in ("null", "true", "false"):
            return value
        return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
    if isinstance(value, list | tuple):
        return "[" + ",".join(hydra_value(v) for v in value) + "]"
    if isinstance(value, Mapping):
        return "{" + ",".join(f"{k}:{hydra_value(v)}" for k, v in value.items()) + "}"
    raise ValueError(f"a task argument must be plain data, got {type(value).__name__}")


def overrides(args: Mapping[str, Any]) -> list[str]:
    """Task arguments as Hydra overrides: a group (`method`) is chosen, any other key set or added."""
    out = []
    for key, value in args.items():
        if key in FIXED:
            raise ValueError(
                f"-T {key}=… cannot be set: the benchmark is the task you run and the model is inspect's "
                "(--model); set their keys instead, e.g. -T bench.limit=2"
            )
        out.append(f"{key}={hydra_value(value)}" if key in GROUPS else f"++{key}={hydra_value(value)}")
    return out


def compose_config(bench: str, args: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The resolved config of `bench` with the task's arguments, and the overrides it was composed from (which
    pass the same check as a run folder's: plain values and the project's own groups only)."""
    from pos_bench.estimate import compose

    composed = [f"bench={bench}", *INSPECT_DEFAULTS, *overrides(args)]
    checked_overrides(composed, source=Path("-T"))
    cfg = compose(composed)
    plain = OmegaConf.to_container(cfg, resolve=True)
    assert isinstance(plain, dict)
    return plain, composed
