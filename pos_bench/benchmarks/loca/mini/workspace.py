"""mini-LOCA case files: the generated case record, the per-episode workspace on disk (JSON-DB files and
the agent's folder), paging of large results, the changed-files manifest and the tools every family shares
(filesystem and claim_done).

Layout of a materialised case: `local_db/<service>.json` holds the services' state (the tools read and
write it) and `agent_workspace/` is the folder the `fs_` tools see as `/workspace`. The ground truth never
touches the disk: it stays in the `Case` record, outside every path a tool can reach.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from pos_bench.benchmarks.guards import cap
from pos_bench.benchmarks.loca.mini.generation import compact
from pos_bench.benchmarks.loca.mini.tools import Tool, ToolError

VIRTUAL_ROOT = "/workspace"
PAGE_CHARS = 30_000
"""A listing page stops growing past this many characters (≈ 7.5k tokens) and says where to continue."""
OBSERVATION_CHARS = 40_000
"""Any other tool result longer than this is cut, with a notice."""
ASK_LESS = "Ask for less at a time (a narrower query, a smaller limit or a later offset)."


@dataclass(frozen=True)
class Case:
    """One generated case: services' state, the agent's starting files, the instruction and the answer."""

    family: str
    seed: int
    scale: str
    instruction: str
    db: Mapping[str, Any]
    """Service name → JSON-ready state, written to `local_db/<name>.json`."""
    files: Mapping[str, str]
    """Path under `/workspace` → text, the agent's starting files."""
    truth: Mapping[str, Any]
    env_tokens: int
    """cl100k tokens of the services' records as the listing tools render them (compact JSON)."""

    def rendered(self) -> dict[str, bytes]:
        """Every file of the case, path under the case root → bytes (deterministic)."""
        out = {
            f"local_db/{name}.json": json.dumps(data, indent=1, ensure_ascii=False).encode()
            for name, data in sorted(self.db.items())
        }
        out.update({f"agent_workspace/{p}": text.encode() for p, text in sorted(self.files.items())})
        return out


def page(items: Sequence[Any], offset: int, limit: int, *, max_limit: int = 200) -> str:
    """A page of `items` as compact JSON with `total` and `next_offset` (null at the end).

    The page also stops at `PAGE_CHARS` characters (always at least one item), so one result stays readable;
    this replaces the artifact-file rule of SPEC-BENCH §3.4, which needs a python_execute tool."""
    if offset < 0 or not 1 <= limit <= max_limit:
        raise ToolError(f"offset must be ≥ 0 and limit between 1 and {max_limit}; got {offset}, {limit}")
    chosen: list[Any] = []
    size = 0
    for item in items[offset : offset + limit]:
        size += len(compact(item)) + 2
        if chosen and size > PAGE_CHARS:
            break
        chosen.append(item)
    end = offset + len(chosen)
    body = {
        "total": len(items),
        "offset": offset,
        "returned": len(chosen),
        "next_offset": end if end < len(items) else None,
        "items": chosen,
    }
    if len(chosen) < min(limit, len(items) - offset):
        body["note"] = f"page cut at {PAGE_CHARS} characters; continue with offset={end}"
    return compact(body)


@dataclass(frozen=True)
class Verdict:
    passed: bool
    reason: str
    """What matched or the first difference found, shown after claim_done."""


@dataclass(frozen=True)
class Family:
    """One task family: its generator, its service tools and its rule-based checker."""

    name: str
    generate: Callable[[int, str], Case]
    """(seed, scale) → case; deterministic, and the answer does not depend on scale."""
    tools: tuple[Tool, ...]
    check: Callable[[Workspace], Verdict]
    """Compares the workspace's files and DB state with `workspace.case.truth`."""


