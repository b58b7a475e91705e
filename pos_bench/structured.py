"""Structured output for a method's own LLM roles: a pydantic type in, a typed object or a typed failure out.

The prompt carries the type's JSON schema, so providers with a native mechanism (OpenAI `response_format`,
llama.cpp grammars) constrain the reply; every reply is validated here regardless, and an invalid one gets
up to `max_repairs` follow-up turns that quote the error (SPEC-POS §6.4, §6.7).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from pos_bench.parse import MAX_DEPTH, extract_json_object, too_deep
from pos_bench.protocols import Model
from pos_bench.types import Message, Prompt

T = TypeVar("T", bound=BaseModel)

REPAIR = (
    "That reply could not be used: {problem}. Send the same answer again with that fixed, as one JSON object "
    "with exactly the requested keys (array items must not be null), and nothing outside the JSON object."
)


@dataclass(frozen=True)
class StructuredFailure:
    """No valid object after the allowed repairs; `problem` is the last error."""

    problem: str
    replies: tuple[str, ...]


@functools.lru_cache(maxsize=256)
def schema_of(output: type[BaseModel]) -> dict[str, Any]:
    """`output`'s JSON schema, built once per class: pydantic builds it anew at every `model_json_schema()` call
    (0.5–0.8 ms for a flat reply, 2.2 ms for PoS's belief delta, quiet), and a method asks for the same few types
    at every step. Shared between callers: read it, never change it (`schema_bounds` copies before it caps)."""
    return output.model_json_schema()


def read_structured(text: str, output: type[T], check: Callable[[T], str | None] | None = None) -> T | str:
    """One reply → an `output` object, or the problem with it. Total, like `extract_json_object`."""
    payload = extract_json_object(text)
    if payload is None:
        return "the reply was not valid JSON"
    if too_deep(payload):
        return f"the JSON object is nested deeper than {MAX_DEPTH} levels"
    try:
        value = output.model_validate(payload)
    except ValidationError as error:
        return f"schema error: {str(error)[:2000]}"
    except RecursionError:
        return "the JSON object is nested too deeply"
    problem = check(value) if check else None
    return value if problem is None else problem


def ask(
    model: Model,
    prompt: Prompt,
    output: type[T],
    *,
    role: str,
    max_repairs: int = 1,
    check: Callable[[T], str | None] | None = None,
) -> T | StructuredFailure:
    """Call `model` for an `output` object. `check` adds semantic validation (returns a problem or None)."""
    if prompt.schema is None:
        prompt = dataclasses.replace(prompt, schema=schema_of(output))
    replies: list[str] = []
    problem = ""
    for _ in range(max_repairs + 1):
        reply = model.generate(prompt, role=role)
        replies.append(reply.text)
        result = read_structured(reply.text, output, check)
        if not isinstance(result, str):
            return result
        problem = result
        prompt = prompt.extended(
            Message("assistant", reply.text), Message("user", REPAIR.format(problem=problem))
        )
    return StructuredFailure(problem=problem, replies=tuple(replies))
