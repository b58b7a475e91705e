"""Size bounds on a JSON schema before constrained decoding, for a small model that repeats itself.

A 135M model tends to repeat itself inside a free string, a number, a list or a free-form object until the token
budget runs out, which cuts the JSON short (measured on LOCA: an entity attribute `"AH":1111…` ran to the belief's
1,024-token cap twice, so PoS's belief init failed). `bounded_schema` caps every free string and array, bounds
every number's digits, gives free-form objects short identifier keys and flat values, keeps JSON punctuation out
of identifier fields, and asks LLGuidance for compact whitespace, so a reply closes within a known number of tokens. The embedded model (`models/local.py`) applies it to every schema it decodes.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pos_bench.types import Prompt

SCHEMA_BOUNDS = 4
"""Version of `bounded_schema`'s rules; part of the model identity, so cached replies follow the rules."""
KEY_PATTERN = "^[A-Za-z0-9_]{1,32}$"
"""Keys of free-form objects (LLGuidance honours `patternProperties`, not `propertyNames`)."""
NUMBER_LIMIT = 999_999_999
"""Largest magnitude of a number (LLGuidance turns `minimum`/`maximum` into a bounded count of digits)."""
NUMBER_STEP = 0.001
"""`multipleOf` given to non-integer numbers: LLGuidance then allows at most three decimals."""
ID_CHARACTERS = r'[^"\\{}\[\],]'
"""What an identifier field (a property named `*_id`, or the items of one named `*_ids`) may hold: no JSON
punctuation, 1 to the reply's `max_chars` characters (`identifier_pattern`). Without it SmolLM2 wrote
`"entity_id":"1234567890},{"` (closing an object inside a string) in ALFWorld game 0's initial belief, a dangling
reference that cost a repair turn (8–10 s of a 52–57 s first PoS step)."""


def _bound_number(node: dict[str, Any], types: set[Any]) -> None:
    node["minimum"] = max(node.get("minimum", -NUMBER_LIMIT), -NUMBER_LIMIT)
    node["maximum"] = min(node.get("maximum", NUMBER_LIMIT), NUMBER_LIMIT)
    if "number" in types and "multipleOf" not in node:
        node["multipleOf"] = NUMBER_STEP


def _free_string(node: Any) -> bool:
    return (
        isinstance(node, dict)
        and node.get("type") == "string"
        and not {"enum", "const", "pattern"} & set(node)
    )


def identifier_pattern(max_chars: int) -> str:
    return f"^{ID_CHARACTERS}{{1,{max_chars}}}$"


def _identifier(node: dict[str, Any]) -> None:
    # one constraint for LLGuidance to decode: the pattern carries the length cap
    node["pattern"] = identifier_pattern(node.pop("maxLength"))


def _bound_identifiers(properties: dict[str, Any]) -> None:
    for name, prop in properties.items():
        if name.endswith("_id") and _free_string(prop):
            _identifier(prop)
        elif name.endswith("_ids") and isinstance(prop, dict) and _free_string(prop.get("items")):
            _identifier(prop["items"])


def _bound(node: Any, max_chars: int, max_items: int, lists: Mapping[str, int]) -> Any:
    if isinstance(node, list):
        return [_bound(item, max_chars, max_items, lists) for item in node]
    if not isinstance(node, dict):
        return node
    out = {key: _bound(value, max_chars, max_items, lists) for key, value in node.items()}
    if isinstance(out.get("properties"), dict):
        _bound_identifiers(out["properties"])
        for name, cap in lists.items():
            prop, own = out["properties"].get(name), node["properties"].get(name)
            if isinstance(prop, dict) and "maxItems" in prop:  # a named cap never loosens the schema's own
                prop["maxItems"] = min(cap, own.get("maxItems", cap))
    types = out.get("type")
    types = set(types) if isinstance(types, list) else {types}
    if "string" in types and "enum" not in out and "const" not in out:
        out["maxLength"] = min(out.get("maxLength", max_chars), max_chars)
    if types & {"integer", "number"} and "enum" not in out and "const" not in out:
        _bound_number(out, types)
    if "array" in types:
        out["maxItems"] = min(out.get("maxItems", max_items), max_items)
    if "object" in types and not out.get("properties") and out.get("additionalProperties", True) is not False:
        # A free-form object (tool arguments, entity attributes) could nest, or grow a key name, without
        # end: allow short identifier-like keys and (by default) flat scalar values only.
        value = out.pop("additionalProperties", True)
        if not isinstance(value, dict) or not value:
            value = {"type": ["string", "number", "boolean", "null"], "maxLength": max_chars}
            _bound_number(value, set(value["type"]))
        out["patternProperties"] = {KEY_PATTERN: value}
        out["additionalProperties"] = False
        out["maxProperties"] = min(out.get("maxProperties", max_items), max_items)
    return out


