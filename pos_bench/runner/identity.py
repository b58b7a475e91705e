"""Run identity: the fingerprint of every setting that can change an episode's outcome, and the run folders
it selects, so episodes played under different settings are never mixed.

The identity holds the resolved bench node (without the task slice `start`/`limit`, which selects episodes but
does not change any), the content identity of every data path the bench node names, the method node, the model
node and the model's `describe()` (both without the operational fields the response cache ignores, so never a
key, a host or a concurrency cap), every per-role model, the runner fields that shape an episode, and the
pos_bench version. `n_jobs`, the backend, progress, retries, prices and the cache never enter it, nor, in an
expert run (`expert: true`: the benchmark's planner plays), any model, since none is called.

Under one `<bench>/<method>/<model>/` folder each fingerprint gets its own run folder, named after the settings
given on the command line plus a short fingerprint (`max_turns-5-3fa29c1d`); `index.json` beside them lists
every run with its settings.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from filelock import FileLock

from pos_bench import __version__
from pos_bench.models.cache import NOT_IDENTITY
from pos_bench.models.cache import identity as model_identity
from pos_bench.redact import scrub_urls
from pos_bench.types import to_jsonable

SLICE_KEYS = frozenset({"start", "limit"})
"""Bench keys that select which tasks run, never how one plays."""
PLACEMENT_KEYS = frozenset({"episode_memory_mb"})
"""Bench keys that set how many episodes run at once (`runner/memory.py`), never how one plays."""
EPISODE_RUNNER_KEYS = ("max_meta_per_turn",)
"""Runner fields that change what happens inside an episode."""
DATA_FILES_CAP = 50_000
"""Files listed per data folder; past this the folder is identified by its first files and its count."""


@dataclass(frozen=True)
class RunIdentity:
    fingerprint: str
    """sha256 of the canonical `settings`."""
    settings: Mapping[str, Any]

    @property
    def short(self) -> str:
        return self.fingerprint[:8]


def data_identity(value: Any) -> dict[str, str]:
    """Content identity of every existing path among the string values of a config node: for a file its
    size and sha256, for a folder the sha256 of its sorted (relative path, size) listing."""
    found: dict[str, str] = {}
    for text in _strings(value):
        path = Path(text).expanduser()
        if len(text) > 1 and ("/" in text or os.sep in text) and path.exists():
            found[text] = _path_digest(path)
    return found


def _strings(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _strings(v)


def _path_digest(path: Path) -> str:
    digest = hashlib.sha256()
    if path.is_file():
        with path.open("rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
        return f"file:{path.stat().st_size}:{digest.hexdigest()}"
    count = 0
    for root, dirs, files in os.walk(path):
        dirs.sort()
        for name in sorted(files):
            count += 1
            if count <= DATA_FILES_CAP:
                full = Path(root) / name
                digest.update(f"{full.relative_to(path)}\0{full.stat().st_size}\n".encode())
    return f"dir:{count}:{digest.hexdigest()}"


def run_identity(
    cfg: Mapping[str, Any], description: Mapping[str, Any], upstream: Mapping[str, Any] | None = None
) -> RunIdentity:
    """The identity of the run `cfg` describes; `description` is its model's `describe()`, `upstream` the
    benchmark's outside code (`SourcedBenchmark`), which enters only when there is one."""
    bench = {k: v for k, v in cfg["bench"].items() if k not in SLICE_KEYS | PLACEMENT_KEYS}
    roles = description.get("roles", {})
    expert = bool(cfg.get("expert", False))
    settings = {
        "bench": bench,
        "bench_data": data_identity(bench),
        "method": cfg["method"],
        "model": None
        if expert
        else {"config": model_identity(cfg["model"]), "describe": model_identity(description)},
        "roles": {
            role: {"config": model_identity(node), "describe": model_identity(roles.get(role, {}))}
            for role, node in (cfg.get("roles") or {}).items()
            if not expert
        },
        "runner": {k: (cfg.get("runner") or {}).get(k) for k in EPISODE_RUNNER_KEYS},
        "loop": dict(cfg.get("loop") or {}),
        "expert": expert,
        "version": __version__,
    }
    if upstream is not None:
        settings["upstream"] = {k: v for k, v in upstream.items() if k != "note"}
    settings = to_jsonable(settings)
    canonical = json.dumps(settings, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=repr)
    return RunIdentity(hashlib.sha256(canonical.encode("utf-8")).hexdigest(), settings)


