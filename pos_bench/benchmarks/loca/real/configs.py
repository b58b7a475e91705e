"""LOCA-Bench task configurations (SPEC-BENCH §3.1): `final_<length>_set_config.json` → typed cases.

Pure reading and selection, no upstream import: it works on the staged copies in `../shared` as on a user's
checkout. A case id is `<length>/<family>/seed_<seed>`; cases keep the files' order, lengths in the order asked.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

LENGTHS = ("8k", "16k", "32k", "64k", "96k", "128k", "256k")
CLONE_URL = "https://github.com/hkust-nlp/LOCA-bench"
KNOWN_GOOD_COMMIT = "8cd474d5"
"""The upstream commit this adapter was measured on (the public snapshot's HEAD, 2026-02-14)."""
NPM_PACKAGES = (
    "@modelcontextprotocol/server-filesystem@2026.8.31",
    "@modelcontextprotocol/server-memory@2026.8.31",
)
_CLASS_SUFFIX = "S2LEnv"


@dataclass(frozen=True)
class ServerSpec:
    """One enabled MCP server of a case, as the configuration names it."""

    name: str
    type: str
    params: Mapping[str, Any]


@dataclass(frozen=True)
class CaseConfig:
    """One LOCA case: which environment class to build with which parameters, and which servers to start."""

    length: str
    family: str
    seed: int
    env_class: str
    env_params: Mapping[str, Any]
    servers: tuple[ServerSpec, ...]

    @property
    def case_id(self) -> str:
        return f"{self.length}/{self.family}/seed_{self.seed}"


def config_file(configs_dir: Path, length: str) -> Path:
    if length not in LENGTHS:
        raise ValueError(f"LOCA length must be one of {', '.join(LENGTHS)}; got {length!r}")
    return Path(configs_dir) / f"final_{length}_set_config.json"


def family_of(entry: Mapping[str, Any]) -> str:
    """The family name: the configuration's `name` without the `S2LEnv` class suffix (ABTesting, …)."""
    return str(entry["name"]).removesuffix(_CLASS_SUFFIX)


def _case(length: str, entry: Mapping[str, Any]) -> CaseConfig:
    servers = tuple(
        ServerSpec(name=name, type=str(spec["type"]), params=dict(spec.get("params", {})))
        for name, spec in entry["mcp_servers"].items()
        if spec.get("enabled", True)
    )
    return CaseConfig(
        length=length,
        family=family_of(entry),
        seed=int(entry["env_params"]["seed"]),
        env_class=str(entry["env_class"]),
        env_params=dict(entry["env_params"]),
        servers=servers,
    )


def read_cases(configs_dir: Path, length: str) -> list[CaseConfig]:
    """Every case of one length, in the file's order."""
    path = config_file(configs_dir, length)
    if not path.is_file():
        raise FileNotFoundError(f"no LOCA task configuration for {length} at {path}")
    data = json.loads(path.read_text(encoding="utf-8"))
    return [_case(length, entry) for entry in data["configurations"]]


def select(
    configs_dir: Path,
    lengths: Sequence[str],
    families: Sequence[str] | None = None,
    seeds: Sequence[int] | None = None,
) -> list[CaseConfig]:
    """The cases of `lengths` (in that order) whose family and seed are chosen (None = all), file order kept."""
    cases = [case for length in lengths for case in read_cases(configs_dir, length)]
    known_families = {c.family for c in cases}
    known_seeds = {c.seed for c in cases}
    for label, chosen, known in (("families", families, known_families), ("seeds", seeds, known_seeds)):
        unknown = sorted(set(chosen or ()) - known, key=str)
        if unknown or (chosen is not None and not chosen):
            raise ValueError(
                f"bench.{label} must be null or a non-empty list from {sorted(known, key=str)}; got {chosen}"
            )
    return [
        c
        for c in cases
        if (families is None or c.family in families) and (seeds is None or c.seed in {int(s) for s in seeds})
    ]


def missing_checkout(root: str | Path | None) -> str | None:
    """None when `root` looks like a LOCA-bench checkout, else one message saying what is missing and how to
    get it (clone, commit, Python extra, npm servers)."""
    if root is None or str(root).strip() == "":
        problem = "no LOCA-bench checkout given (set bench.root or $LOCA_BENCH_ROOT)"
    else:
        base = Path(root).expanduser()
        needed = ("gem/tools/mcp_server/config_loader.py", "task-configs", "mcp_convert")
        absent = [n for n in needed if not (base / n).exists()]
        if not absent:
            return None
        problem = f"{base} is not a LOCA-bench checkout (missing {', '.join(absent)})"
    return (
        f"bench=loca needs a LOCA-bench checkout outside this repository: {problem}. Get one with "
        f"`git clone {CLONE_URL} <dir> && git -C <dir> checkout {KNOWN_GOOD_COMMIT}` (the commit this adapter "
        f"is known to work with), then `pip install 'pos_bench[loca]'` (or `uv sync --inexact --extra loca`), install "
        f"the MCP servers with `bash scripts/loca_setup.sh` (it runs `npm install --prefix "
        f"~/.cache/pos_bench/loca-tools/npm {' '.join(NPM_PACKAGES)}` and installs pdf-tools-mcp), and run "
        f"with `bench.root=<dir>` or `LOCA_BENCH_ROOT=<dir>`."
    )
