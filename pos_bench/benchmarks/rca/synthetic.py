"""Synthetic RCA-100 cases (SPEC-BENCH §4.10): the offline stand-in for the restricted real data set, written
in the real layout so the same environment code reads either.

Per case `cases/tNNN/{task.json, topology.json, metrics.parquet, logs.parquet, traces.parquet, events.parquet,
alerts.parquet}`; at the root `manifest.txt` and `summary.json`; the labels apart in `answer_key/tNNN.gt.json`
(the §4.2 schema, `raw_ground_truth` holding cause / propagation / impact steps). The shop and the case plan
come from `shop.py`, the telemetry from `telemetry.py`. The same seed writes byte-identical files.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pandas as pd

from pos_bench.benchmarks.rca.shop import (
    FAULT_NUMBERS,
    GENERATOR_VERSION,
    LATENCY_FAULTS,
    MINUTES,
    NAMESPACE,
    NODES,
    SERVICES,
    Plan,
    entity_id,
    epoch_us,
    iso,
    operation,
    plan_case,
)
from pos_bench.benchmarks.rca.telemetry import draw

CASE_FILES = (
    "task.json",
    "topology.json",
    "metrics.parquet",
    "logs.parquet",
    "traces.parquet",
    "events.parquet",
    "alerts.parquet",
)


def topology(plan: Plan) -> dict:
    entities, edges = [], []

    def add(kind: str, name: str, **props: object) -> None:
        entities.append(
            {
                "id": entity_id(kind, name),
                "type": kind,
                "name": name,
                "first_observed": iso(0),
                "last_observed": iso(MINUTES),
                "props": {"namespace": NAMESPACE, **props},
            }
        )

    def link(src: tuple[str, str], relation: str, dst: tuple[str, str]) -> None:
        edges.append(
            {
                "src": entity_id(*src),
                "src_type": src[0],
                "dst": entity_id(*dst),
                "dst_type": dst[0],
                "relation": relation,
            }
        )

    for node in NODES:
        add("k8s.node", node, node_name=node, status="Ready")
    for service, spec in SERVICES.items():
        add("apm.service", service, service=service, language=spec.language, status="active")
        add("k8s.deployment", service, service=service, status="Available")
        link(("apm.service", service), "runs_as", ("k8s.deployment", service))
        for method in spec.methods:
            add("apm.operation", operation(service, method), service=service, status="active")
            link(("apm.service", service), "contains", ("apm.operation", operation(service, method)))
        for callee in spec.calls:
            link(("apm.service", service), "calls", ("apm.service", callee))
    for pod, (service, node) in plan.pods.items():
        gone = plan.fault == "replicaScaleDown" and service == plan.root
        add("k8s.pod", pod, service=service, node_name=node, status="Terminated" if gone else "Running")
        link(("k8s.deployment", service), "contains", ("k8s.pod", pod))
        link(("k8s.node", node), "hosts", ("k8s.pod", pod))
    stats = {"entities": len(entities), "edges": len(edges)}
    window = {
        "start_iso": iso(0),
        "end_iso": iso(MINUTES),
        "start_us": epoch_us(0),
        "end_us": epoch_us(MINUTES),
    }
    return {
        "case_id": plan.case_id,
        "source": "umodel_v3",
        "window": window,
        "cluster_id": "synthetic-ack-hk",
        "stats": stats,
        "entities": entities,
        "edges": edges,
    }


def task(plan: Plan) -> dict:
    service, _, method = plan.alert_operation.partition("::")
    what = "响应时间过高" if plan.fault in LATENCY_FAULTS else "错误数突增"
    return {
        "task_id": plan.case_id,
        "task_version": f"synthetic-{GENERATOR_VERSION}",
        "alert_event_id": plan.alert_id,
        "alert_title": f"[应用监控] 应用 {service} 接口 {method} {what}",
        "alert_trigger_time": iso(plan.start + 2),
        "alert_window": {"start": iso(plan.start - 10), "end": iso(MINUTES)},
        "alert_entity": {
            "entity_id": entity_id("apm.operation", plan.alert_operation),
            "entity_name": plan.alert_operation,
            "entity_type": "apm.operation",
            "entity_domain": "apm",
        },
        "prompt_text": f"An alert fired on {plan.alert_operation}. Find the root cause entity and fault type.",
        "workspace": "synthetic-otel-demo",
        "region_id": "cn-hongkong",
        "available_modalities": ["metrics", "logs", "traces", "events", "alerts", "topology"],
        "scoring_note": "Submit one service or node name and one fault type id.",
    }


def answer_key(plan: Plan) -> dict:
    fault_id = f"F{FAULT_NUMBERS[plan.fault]:03d}"
    kind = "k8s.node" if plan.root in NODES else "apm.service"
    target = {
        "entity_id": entity_id(kind, plan.root),
        "entity_name": plan.root,
        "entity_domain": kind.split(".")[0],
        "entity_type": kind,
    }
    steps = [
        ("cause", plan.root, f"{plan.fault} injected on {plan.root}"),
        ("propagation", plan.root, f"errors or latency spread from {plan.root} to its callers"),
        ("impact", plan.alert_operation, f"the alert fired on {plan.alert_operation}"),
    ]
    raw = {
        "outcome": {
            "expected_fault_id": fault_id,
            "target_entity_ids": [target["entity_id"]],
            "target_entities": [target],
            "expected_conclusion": f"{plan.root} is the root cause ({plan.fault}).",
        },
        "reasoning": {
            "steps": [
                {
                    "step": number,
                    "title": title,
                    "step_type": kind_,
                    "target": where,
                    "fault_id": fault_id,
                    "description": title,
                    "required": True,
                    "queryable": True,
                    "observability": [],
                    "conclusion_constraints": [],
                    "time_range_hint": {"start": iso(plan.start), "end": iso(MINUTES)},
                }
                for number, (kind_, where, title) in enumerate(steps, start=1)
            ]
        },
        "metadata": {"generator": "pos_bench.rca_synthetic", "version": GENERATOR_VERSION},
    }
    facts = task(plan)
    return {
        "incident_id": f"{fault_id}-{plan.fault}.{plan.alert_id}",
        "case_id": plan.case_id,
        "workspace": facts["workspace"],
        "region_id": facts["region_id"],
        "time_range_start": iso(0),
        "time_range_end": iso(MINUTES),
        "root_cause_entities": [plan.root],
        "root_cause_types": [f"{fault_id}-{plan.fault}"],
        "alert_event_id": plan.alert_id,
        "alert_trigger_time": facts["alert_trigger_time"],
        "alert_title": facts["alert_title"],
        "prompt_text": facts["prompt_text"],
        "raw_ground_truth": json.dumps(raw, ensure_ascii=False, sort_keys=True),
    }


def _json(path: Path, payload: object) -> None:
    path.write_text(json.dumps(payload, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")


def write_case(out: Path, seed: int, number: int) -> Plan:
    """Write case `number` (1-based) into `out/cases/tNNN/` and its key into `out/answer_key/`."""
    plan = plan_case(seed, number)
    folder = out / "cases" / plan.case_id
    folder.mkdir(parents=True, exist_ok=True)
    _json(folder / "task.json", task(plan))
    _json(folder / "topology.json", topology(plan))
    for name, frame in draw(plan, random.Random(f"rca-telemetry/{seed}/{number}")).items():
        pd.DataFrame(frame).to_parquet(folder / f"{name}.parquet", index=False, engine="pyarrow")
    (out / "answer_key").mkdir(exist_ok=True)
    _json(out / "answer_key" / f"{plan.case_id}.gt.json", answer_key(plan))
    return plan


def generate(out: Path, n: int, seed: int = 0) -> list[str]:
    """Write `n` cases, the manifest and a summary into `out`; return the case ids."""
    out.mkdir(parents=True, exist_ok=True)
    plans = [write_case(out, seed, number) for number in range(1, n + 1)]
    (out / "manifest.txt").write_text("".join(f"{p.case_id}\n" for p in plans), encoding="utf-8")
    _json(
        out / "summary.json",
        {
            "cases": len(plans),
            "generator": "pos_bench.rca_synthetic",
            "version": GENERATOR_VERSION,
            "seed": seed,
        },
    )
    return [p.case_id for p in plans]
