"""A shortest string a JSON-schema `pattern` finds, read off Python's own parse of the expression.

Each repeat is taken its minimum number of times, each alternation's first branch, each character class its
first member among printable ASCII (lower-case letters first), anchors and look-arounds nothing. When the
string must be longer (`min_length`), the first repeat that may grow grows. The result is checked with
`re.search` (a JSON-schema pattern is not anchored unless it says so); a pattern this cannot meet raises
`ValueError`.
"""

from __future__ import annotations

import re
import string

# the standard library's own parse of an expression (private modules, but the ones `re` itself runs on)
from re import _constants as sre
from re import _parser as sre_parse
from typing import Any

CANDIDATES = string.ascii_lowercase + string.ascii_uppercase + string.digits + "_-. :/@" + string.punctuation
"""The characters a class is searched in, in order of preference."""

CATEGORIES = {
    sre.CATEGORY_DIGIT: str.isdigit,
    sre.CATEGORY_NOT_DIGIT: lambda c: not c.isdigit(),
    sre.CATEGORY_WORD: lambda c: c.isalnum() or c == "_",
    sre.CATEGORY_NOT_WORD: lambda c: not (c.isalnum() or c == "_"),
    sre.CATEGORY_SPACE: str.isspace,
    sre.CATEGORY_NOT_SPACE: lambda c: not c.isspace(),
}


def shortest_match(pattern: str, *, min_length: int = 0) -> str:
    """A shortest string of at least `min_length` characters in which `pattern` is found."""
    try:
        parsed = sre_parse.parse(pattern)
    except re.error as error:
        raise ValueError(f"pattern {pattern!r} is not a regular expression: {error}") from error
    budget = [0]
    text = _walk(parsed, budget, {})
    if len(text) < min_length:
        budget[0] = min_length - len(text)
        text = _walk(parsed, budget, {})
    if len(text) < min_length and not pattern.endswith("$"):
        text += CANDIDATES[0] * (min_length - len(text))
    if len(text) < min_length or not re.search(pattern, text):
        raise ValueError(f"found no string of ≥ {min_length} characters that pattern {pattern!r} matches")
    return text


def _walk(items: Any, budget: list[int], groups: dict[int, str]) -> str:
    return "".join(_item(op, av, budget, groups) for op, av in items)


def _item(op: Any, av: Any, budget: list[int], groups: dict[int, str]) -> str:
    if op is sre.LITERAL:
        return chr(av)
    if op is sre.NOT_LITERAL:
        return _first(lambda c: ord(c) != av)
    if op is sre.ANY:
        return CANDIDATES[0]
    if op is sre.IN:
        return _first(lambda c: _in_class(c, av))
    if op in (sre.MAX_REPEAT, sre.MIN_REPEAT, getattr(sre, "POSSESSIVE_REPEAT", None)):
        low, high, body = av
        times = low
        if budget[0] > 0 and high > low:
            unit = max(len(_walk(body, [0], dict(groups))), 1)
            extra = min(-(-budget[0] // unit), high - low)
            times, budget[0] = low + extra, budget[0] - extra * unit
        return "".join(_walk(body, budget, groups) for _ in range(times))
    if op is sre.SUBPATTERN:
        group, _, _, body = av
        text = _walk(body, budget, groups)
        if group is not None:
            groups[group] = text
        return text
    if op is sre.BRANCH:
        return _walk(av[1][0], budget, groups)
    if op is sre.GROUPREF:
        return groups.get(av, "")
    if op in (sre.AT, sre.ASSERT, sre.ASSERT_NOT):
        return ""
    raise ValueError(f"pattern element {op} is not handled")


def _in_class(char: str, items: Any) -> bool:
    negate = bool(items) and items[0][0] is sre.NEGATE
    found = False
    for op, av in items[1:] if negate else items:
        if op is sre.LITERAL:
            found = char == chr(av)
        elif op is sre.RANGE:
            found = av[0] <= ord(char) <= av[1]
        elif op is sre.CATEGORY:
            found = CATEGORIES.get(av, lambda c: False)(char)
        if found:
            break
    return found != negate


def _first(accepts: Any) -> str:
    for char in CANDIDATES:
        if accepts(char):
            return char
    raise ValueError("no printable ASCII character fits a character class of the pattern")