def flatten(settings: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in settings.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            flat.update(flatten(value, f"{name}."))
        else:
            flat[name] = value
    return flat


def differing_keys(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[str]:
    """The dotted keys whose values differ between two identities' settings."""
    fa, fb = flatten(a), flatten(b)
    return sorted(k for k in fa.keys() | fb.keys() if fa.get(k, "<unset>") != fb.get(k, "<unset>"))


class RunMismatch(RuntimeError):
    """A run folder holds episodes of other settings; the message lists the differing keys."""


def folder_name(overrides: Iterable[str], short: str) -> str:
    """A readable run-folder name: the outcome-shaping command-line settings as `key-value` joined by `+`, then
    the short fingerprint (`max_turns-5+temperature-0.2-3fa29c1d`). No `=` or `,`, so the printed path can be
    pasted into any override (`model=replay model.run=<run folder>`). Folders named by older versions
    (`max_turns=5-…`) stay registered in `index.json` under their fingerprint and are resumed as they are."""
    parts = []
    for item in overrides:
        key, _, value = item.lstrip("+~").partition("=")
        name = key.split(".")[-1]
        if key.startswith(NOT_NAMING) or "." not in key and not item.startswith("+"):
            continue
        if (
            key.startswith("bench.")
            and name in SLICE_KEYS
            or key.startswith(("model.", "roles."))
            and name in NOT_IDENTITY
        ):
            continue
        parts.append(f"{name}-{value.rstrip('/').split('/')[-1]}")
    slug = re.sub(r"[^A-Za-z0-9._+-]+", "_", "+".join(sorted(parts)))[:60].strip("_+") or "default"
    return f"{slug}-{short}"


NOT_NAMING = ("runner.", "results_root", "cache.", "retry.", "prices.", "hydra.")


class RunIndex:
    """The run folders under one `<bench>/<method>/<model>/` folder, one per fingerprint, in `index.json`."""

    def __init__(self, root: Path):
        self.root = root
        self.path = root / "index.json"

    def entries(self) -> list[dict[str, Any]]:
        if not self.path.is_file():
            return []
        try:
            entries = json.loads(self.path.read_text(encoding="utf-8"))
            problem = index_problem(entries, self.root)
        except (ValueError, UnicodeError, RecursionError) as error:
            problem = f"{type(error).__name__}: {str(error)[:200]}"
        if problem:
            raise RunMismatch(
                f"{self.path} is not a run index ({problem}); nothing was run. Move it aside and rerun (the run "
                "folders beside it are kept and re-registered)."
            )
        return entries

    def folder_for(self, run: RunIdentity, overrides: Iterable[str] = ()) -> Path:
        """The folder of `run`: the one registered for its fingerprint, else a new one (registered now)."""
        self.root.mkdir(parents=True, exist_ok=True)
        with FileLock(self.root / ".index.lock"):
            entries = self.entries()
            for entry in entries:
                if entry["fingerprint"] == run.fingerprint:
                    return self.root / entry["folder"]
            # a run folder moved or copied here from another results root keeps its name
            registered = {e["folder"] for e in entries}
            folder = unregistered_run(self.root, run.fingerprint, registered) or folder_name(
                overrides, run.short
            )
            others = [
                {"folder": e["folder"], "differs_in": differing_keys(e["settings"], run.settings)[:12]}
                for e in entries
            ]
            entries.append(
                {
                    "folder": folder,
                    "fingerprint": run.fingerprint,
                    "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                    "overrides": [scrub_urls(o) for o in overrides],
                    "settings": run.settings,
                    "differs_from": others,
                }
            )
            tmp = self.path.with_suffix(".tmp")
            tmp.write_text(json.dumps(entries, indent=1, ensure_ascii=False), encoding="utf-8")
            tmp.replace(self.path)
            return self.root / folder


def unregistered_run(root: Path, fingerprint: str, registered: Iterable[str] = ()) -> str | None:
    """The name of a folder directly in `root` (not a link, not `registered` under another fingerprint) whose
    `run.json` records `fingerprint`, or None."""
    taken = set(registered)
    for folder in sorted(
        p for p in root.iterdir() if p.is_dir() and not p.is_symlink() and p.name not in taken
    ):
        try:
            recorded = json.loads((folder / "run.json").read_text(encoding="utf-8"))
        except (OSError, ValueError, UnicodeError):
            continue
        identity = recorded.get("identity") if isinstance(recorded, dict) else None
        if isinstance(identity, dict) and identity.get("fingerprint") == fingerprint:
            return folder.name
    return None


def index_problem(entries: Any, root: Path) -> str | None:
    """What is wrong with a parsed `index.json`, or None: it must be a list of entries, each with a string
    `fingerprint`, a `settings` object and a `folder` that is one plain name inside `root`."""
    if not isinstance(entries, list):
        return f"a list of runs expected, found {type(entries).__name__}"
    for number, entry in enumerate(entries, start=1):
        if not isinstance(entry, dict):
            return f"entry {number} is {type(entry).__name__}, not an object"
        fields = (("folder", str), ("fingerprint", str), ("settings", dict))
        for key, kind in fields:
            if not isinstance(entry.get(key), kind):
                return f"entry {number} has no {kind.__name__} {key!r}"
        folder = entry["folder"]
        plain = folder not in ("", ".", "..") and not any(c in folder for c in "/\\\0")
        if not plain or (root / folder).resolve().parent != root.resolve():
            return f"entry {number}'s folder {folder[:80]!r} is not a folder name inside {root}"
    return None


def check_folder(folder: Path, run: RunIdentity) -> None:
    """Refuse a run folder whose `run.json` records another fingerprint (the folder would mix settings)."""
    path = folder / "run.json"
    if not path.is_file():
        return
    try:
        recorded = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeError):
        recorded = {}
    identity = recorded.get("identity") or {}
    if identity.get("fingerprint") == run.fingerprint:
        return
    if (folder / "results.jsonl").is_file() and (folder / "results.jsonl").stat().st_size:
        keys = differing_keys(identity.get("settings") or {}, run.settings) or ["(no fingerprint recorded)"]
        raise RunMismatch(
            f"{folder} holds episodes played with other settings; they differ in: {', '.join(keys[:12])}. "
            f"Nothing was run. To start this run afresh there, move the old one aside: mv {folder} {folder}.old"
        )
