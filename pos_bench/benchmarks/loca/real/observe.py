"""Observation post-processing for LOCA-Bench, the same for every method (SPEC-BENCH §3.4).

A tool result arrives as upstream's JSON list of tool messages. Its text is shown as is, except that a large
structured result (> 8,000 characters of JSON) becomes an artifact file in the agent workspace, referenced with a
three-item preview (only when the case has python_execute to read it back), and a manifest of the workspace files
the action created or modified is appended.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

INLINE_LIMIT = 8000
PREVIEW_ITEMS = 3
ARTIFACT_DIR = ".tool_results"
_INTERNAL = (ARTIFACT_DIR, ".python_tmp")
"""Workspace folders the harness or a server writes for itself; not the agent's outputs."""


@dataclass(frozen=True)
class FileState:
    bytes: int
    mtime_ns: int


def snapshot(workspace: Path) -> dict[str, FileState]:
    """Every agent file under `workspace` (relative path → size and mtime), internal folders left out."""
    out: dict[str, FileState] = {}
    for path in workspace.rglob("*"):
        rel = path.relative_to(workspace).as_posix()
        if path.is_file() and not rel.startswith(_INTERNAL):
            stat = path.stat()
            out[rel] = FileState(stat.st_size, stat.st_mtime_ns)
    return out


def manifest(before: Mapping[str, FileState], after: Mapping[str, FileState], producer: str) -> list[dict]:
    """`{path, bytes, change, producer}` for each file created or modified between the two snapshots."""
    rows = []
    for rel in sorted(after):
        if rel not in before or before[rel] != after[rel]:
            change = "created" if rel not in before else "modified"
            rows.append({"path": rel, "bytes": after[rel].bytes, "change": change, "producer": producer})
    return rows


def tool_contents(raw: str) -> list[str]:
    """The content strings of upstream's tool-message list (the raw text when it is not such a list)."""
    try:
        messages = json.loads(raw)
    except json.JSONDecodeError:
        return [raw]
    if not isinstance(messages, list):
        return [raw]
    return [str(m.get("content", "")) if isinstance(m, Mapping) else str(m) for m in messages]


def _structured(text: str) -> Any:
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return None
    return value if isinstance(value, (list, dict)) else None


def _preview(value: Any) -> Any:
    if isinstance(value, list):
        return value[:PREVIEW_ITEMS]
    return {k: value[k] for k in list(value)[:PREVIEW_ITEMS]}


def offload(text: str, workspace: Path, name: str) -> str:
    """`text` itself, or, for a large JSON result, a reference to the artifact file it was written to."""
    value = _structured(text) if len(text) > INLINE_LIMIT else None
    if value is None:
        return text
    folder = workspace / ARTIFACT_DIR
    folder.mkdir(exist_ok=True)
    path = folder / f"{name}.json"
    path.write_text(text, encoding="utf-8")
    size = len(value)
    unit = "items" if isinstance(value, list) else "keys"
    return (
        f"[Large result ({len(text)} characters, {size} {unit}) saved to {path} (read it with python_execute). "
        f"First {min(size, PREVIEW_ITEMS)} {unit}: {json.dumps(_preview(value), ensure_ascii=False)}]"
    )


def render(raw: str, workspace: Path, *, name: str, artifacts: bool) -> str:
    """The observation text of one tool result, large structured contents offloaded when `artifacts`."""
    contents = tool_contents(raw)
    if artifacts:
        contents = [
            offload(c, workspace, f"{name}_{i}" if len(contents) > 1 else name)
            for i, c in enumerate(contents)
        ]
    return "\n\n".join(contents)
