"""The smallest value a JSON schema accepts, for the schema features pydantic emits: objects with their
required keys, arrays at `minItems` (tuples as `prefixItems`), `enum`/`const` (the first value), `anyOf`/
`oneOf` (the first option that is not null), `allOf`, `$ref` into `$defs`, strings at `minLength` or the
shortest match of their `pattern`, common `format`s, and numbers inside their bounds and `multipleOf`.

What counts as smallest: required keys only, the fewest items, the shortest strings, 0 or the bound nearest
to it. A schema this cannot satisfy (a pattern with look-arounds it cannot meet, say) raises `ValueError`
naming the part, so a stand-in reply is never silently invalid.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from pos_bench.standin.pattern import shortest_match

FORMATS = {
    "date-time": "2000-01-01T00:00:00Z",
    "date": "2000-01-01",
    "time": "00:00:00Z",
    "email": "a@example.com",
    "uri": "http://example.com",
    "url": "http://example.com",
    "uuid": "00000000-0000-0000-0000-000000000000",
    "ipv4": "127.0.0.1",
}
"""A valid value of each string `format` pydantic emits."""
MAX_DEPTH = 64
"""Nesting past which the schema is taken to be recursive without a way out."""


def minimal_instance(schema: Mapping[str, Any]) -> Any:
    """The smallest value `schema` accepts (the module docstring says which)."""
    defs = {**schema.get("definitions", {}), **schema.get("$defs", {})}
    return _value(schema, defs, 0)


def _value(node: Any, defs: Mapping[str, Any], depth: int) -> Any:
    if depth > MAX_DEPTH:
        raise ValueError("the schema nests deeper than 64 levels without an optional way out")
    if node is True or node == {}:
        return None
    if not isinstance(node, Mapping):
        raise TypeError(f"not a schema node: {node!r}")
    if "$ref" in node:
        name = str(node["$ref"]).rsplit("/", 1)[-1]
        if name not in defs:
            raise ValueError(f"$ref {node['$ref']!r} names no definition")
        return _value({**defs[name], **{k: v for k, v in node.items() if k != "$ref"}}, defs, depth + 1)
    if "const" in node:
        return node["const"]
    if "enum" in node:
        return node["enum"][0]
    for key in ("anyOf", "oneOf"):
        if key in node:
            options = [o for o in node[key] if not (isinstance(o, Mapping) and o.get("type") == "null")]
            return _value((options or node[key])[0], defs, depth + 1)
    if "allOf" in node:
        return _value(_merged(node, defs), defs, depth + 1)
    kind = _kind(node)
    if kind == "object":
        return _object(node, defs, depth)
    if kind == "array":
        return _array(node, defs, depth)
    if kind == "string":
        return _string(node)
    if kind in ("integer", "number"):
        return _number(node, integer=kind == "integer")
    return {"boolean": False, "null": None}[kind]


def _kind(node: Mapping[str, Any]) -> str:
    kind = node.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind is None:
        kind = "object" if "properties" in node else "array" if "items" in node else "null"
    if kind not in ("object", "array", "string", "integer", "number", "boolean", "null"):
        raise ValueError(f"unknown schema type {kind!r}")
    return kind


def _merged(node: Mapping[str, Any], defs: Mapping[str, Any]) -> dict[str, Any]:
    """`allOf` as one node: the parts' keys together, their `properties` and `required` joined."""
    out: dict[str, Any] = {k: v for k, v in node.items() if k != "allOf"}
    for part in node["allOf"]:
        while isinstance(part, Mapping) and "$ref" in part:
            part = defs[str(part["$ref"]).rsplit("/", 1)[-1]]
        for key, value in part.items():
            if key == "properties":
                out["properties"] = {**out.get("properties", {}), **value}
            elif key == "required":
                out["required"] = list(dict.fromkeys([*out.get("required", []), *value]))
            else:
                out.setdefault(key, value)
    return out


def _object(node: Mapping[str, Any], defs: Mapping[str, Any], depth: int) -> dict[str, Any]:
    properties = node.get("properties", {})
    out = {}
    for name in node.get("required", []):
        out[name] = _value(properties.get(name, node.get("additionalProperties", {})), defs, depth + 1)
    extra = node.get("additionalProperties", {})
    for index in range(len(out), int(node.get("minProperties", 0))):
        optional = [name for name in properties if name not in out]
        if optional:
            out[optional[0]] = _value(properties[optional[0]], defs, depth + 1)
        elif extra is not False:
            out[f"k{index}"] = _value(extra if isinstance(extra, Mapping) else {}, defs, depth + 1)
    return out


def _array(node: Mapping[str, Any], defs: Mapping[str, Any], depth: int) -> list[Any]:
    prefix = [_value(item, defs, depth + 1) for item in node.get("prefixItems", [])]
    count = max(int(node.get("minItems", 0)) - len(prefix), 0)
    items = node.get("items", {})
    rest = [_value(items, defs, depth + 1) for _ in range(count)]
    if node.get("uniqueItems") and count > 1:
        rest = [_distinct(value, index) for index, value in enumerate(rest)]
    return prefix + rest


def _distinct(value: Any, index: int) -> Any:
    """The `index`-th of several items that must differ (strings and numbers; others are left as they are)."""
    if isinstance(value, str):
        return value + str(index) if index else value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value + index
    return value


def _string(node: Mapping[str, Any]) -> str:
    low, high = int(node.get("minLength", 0)), node.get("maxLength")
    if "pattern" in node:
        text = shortest_match(str(node["pattern"]), min_length=low)
    elif node.get("format") in FORMATS:
        text = FORMATS[node["format"]]
    else:
        text = "x" * max(low, 1 if high is None or high >= 1 else 0)
    if len(text) < low or (high is not None and len(text) > int(high)):
        raise ValueError(f"no string of {low}..{high} characters found for {dict(node)}")
    return text


def _number(node: Mapping[str, Any], *, integer: bool) -> int | float:
    low = node.get("minimum", -math.inf)
    high = node.get("maximum", math.inf)
    above, below = node.get("exclusiveMinimum"), node.get("exclusiveMaximum")
    step = node.get("multipleOf") or (1 if integer else None)
    tiny = step or (1 if integer else 1e-6)
    if above is not None:
        low = max(low, above + (tiny if integer or step else _nudge(above, high)))
    if below is not None:
        high = min(high, below - (tiny if integer or step else _nudge(below, low)))
    value = min(max(0, low), high)
    if step:
        value = math.ceil(value / step - 1e-9) * step
    if integer:
        value = math.ceil(value)
    if value < low or value > high:
        raise ValueError(f"no number inside the bounds of {dict(node)}")
    return int(value) if integer or float(value).is_integer() and step else value


def _nudge(edge: float, other: float) -> float:
    """How far inside an exclusive bound to go: halfway to the other bound when it is near, else 1e-6."""
    gap = abs(other - edge)
    return min(gap / 2, 1e-6) if math.isfinite(gap) else 1e-6
