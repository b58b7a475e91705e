"""mini-LOCA's tool record: an OpenAI function schema plus an in-process handler, and argument checking.

Names carry a server-style prefix (`email_`, `calendar_`, `fs_` …) and descriptions start with a bracketed
domain label, as upstream MCP servers do, so the shared catalog's domain and role rules apply unchanged.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

_JSON_TYPES: Mapping[str, type | tuple[type, ...]] = {
    "string": str,
    "integer": int,
    "number": (int, float),
    "boolean": bool,
    "array": list,
    "object": dict,
}

PAGING: Mapping[str, Mapping[str, Any]] = {
    "offset": {"type": "integer", "description": "Index of the first item (default 0)."},
    "limit": {"type": "integer", "description": "Items per page, 1–200 (default 50)."},
}
"""The `offset` / `limit` arguments of every listing tool (see `workspace.page`)."""


MAX_ARGUMENT_CHARS = 100_000
"""Characters one call's arguments may hold (as JSON text): far above what a reply of the policy's token
budget carries, far below what would fill the disk or the transcript (a 20 MB `fs_write_file` is refused)."""


class ToolError(Exception):
    """A call the tool cannot serve (bad arguments, unknown id); its message becomes the observation."""


Handler = Callable[[Any, Mapping[str, Any]], str]
"""Called with the episode's workspace and the checked arguments; returns the observation text."""


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    """Starts with the bracketed domain label, e.g. `[email] …`."""
    properties: Mapping[str, Mapping[str, Any]]
    required: tuple[str, ...]
    handler: Handler

    def schema(self) -> dict[str, Any]:
        """The OpenAI function-tool schema."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": {
                    "type": "object",
                    "properties": {k: dict(v) for k, v in self.properties.items()},
                    "required": list(self.required),
                },
            },
        }

    def check(self, arguments: Mapping[str, Any]) -> None:
        """Raise `ToolError` naming every argument that is unknown, missing or of the wrong JSON type, or
        all of them when together they are over `MAX_ARGUMENT_CHARS`."""
        size = len(json.dumps(arguments, ensure_ascii=False, default=str))
        if size > MAX_ARGUMENT_CHARS:
            raise ToolError(
                f"Argument error for {self.name}: the arguments hold {size:,} characters, over the "
                f"{MAX_ARGUMENT_CHARS:,} one call may carry; nothing was done. Send less (e.g. write a file "
                "in parts, or only what the task needs)."
            )
        problems = [f"unknown argument {k!r}" for k in arguments if k not in self.properties]
        problems += [f"missing required argument {k!r}" for k in self.required if k not in arguments]
        for key, value in arguments.items():
            kind = self.properties.get(key, {}).get("type")
            expected = _JSON_TYPES.get(kind or "")
            if expected is None or value is None and key not in self.required:
                continue
            if not isinstance(value, expected) or (kind in ("integer", "number") and isinstance(value, bool)):
                problems.append(f"argument {key!r} must be a JSON {kind}, got {type(value).__name__}")
        if problems:
            expected_args = (
                ", ".join(f"{k}{'' if k in self.required else '?'}" for k in self.properties) or "none"
            )
            raise ToolError(
                f"Argument error for {self.name}: {'; '.join(problems)}. Expected arguments: {expected_args}."
            )
