"""RCA-100's ground truth: the injected (labelled) fault's entity and type, read from the answer key the
environment scores with. Every service and node of the case's topology is an entity: the root cause has its
fault type, the others are not the root cause and have none. The truth does not change during an episode."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from pos_bench.benchmarks.rca.catalog import FAULT_TYPES, norm_fault_type
from pos_bench.truth import Fact, Term, WorldTruth, name

CANDIDATE_TYPES = frozenset({"apm.service", "k8s.node"})
"""The topology entity types a submission may name (SPEC-BENCH §4.7)."""


def _spoken(fault_id: str) -> tuple[str, ...]:
    """`memoryPressure` → ("memorypressure", "memory pressure"): how a claim may write a fault type."""
    words = " ".join(re.findall(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+", fault_id)).lower()
    return tuple(dict.fromkeys((fault_id.lower(), words)))


TERMS = (
    Term(
        "root_cause", "false", ("not the root cause", "not root cause", "ruled out", "not faulty", "healthy")
    ),
    Term("root_cause", "true", ("root cause", "root-cause", "faulty", "culprit", "origin of the fault")),
    *(Term("fault_type", fault.lower(), _spoken(fault)) for fault in FAULT_TYPES),
)


def rca_truth(
    topology: Mapping[str, Any], root_causes: tuple[str, ...], fault_types: tuple[str, ...]
) -> WorldTruth:
    """The truth of one case from its topology and its answer key's entities and fault types."""
    roots = {name(r) for r in root_causes}
    kinds = {(norm_fault_type(t) or t).lower() for t in fault_types}
    candidates = {name(e["name"]) for e in topology.get("entities", []) if e.get("type") in CANDIDATE_TYPES}
    facts = set()
    for entity in candidates | roots:
        is_root = entity in roots
        facts.add(Fact(entity, "root_cause", "true" if is_root else "false"))
        facts.update(Fact(entity, "fault_type", k) for k in (kinds if is_root else {"none"}))
    goal = frozenset(f for f in facts if f.subject in roots)
    return WorldTruth(facts=frozenset(facts), entities=frozenset(candidates | roots), goal=goal, terms=TERMS)
