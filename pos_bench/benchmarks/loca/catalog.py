"""The role-grouped tool catalog every method is shown on LOCA-Bench (SPEC-BENCH §3.3).

It works on OpenAI function-tool schemas only, so mini-LOCA's in-process tools and the real benchmark's MCP
tools are catalogued by the same rules: a tool's domain is the bracketed label that starts its description (as
upstream MCP servers write them), else its name's prefix.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

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
