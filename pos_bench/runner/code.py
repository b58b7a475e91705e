"""The code an episode runs on, recorded in `run.json` beside the fingerprint (never inside it, so a folder
written before this record existed still resumes into the same place).

The record is a sha256 per source file of the files that shape an episode: the loop, prompting, parsing, the
structured-output and type records, the benchmarks, PoS, the model clients and the baseline methods. Analysis,
report and runner-only files do not count. The git commit is added when the tree is clean (for reading only;
the comparison uses the file hashes).
"""

from __future__ import annotations

import hashlib
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pos_bench.runner.identity import RunMismatch

REPO = Path(__file__).resolve().parents[2]
EPISODE_CODE = (
    "pos_bench/loop.py",
    "pos_bench/prompting.py",
    "pos_bench/parse.py",
    "pos_bench/structured.py",
    "pos_bench/types.py",
    "pos_bench/benchmarks",
    "pos_bench/pos",
    "pos_bench/models",
    "baselines",
)
"""Files and folders (every `.py` below them) whose code shapes an episode, relative to the repository."""


@dataclass(frozen=True)
class CodeRecord:
    files: Mapping[str, str]
    """Repository-relative path → sha256 of its bytes."""
    commit: str | None = None
    """The git commit, when the work tree is clean; else None."""
    digest: str = field(default="")
    """sha256 over the sorted (path, hash) pairs: one value naming this code."""

    def as_json(self) -> dict[str, Any]:
        return {"digest": self.digest, "commit": self.commit, "files": dict(self.files)}


class CodeChanged(RunMismatch):
    """The run folder's episodes ran on other code; the message names the changed files."""


def code_record(root: Path = REPO) -> CodeRecord:
    """Hash every episode-shaping source file under `root`."""
    files: dict[str, str] = {}
    for entry in EPISODE_CODE:
        path = root / entry
        paths = [path] if path.is_file() else sorted(path.rglob("*.py")) if path.is_dir() else []
        for source in paths:
            files[source.relative_to(root).as_posix()] = hashlib.sha256(source.read_bytes()).hexdigest()
    return CodeRecord(files, clean_commit(root), combined(files))


def combined(files: Mapping[str, str]) -> str:
    return hashlib.sha256("".join(f"{p}\0{h}\n" for p, h in sorted(files.items())).encode()).hexdigest()


def clean_commit(root: Path) -> str | None:
    """HEAD's commit when `git status` shows nothing changed; None outside git or with local edits."""
    try:
        status = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
            check=False,
            capture_output=True,
            text=True,
            timeout=20,
        )
        if status.returncode or status.stdout.strip():
            return None
        head = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"],
            check=False,
            capture_output=True,
            text=True,
            timeout=20,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return head.stdout.strip() or None if head.returncode == 0 else None


def changed_files(recorded: Mapping[str, str], current: Mapping[str, str]) -> list[str]:
    """Files added, removed or edited between two records."""
    return sorted(p for p in recorded.keys() | current.keys() if recorded.get(p) != current.get(p))


def check_code(recorded: Mapping[str, Any] | None, current: CodeRecord, *, allow_change: bool) -> list[str]:
    """Compare the code recorded in a run folder's `run.json` with the code here. Returns the changed files
    (empty when the same). Raises `CodeChanged` (one line) when they differ and `allow_change` is false."""
    if not recorded or not isinstance(recorded.get("files"), Mapping):
        return []
    changed = changed_files(recorded["files"], current.files)
    if changed and not allow_change:
        shown = ", ".join(changed[:8]) + (f" and {len(changed) - 8} more" if len(changed) > 8 else "")
        raise CodeChanged(
            f"the episodes in this run folder ran on other code; changed: {shown}. Nothing was run. Restore "
            "that code, or continue with runner.allow_code_change=true (recorded in run.json code_history)."
        )
    return changed
