"""Which overrides pos_bench takes: every key of a command line must exist, and those read back from a run
folder are data, never code.

A run folder may come from anyone (a colleague, a paper's attachment, a download). Its `run.json` and
`index.json` record the command-line overrides it was made with, and re-scoring, replay and resume compose a
config from them again. Composed unchecked, an override such as `++bench._target_=pathlib.Path.write_text` or
`model.base_url=${oc.env:OPENAI_API_KEY}` would run code or read secrets on the reader's machine. So a stored
override may only:
- choose a member of one of the project's own config groups (`bench=toy`, `+model@roles.belief=qwen`), or
- set, add or delete a plain value (string, number, boolean, null, or lists and mappings of them) under one of
  `conf/config.yaml`'s own top-level keys,
and nothing else: no `_target_`-like key (`_name_` form) at any depth, no `hydra.*`, no interpolation or
resolver (`${...}`), no sweep, no non-finite number. The first one that breaks the rule is refused with one line
naming the file and the override.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from functools import cache
from pathlib import Path
from typing import Any

from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.errors import HydraException
from omegaconf import OmegaConf

from pos_bench.runner.preflight import ConfigError

CONF = Path(__file__).resolve().parents[2] / "conf"


@cache
def _groups() -> dict[str, frozenset[str]]:
    """Config group -> its members (`conf/<group>/<member>.yaml`, nested members as `a/b`)."""
    return {
        group.name: frozenset(str(p.relative_to(group).with_suffix("")) for p in group.rglob("*.yaml"))
        for group in CONF.iterdir()
        if group.is_dir() and group.name != "hydra"
    }


EXTRA_TOP_KEYS = frozenset({"expert"})
"""Top-level keys a group member sets at the global package (`conf/method/expert.yaml`)."""


@cache
def _top_keys() -> frozenset[str]:
    """The top-level keys of the project's config (`conf/config.yaml` without `defaults`), and its groups."""
    own = OmegaConf.load(CONF / "config.yaml")
    return frozenset(k for k in own if k not in ("defaults", "hydra")) | frozenset(_groups()) | EXTRA_TOP_KEYS


def unknown_top_key(arguments: Iterable[str]) -> str | None:
    """The one-line error for a command-line override under a top-level key the config does not have
    (`runer.n_jobs=8`, `cach.mode=off`), naming the valid ones; None when every key exists. Hydra would
    otherwise add such a key silently and the setting would never reach the run."""
    for arg in arguments:
        if arg.startswith("-"):  # Hydra's own flags (-m, --cfg=job, …)
            continue
        key, sep, _ = arg.lstrip("+~").partition("=")
        top = key.partition("@")[0].split(".")[0].split("/")[0]
        if not sep and not arg.startswith("~") or top == "hydra" or top in _top_keys():
            continue
        return f"error: {arg}: no setting {top!r}; the top-level keys are: {', '.join(sorted(_top_keys()))}"
    return None


EMPTY_PATH_KEYS = ("results_root", "cache.path")


def empty_path(arguments: Iterable[str]) -> str | None:
    """The one-line error for a path setting given as an empty value (`results_root=` would write to the
    filesystem's root), or None."""
    for arg in arguments:
        key, sep, value = arg.lstrip("+~").partition("=")
        if sep and key in EMPTY_PATH_KEYS and not value.strip().strip("'\"").strip():
            return f"error: {arg}: an empty path; give a folder (e.g. {key}=results)"
    return None


def _special(key: str) -> bool:
    return len(key) > 2 and key.startswith("_") and key.endswith("_")


def _plain_problem(value: Any) -> str | None:
    """Why `value` is not plain data, or None when it is."""
    if value is None or isinstance(value, bool | int):
        return None
    if isinstance(value, float):
        return None if math.isfinite(value) else f"a non-finite number ({value})"
    if isinstance(value, str):
        return "an interpolation or resolver (${...})" if "${" in value else None
    if isinstance(value, list):
        return next((p for p in map(_plain_problem, value) if p), None)
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str) or _special(key) or "${" in key:
                return f"a special key ({key!r})"
            if problem := _plain_problem(item):
                return problem
        return None
    return f"a {type(value).__name__}, not a plain value"


def _problem(override: Any) -> str | None:
    """Why one parsed override may not be taken from a run folder, or None when it may."""
    key: str = override.key_or_group
    if override.is_sweep_override():
        return "a sweep, not one value"
    if key == "hydra" or key.startswith("hydra.") or (override.package or "").startswith("hydra"):
        return "Hydra's own settings"
    if any(_special(part) for part in key.split(".")) or any(
        _special(part) for part in (override.package or "").split(".")
    ):
        return "a special key (_target_ and the like): only plain values may be set"
    groups = _groups()
    if key in groups and not override.is_delete():
        value = override.value()
        if not isinstance(value, str) or value not in groups[key]:
            return f"not one of the project's {key} configs"
        return None
    if key.split(".")[0] not in _top_keys():
        return f"no such setting (top-level keys: {', '.join(sorted(_top_keys()))})"
    return None if override.is_delete() else _plain_problem(override.value())


def checked_overrides(overrides: Any, source: Path) -> list[str]:
    """`overrides` as read from `source` (a run folder's file), when every one is a plain choice or value.

    Raises:
        ConfigError: one line naming `source` and the first override refused, and why.
    """
    if not isinstance(overrides, list) or not all(isinstance(o, str) for o in overrides):
        raise ConfigError(
            f"{source}: `overrides` must be a list of strings, found {type(overrides).__name__}"
        )
    parser = OverridesParser.create()
    for text in overrides:
        try:
            (parsed,) = parser.parse_overrides([text])
        except HydraException as error:
            raise ConfigError(f"{source}: override {text!r} cannot be read: {error}") from None
        if problem := _problem(parsed):
            raise ConfigError(
                f"{source}: override {text!r} refused: {problem}; a run folder is data, never code"
            )
    return list(overrides)


KEY_OVERRIDE = re.compile(r"^[A-Za-z_][\w-]*(\.[\w-]+)+=")
"""A plain `a.b=value` on the command line."""


def settable(arguments: list[str]) -> list[str]:
    """Command-line arguments with every plain `a.b=value` turned into `++a.b=value` (set or add), so any key a
    constructor takes is settable without `+`; a misspelt key is then caught by the pre-flight check, which
    names the valid ones. Group choices (`model=openai`), `hydra.*` keys and prefixed overrides are kept."""
    return [
        f"++{arg}" if KEY_OVERRIDE.match(arg) and not arg.startswith("hydra.") else arg for arg in arguments
    ]
