"""mini-LOCA's ground truth: the state its checker reads, i.e. the services' JSON-DB records and the files of
the agent's workspace, as facts.

A record is an entity named by its id (the first of its keys that is `id`, `sku` or ends in `_id`); each
scalar field is a fact `(id, field, value)`, read from a claim by the field's name and the value written
after it (`stock: 4`). A file is an entity named by its `/workspace/...` path with the fact `exists`. The
goal needs the records the answer names (any id appearing in the case's answer) and the files it writes.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from pos_bench.benchmarks.loca.mini.workspace import VIRTUAL_ROOT, Workspace
from pos_bench.truth import LITERAL, Fact, Term, WorldTruth, name, value_text


def _id_key(record: Mapping[str, Any]) -> str | None:
    return next((k for k in record if k in ("id", "sku") or k.endswith("_id")), None)


def records(value: Any) -> Iterator[Mapping[str, Any]]:
    """Every record (a mapping with an id key) anywhere inside a service's state."""
    if isinstance(value, Mapping):
        if _id_key(value) is not None:
            yield value
        for inner in value.values():
            yield from records(inner)
    elif isinstance(value, list):
        for inner in value:
            yield from records(inner)


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for k, v in value.items():
            yield str(k)
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def loca_truth(ws: Workspace) -> WorldTruth:
    facts: set[Fact] = set()
    fields: set[str] = set()
    for service in ws.case.db:
        for record in records(ws.load(service)):
            key = _id_key(record)
            subject = name(str(record[key]))
            for field, value in record.items():
                if field != key and (value is None or isinstance(value, (str, int, float, bool))):
                    facts.add(Fact(subject, field, value_text(value)))
                    fields.add(field)
    files = [p.relative_to(ws.agent_dir).as_posix() for p in ws.agent_dir.rglob("*") if p.is_file()]
    facts.update(Fact(name(f"{VIRTUAL_ROOT}/{path}"), "exists", "true") for path in files)
    entities = frozenset(f.subject for f in facts)
    needed = {name(s) for s in _strings(ws.case.truth)}
    needed |= {name(f"{VIRTUAL_ROOT}/{path}") for path in files if path in ws.case.instruction}
    goal = frozenset(f for f in facts if f.subject in needed)
    terms = (
        Term("exists", "true", ("exists", "written", "created", "saved")),
        *(Term(f, LITERAL, (f, f.replace("_", " "))) for f in sorted(fields, key=len, reverse=True)),
    )
    return WorldTruth(facts=frozenset(facts), entities=entities, goal=goal, terms=terms)
