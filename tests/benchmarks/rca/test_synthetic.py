import json

import pandas as pd
import pytest

from pos_bench.benchmarks.rca.shop import FAULT_ROOTS, NODES, SERVICES
from pos_bench.benchmarks.rca.synthetic import CASE_FILES, generate

COLUMNS = {
    "metrics": ["time", "entity_name", "metric", "value"],
    "logs": ["_time_", "_pod_name_", "content"],
    "traces": ["serviceName", "spanName", "startTime", "duration", "statusCode", "statusMessage"],
    "events": ["eventId"],
    "alerts": ["time", "status", "severity", "data"],
}


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    out = tmp_path_factory.mktemp("gen")
    return out, generate(out, 9, seed=5)


def files(root):
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_same_seed_writes_byte_identical_files_and_another_seed_differs(generated, tmp_path):
    out, ids = generated
    assert generate(tmp_path / "again", 9, seed=5) == ids
    assert files(tmp_path / "again") == files(out)
    generate(tmp_path / "other", 2, seed=6)
    other = files(tmp_path / "other")
    assert other["cases/t001/metrics.parquet"] != files(out)["cases/t001/metrics.parquet"]


def test_layout_schemas_and_size(generated):
    out, ids = generated
    assert (out / "manifest.txt").read_text().split() == ids == [f"t{i:03d}" for i in range(1, 10)]
    assert not list((out / "cases").rglob("*.gt.json"))
    for case_id in ids:
        folder = out / "cases" / case_id
        assert sorted(p.name for p in folder.iterdir()) == sorted(CASE_FILES)
        assert sum(p.stat().st_size for p in folder.iterdir()) < 400_000
        for stem, columns in COLUMNS.items():
            assert list(pd.read_parquet(folder / f"{stem}.parquet").columns) == columns
        task = json.loads((folder / "task.json").read_text())
        assert task["task_id"] == case_id and task["alert_entity"]["entity_type"] == "apm.operation"
        assert "::/" in task["alert_entity"]["entity_name"] and "prompt_text" in task
        topology = json.loads((folder / "topology.json").read_text())
        kinds = {e["type"] for e in topology["entities"]}
        assert kinds == {"apm.service", "apm.operation", "k8s.pod", "k8s.node", "k8s.deployment"}
        assert {e["name"] for e in topology["entities"] if e["type"] == "k8s.node"} == set(NODES)
        assert {e["relation"] for e in topology["edges"]} >= {"calls", "contains", "hosts"}


def test_answer_keys_follow_the_gt_schema_and_name_a_service_or_node(generated):
    out, ids = generated
    seen = set()
    for case_id in ids:
        key = json.loads((out / "answer_key" / f"{case_id}.gt.json").read_text())
        entity, fault_id = key["root_cause_entities"][0], key["root_cause_types"][0]
        fault = fault_id.split("-", 1)[1]
        seen.add(fault)
        assert entity in FAULT_ROOTS[fault] and (entity in SERVICES or entity in NODES)
        assert key["incident_id"].startswith(f"{fault_id}.") and key["case_id"] == case_id
        raw = json.loads(key["raw_ground_truth"])
        assert [s["step_type"] for s in raw["reasoning"]["steps"]] == ["cause", "propagation", "impact"]
        assert raw["outcome"]["target_entities"][0]["entity_name"] == entity
        alert = json.loads((out / "cases" / case_id / "task.json").read_text())["alert_entity"]["entity_name"]
        assert not alert.startswith(f"{entity}::")  # the alert surfaces upstream of the root cause
    assert seen == set(FAULT_ROOTS)


def test_events_include_the_kubernetes_reasons_the_spec_names(generated):
    out, ids = generated
    reasons = {
        json.loads(raw)["reason"]
        for case_id in ids
        for raw in pd.read_parquet(out / "cases" / case_id / "events.parquet")["eventId"]
    }
    assert reasons >= {"BackOff", "ScalingReplicaSet", "FailedScheduling", "OOMKilled"}
