"""A recorded episode as stable, readable text: the golden fixture format.

Every model call (role, messages, a digest of the schema, the reply), every parsed decision and step, every
memory record and the score are written in order; volatile fields (timings, paths under the home or temporary
folders) are dropped or replaced, long strings keep their head and a digest of the whole, and a message already
shown is named by the call it first appeared in, so a fixture stays small and a diff shows what changed.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from pos_bench.benchmarks.staging import cache_root

VOLATILE = {"time", "seconds", "cpu_seconds"}
"""Event keys that change from run to run."""
KEEP_CHARS = 1500
"""Characters of a long string kept verbatim; the rest is summarised by its length and digest."""


def places() -> tuple[tuple[str, str], ...]:
    """Machine folders and the stable names a transcript shows instead, read when rendering (a test may move
    them): the pos_bench cache (where synthetic cases are generated; `$XDG_CACHE_HOME` or `~/.cache`) first,
    since it usually lies under the home folder, then the home, temporary and current folders."""
    return (
        (str(cache_root("")), "$CACHE/pos_bench"),
        (str(Path.home()), "~"),
        (tempfile.gettempdir(), "$TMP"),
        (os.getcwd(), "."),
    )


def digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:12]


REPEAT_CHARS = 400
"""A list or object at least this long in JSON, already shown once, is named by where it first appeared."""


def scrub(value: Any, seen: dict[str, str], where: str) -> Any:
    """`value` without volatile keys or machine paths, long strings shortened, long repeats named."""
    if isinstance(value, (Mapping, list)):
        text = json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)
        if len(text) >= REPEAT_CHARS:
            first = seen.setdefault(digest(text), where)
            if first != where:
                return f"(same as in {first})"
    if isinstance(value, Mapping):
        return {k: scrub(v, seen, where) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [scrub(v, seen, where) for v in value]
    if isinstance(value, str):
        for place, name in places():
            value = value.replace(place, name)
        if len(value) > KEEP_CHARS:
            value = f"{value[:KEEP_CHARS]}… [{len(value)} chars, sha256 {digest(value)}]"
    return value


def render(events: Iterable[Mapping[str, Any]], header: str) -> str:
    """The fixture text for one episode's transcript events."""
    lines = [f"# {header}"]
    seen: dict[str, str] = {}
    calls = 0
    for number, event in enumerate(events):
        kind = event["kind"]
        if kind == "call":
            calls += 1
            prompt = event["prompt"]
            schema = prompt.get("schema")
            lines.append(
                f"=== call {calls} role={event['role']} max_tokens={prompt.get('max_tokens')} "
                f"schema={digest(json.dumps(schema, sort_keys=True)) if schema else None}"
            )
            for index, message in enumerate(prompt["messages"]):
                here = f"call {calls} message {index}"
                content = scrub(message["content"], {}, here)
                first = seen.setdefault(digest(content), here)
                if first != here:
                    lines.append(f"--- {message['role']} (same as {first})")
                else:
                    lines.extend([f"--- {message['role']}", content])
            lines.extend(["--- reply", scrub(event["reply"], {}, "")])
            continue
        body = scrub({k: v for k, v in event.items() if k != "kind"}, seen, f"event {number} ({kind})")
        lines.extend([f"=== {kind}", json.dumps(body, indent=1, sort_keys=True, ensure_ascii=False)])
    return "\n".join(lines) + "\n"