class Workspace:
    """A materialised case on disk. Tools read and write it only through these methods."""

    def __init__(self, root: Path, case: Case):
        self.root = root
        self.case = case
        for rel, data in case.rendered().items():
            path = root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        (root / "agent_workspace").mkdir(exist_ok=True)

    @property
    def agent_dir(self) -> Path:
        return self.root / "agent_workspace"

    def load(self, service: str) -> Any:
        return json.loads((self.root / "local_db" / f"{service}.json").read_text(encoding="utf-8"))

    def save(self, service: str, data: Any) -> None:
        text = json.dumps(data, indent=1, ensure_ascii=False)
        (self.root / "local_db" / f"{service}.json").write_text(text, encoding="utf-8")

    def resolve(self, path: str) -> Path:
        """`/workspace/a/b` or `a/b` → the real path; anything outside the agent folder is refused."""
        if "\x00" in path:
            raise ToolError("a path may not contain a NUL character")
        posix = PurePosixPath(path.strip() or ".")
        if posix.is_absolute():
            try:
                posix = posix.relative_to(VIRTUAL_ROOT)
            except ValueError:
                raise ToolError(f"path {path!r} is outside {VIRTUAL_ROOT}; use a path under it") from None
        if ".." in posix.parts:
            raise ToolError(f"path {path!r} may not contain '..'")
        if any(len(part.encode()) > 255 for part in posix.parts):
            raise ToolError("a file or folder name may be at most 255 bytes long")
        return self.agent_dir.joinpath(*posix.parts)

    def virtual(self, real: Path) -> str:
        rel = real.relative_to(self.agent_dir).as_posix()
        return VIRTUAL_ROOT if rel == "." else f"{VIRTUAL_ROOT}/{rel}"

    def snapshot(self) -> dict[str, tuple[int, str]]:
        """Agent-folder file → (bytes, content hash), to report what an action created or modified."""
        return {
            self.virtual(p): (p.stat().st_size, hashlib.sha1(p.read_bytes()).hexdigest())
            for p in sorted(self.agent_dir.rglob("*"))
            if p.is_file()
        }


def changes(
    before: Mapping[str, tuple[int, str]], after: Mapping[str, tuple[int, str]], producer: str
) -> list:
    """The SPEC-BENCH §3.4 manifest: `{path, bytes, change, producer}` per created or modified file."""
    return [
        {
            "path": p,
            "bytes": size,
            "change": "created" if p not in before else "modified",
            "producer": producer,
        }
        for p, (size, digest) in after.items()
        if before.get(p, (None, None))[1] != digest
    ]


def write_text(path: Path, text: str) -> None:
    """Write a file for a tool; a path the filesystem refuses (too long, a file in the way) is a tool error."""
    if path.is_dir():
        raise ToolError(f"{path.name or '/workspace'!r} is a directory; give a file path")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as error:
        raise ToolError(f"cannot write {path.name!r}: {error.strerror}") from None


def _list_directory(ws: Workspace, args: Mapping[str, Any]) -> str:
    folder = ws.resolve(args.get("path") or VIRTUAL_ROOT)
    if not folder.is_dir():
        raise ToolError(f"no directory {args.get('path')!r}")
    entries = [
        {
            "path": ws.virtual(p),
            "type": "dir" if p.is_dir() else "file",
            "bytes": p.stat().st_size if p.is_file() else None,
        }
        for p in sorted(folder.iterdir())
    ]
    return compact({"directory": ws.virtual(folder), "entries": entries})


def _read_file(ws: Workspace, args: Mapping[str, Any]) -> str:
    path = ws.resolve(args["path"])
    if not path.is_file():
        raise ToolError(f"no file {args['path']!r}; fs_list_directory shows what exists")
    return cap(path.read_text(encoding="utf-8", errors="replace"), OBSERVATION_CHARS, hint=ASK_LESS)


def _write_file(ws: Workspace, args: Mapping[str, Any]) -> str:
    path = ws.resolve(args["path"])
    write_text(path, args["content"])
    return f"Wrote {len(args['content'].encode())} bytes to {ws.virtual(path)}."


_PATH = {"type": "string", "description": f"A path under {VIRTUAL_ROOT} (absolute, or relative to it)."}
FS_TOOLS = (
    Tool(
        "fs_list_directory",
        f"[filesystem] List the files and folders in a directory of the agent workspace ({VIRTUAL_ROOT}).",
        {"path": {**_PATH, "description": f"Directory to list; default {VIRTUAL_ROOT}."}},
        (),
        _list_directory,
    ),
    Tool(
        "fs_read_file",
        "[filesystem] Read a text file from the agent workspace.",
        {"path": _PATH},
        ("path",),
        _read_file,
    ),
    Tool(
        "fs_write_file",
        "[filesystem] Create or overwrite a text file in the agent workspace (parent folders are created).",
        {"path": _PATH, "content": {"type": "string", "description": "The full file content."}},
        ("path", "content"),
        _write_file,
    ),
)


def _claim_done(ws: Workspace, args: Mapping[str, Any]) -> str:
    return "Task declared complete."  # the environment then runs the checker and ends the episode


CLAIM_DONE = Tool(
    "claim_done",
    "[claim_done] Declare the task complete. The result is then checked and the episode ends; call it only "
    "after every requested change has been made.",
    {},
    (),
    _claim_done,
)
