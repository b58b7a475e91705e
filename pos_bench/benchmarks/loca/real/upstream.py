"""Which LOCA-bench a run used: the checkout's commit and whether its task configurations are the staged ones.

The commit comes from git (`git rev-parse HEAD`), or, for a copy that is not a git checkout (an unpacked
archive, the PoS release's vendored folder), from a file `UPSTREAM_COMMIT` at its root holding the hash. The
task configurations (`task-configs/final_<length>_set_config.json`, the seven lengths) are compared by digest
with the copies staged for this project (`../shared/benchmarks/loca/task-configs`, recorded in
`STAGED_CONFIGS_SHA256`), so a run says whether it played the same 525 cases.
"""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

from pos_bench.benchmarks.loca.real.configs import CLONE_URL, LENGTHS
from pos_bench.types import Upstream

KNOWN_COMMITS = {
    "8cd474d5efdf36c8c95555165ba0965e0496e48f": "the public snapshot's HEAD (2026-02-14), validated here",
    "8b6fac49d9edd92922593e703b74ea255357c3ec": "vendored by the PoS release; not in the public history",
}
STAGED_CONFIGS_SHA256 = "518b25e11ef4551d2d7ef7bf7a57034e93a619de71182673ca6723e05bfdf8eb"
"""`configs_digest` of the staged task configurations (equal to those of 8cd474d5)."""
COMMIT_FILE = "UPSTREAM_COMMIT"


def checkout_commit(root: Path) -> str | None:
    """The checkout's HEAD commit, else the hash in its `UPSTREAM_COMMIT` file, else None."""
    try:
        out = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
            timeout=30,
        )
        if out.stdout.strip():
            return out.stdout.strip()
    except (subprocess.CalledProcessError, FileNotFoundError, subprocess.TimeoutExpired):
        pass
    recorded = Path(root) / COMMIT_FILE
    text = recorded.read_text(encoding="utf-8").strip() if recorded.is_file() else ""
    return text.split()[0] if text else None


def configs_digest(configs_dir: Path) -> str | None:
    """sha256 over (file name, sha256 of its bytes) of the seven `final_*` configuration files; None when one
    is missing."""
    digest = hashlib.sha256()
    for length in LENGTHS:
        path = Path(configs_dir) / f"final_{length}_set_config.json"
        if not path.is_file():
            return None
        digest.update(f"{path.name}\0{hashlib.sha256(path.read_bytes()).hexdigest()}\n".encode())
    return digest.hexdigest()


def identify(root: Path, configs_dir: Path) -> Upstream:
    """The checkout's identity; `note` is set (and worth printing) when the commit is not one of ours."""
    commit = checkout_commit(root)
    digest = configs_digest(configs_dir)
    match = None if digest is None else digest == STAGED_CONFIGS_SHA256
    known = commit in KNOWN_COMMITS
    note = ""
    if not known:
        note = (
            f"LOCA-bench checkout {root} is at {commit or 'an unknown commit (no git, no UPSTREAM_COMMIT file)'}, "
            f"not one of the known commits ({', '.join(c[:8] for c in KNOWN_COMMITS)}); its task configurations "
            f"{'equal' if match else 'differ from'} the staged ones. The run goes on; results may not compare."
        )
    return Upstream(
        repository=CLONE_URL,
        commit=commit,
        known=known,
        about=KNOWN_COMMITS.get(commit or "", ""),
        configs_match=match,
        configs_digest=digest,
        note=note,
    )
