"""mini-LOCA tools: the tool record, argument checking against its schema, and the role-grouped tool
catalog every method is shown (SPEC-BENCH §3.3).

A tool is an OpenAI function schema plus an in-process handler. Names carry a server-style prefix
(`email_`, `calendar_`, `fs_` …) and descriptions start with a bracketed domain label, as upstream MCP
servers do, so the catalog's domain and role rules apply unchanged.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pos_bench.benchmarks.loca_workspace import Workspace

ROLES = (
    "metadata_discovery",
    "evidence_retrieval",
    "deterministic_compute",
    "side_effect",
    "finish",
    "other",
)
SIDE_EFFECT = {
    "create",
    "update",
    "write",
    "send",
    "delete",
    "remove",
    "add",
    "upload",
    "load",
    "export",
    "cancel",
}
DISCOVERY = {"list", "search", "metadata", "schema", "info", "describe"}
RETRIEVAL = {"read", "query", "get", "fetch", "download", "lookup"}
_LABEL = re.compile(r"^\s*\[([^\]]+)\]")
_JSON_TYPES: Mapping[str, type | tuple[type, ...]] = {
    "string": str,
    "integer": int,
    "number": (int, float),
    "boolean": bool,
    "array": list,
    "object": dict,
}


class ToolError(Exception):
    """A call the tool cannot serve (bad arguments, unknown id); its message becomes the observation."""


Handler = Callable[["Workspace", Mapping[str, Any]], str]


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
        """Raise `ToolError` naming every argument that is unknown, missing or of the wrong JSON type."""
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


def domain_of(schema: Mapping[str, Any]) -> str:
    """The bracketed label at the start of the description, else the name's prefix before the first `_`."""
    function = schema["function"]
    label = _LABEL.match(function.get("description", ""))
    return label.group(1).strip() if label else function["name"].split("_", 1)[0]


def role_of(schema: Mapping[str, Any]) -> str:
    """The catalog role of one tool; the first matching rule wins (SPEC-BENCH §3.3)."""
    name = schema["function"]["name"]
    domain = domain_of(schema)
    tokens = {t for t in re.split(r"[^0-9a-z]+", name.lower()) if t}
    if "claim_done" in name or domain == "claim_done":
        return "finish"
    if "python_execute" in name or domain in ("python_execute", "terminal"):
        return "deterministic_compute"
    if tokens & SIDE_EFFECT:
        return "side_effect"
    if tokens & DISCOVERY or "get_dataset_info" in name:
        return "metadata_discovery"
    if tokens & RETRIEVAL:
        return "evidence_retrieval"
    return "other"


def tool_catalog(schemas: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """`{domains: [{name, tool_count}] by name, tools_by_role: {role: [full schemas by name]}}`, roles in
    their fixed order and empty roles left out."""
    counts: dict[str, int] = {}
    for s in schemas:
        counts[domain_of(s)] = counts.get(domain_of(s), 0) + 1
    by_role: dict[str, list[Mapping[str, Any]]] = {}
    for role in ROLES:
        members = sorted((s for s in schemas if role_of(s) == role), key=lambda s: s["function"]["name"])
        if members:
            by_role[role] = members
    return {
        "domains": [{"name": n, "tool_count": counts[n]} for n in sorted(counts)],
        "tools_by_role": by_role,
    }


def catalog_order(schemas: Sequence[Mapping[str, Any]]) -> tuple[Mapping[str, Any], ...]:
    """The schemas in catalog order (role, then name), the order the policy sees them in every prompt."""
    return tuple(s for members in tool_catalog(schemas)["tools_by_role"].values() for s in members)


def catalog_outline(schemas: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The catalog with tool names in place of definitions (the full definitions follow in every prompt)."""
    catalog = tool_catalog(schemas)
    return {
        "domains": catalog["domains"],
        "tools_by_role": {
            role: [s["function"]["name"] for s in members]
            for role, members in catalog["tools_by_role"].items()
        },
    }