def bounded_schema(
    schema: Mapping[str, Any], *, max_chars: int, max_items: int, lists: Mapping[str, int] | None = None
) -> dict[str, Any]:
    """`schema` with every free string capped at `max_chars` (identifiers: `identifier_pattern`), every array at
    `max_items` (an array property named in `lists`: its own cap instead), every number at `NUMBER_LIMIT` in
    magnitude (three decimals at most), and compact JSON.

    `$defs`/`$ref`, `enum`, `anyOf` and `additionalProperties: false` are passed through: LLGuidance (llama.cpp's
    schema converter in xllamacpp) resolves them itself.
    """
    lists = dict(lists or {})
    if max_chars < 1 or max_items < 1 or any(cap < 1 for cap in lists.values()):
        raise ValueError(
            f"max_chars, max_items and list caps must be ≥ 1, got {max_chars}, {max_items}, {lists}"
        )
    out = _bound(copy.deepcopy(dict(schema)), max_chars, max_items, lists)
    out["x-guidance"] = {**out.get("x-guidance", {}), "whitespace_flexible": False}
    return out


@dataclass(frozen=True)
class ReplyLimits:
    """Caps on one role's replies, for a model that fills every slot a schema allows and writes free text to the
    end of its token budget."""

    max_tokens: int
    """Upper bound on the reply's tokens (the request's own budget wins when smaller), schema or free text."""
    items: int | None = None
    """Entries per list and keys per free-form object; None leaves them to the model's own bound (the embedded
    model's `max_items`; a remote endpoint's schema then goes unbounded, only `max_tokens` applies)."""
    chars: int | None = None
    """Characters per free string; None as for `items` (the embedded model's `max_string_chars`)."""
    lists: Mapping[str, int] = field(default_factory=dict)
    """Entries allowed in a list property, by its name, instead of `items` (e.g. complete gap lists kept at 2
    while a belief update upserts one record of each kind)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "lists", dict(self.lists))
        given = [value for value in (self.items, self.chars) if value is not None]
        if min([self.max_tokens, *given, *self.lists.values()]) < 1:
            raise ValueError(f"reply limits must all be ≥ 1, got {self}")


def reply_limits_of(limits: Mapping[str, ReplyLimits | Mapping[str, int]] | None) -> dict[str, ReplyLimits]:
    """A config's `reply_limits` (role or reply type → caps, as records or plain mappings) as records."""
    return {
        key: value if isinstance(value, ReplyLimits) else ReplyLimits(**value)
        for key, value in (limits or {}).items()
    }


def limits_for(
    limits: Mapping[str, ReplyLimits], schema: Mapping[str, Any] | None, role: str
) -> ReplyLimits | None:
    """The caps of a reply to `schema` asked in `role`: those of its reply type (the schema's title, e.g.
    `BeliefDelta`) when set, else those of its role, else those under `default`, else none."""
    title = schema.get("title") if schema is not None else None
    if title in limits:
        return limits[title]
    return limits.get(role, limits.get("default"))


def limited_prompt(prompt: Prompt, limits: Mapping[str, ReplyLimits], role: str, max_tokens: int) -> Prompt:
    """`prompt` with the caps of its reply (`limits_for`): its token budget (`max_tokens` when it sets none) cut to
    the caps' and, when the caps give both `items` and `chars`, its schema bounded by them; unchanged when no caps
    apply. For models whose server turns the schema into a grammar."""
    caps = limits_for(limits, prompt.schema, role)
    if caps is None:
        return prompt
    budget = min(prompt.max_tokens or max_tokens, caps.max_tokens)
    if prompt.schema is None or caps.items is None or caps.chars is None:
        return dataclasses.replace(prompt, max_tokens=budget)
    schema = bounded_schema(prompt.schema, max_chars=caps.chars, max_items=caps.items, lists=caps.lists)
    return dataclasses.replace(prompt, schema=schema, max_tokens=budget)
