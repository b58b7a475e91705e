import json

import pandas as pd
import pytest

from pos_bench.benchmarks.rca.data import CaseData
from pos_bench.benchmarks.rca.tool_specs import SPECS, ArgumentError, schemas
from pos_bench.benchmarks.rca.tools import QueryTools, shown, to_us

T0_US = 1_756_692_000_000_000  # 2025-09-01T10:00:00+08:00


def big_case() -> CaseData:
    """More of everything than any tool may return, so every clamp shows."""
    entities = [
        {"id": f"s{i}", "type": "apm.service", "name": f"svc-{i:03d}", "props": {}} for i in range(150)
    ]
    entities.append({"id": "n1", "type": "k8s.node", "name": "node-a", "props": {"node_name": "node-a"}})
    edges = [
        {"src": "n1", "src_type": "k8s.node", "dst": f"s{i}", "dst_type": "apm.service", "relation": "hosts"}
        for i in range(80)
    ]
    rows = [
        (T0_US + m * 60_000_000, "svc-000", f"metric_{k:03d}", float(m))
        for m in range(90)
        for k in range(130)
    ]
    metrics = pd.DataFrame(rows, columns=["time", "entity_name", "metric", "value"])
    logs = pd.DataFrame(
        {
            "_time_": [f"2025-09-01T02:{m:02d}:00Z" for m in range(60)],
            "_pod_name_": [f"svc-000-abc-{m % 3}" for m in range(60)],
            "content": [f"line {m} " + "x" * 400 for m in range(60)],
        }
    )
    traces = pd.DataFrame(
        {
            "serviceName": ["svc-000"] * 40,
            "spanName": ["/a.B/" + "C" * 100] * 40,
            "startTime": [(T0_US + i * 1_000_000) * 1000 for i in range(40)],
            "duration": [(i + 1) * 1_000_000 for i in range(40)],
            "statusCode": ["2" if i % 2 else "0" for i in range(40)],
            "statusMessage": ["boom " * 30 if i % 2 else "" for i in range(40)],
        }
    )
    event = {
        "reason": "BackOff",
        "involvedObject": {"kind": "Pod", "name": "p"},
        "type": "Warning",
        "count": 1,
    }
    events = pd.DataFrame(
        {
            "eventId": [
                json.dumps({**event, "message": "m" * 300, "lastTimestamp": f"2025-09-01T02:{m:02d}:00Z"})
                for m in range(60)
            ]
        }
    )
    alerts = pd.DataFrame(
        {
            "time": [T0_US + m * 60_000_000 for m in range(40)],
            "status": ["firing"] * 40,
            "severity": ["P1"] * 40,
            "data": [json.dumps({"currentValue": m}) for m in range(40)],
        }
    )
    return CaseData({}, {"entities": entities, "edges": edges}, metrics, logs, traces, events, alerts)


@pytest.fixture(scope="module")
def tools():
    return QueryTools(big_case())


def ask(tools, name, **arguments):
    return json.loads(tools.call(name, arguments))


@pytest.mark.parametrize(
    ("name", "arguments", "count"),
    [
        ("list_entities", {"entity_type": "apm.service"}, lambda r: len(r["names"])),
        ("list_metric_names", {}, lambda r: len(r["metrics"])),
        ("get_topology", {"entity_name": "node-a"}, lambda r: len(r["edges"])),
        ("query_metrics", {"entity_name": "svc-000", "metric": "metric_001"}, lambda r: len(r["series"])),
        ("search_logs", {}, lambda r: len(r["lines"])),
        ("query_traces", {}, lambda r: len(r["spans"])),
        ("get_k8s_events", {}, lambda r: len(r["events"])),
        ("get_alerts", {}, lambda r: len(r["alerts"])),
    ],
)
def test_every_limit_has_its_default_and_is_clamped(tools, name, arguments, count):
    limit = SPECS[name].args["limit"]
    assert count(ask(tools, name, **arguments)) == limit.default
    assert count(ask(tools, name, **arguments, limit=10_000)) == limit.maximum
    assert (
        count(ask(tools, name, **arguments, limit=0)) == count(ask(tools, name, **arguments, limit=-4)) == 1
    )
    assert (
        count(ask(tools, name, **arguments, limit="3"))
        == count(ask(tools, name, **arguments, limit=3.0))
        == 3
    )


def test_tool_results_hold_what_the_spec_lists(tools):
    overview = ask(tools, "get_data_overview")
    assert overview["metrics"] == {
        "rows": 90 * 130,
        "entities": 1,
        "metrics": 130,
        "time_range": ["2025-09-01T10:00:00+08:00", "2025-09-01T11:29:00+08:00"],
    }
    assert (
        overview["logs"]["pods"] == 3
        and overview["k8s_events"] == {"rows": 60}
        and overview["topology"]["edges"] == 80
    )
    assert ask(tools, "list_entities", entity_type="APM.Service", keyword="SVC-14")["matched"] == 10
    assert ask(tools, "list_entities", entity_type="k8s.pod")["available_types"] == [
        "apm.service",
        "k8s.node",
    ]
    assert ask(tools, "list_metric_names", entity_name="SVC-000", keyword="ic_12")["matched"] == 10
    assert "error" in ask(tools, "list_metric_names", entity_name="svc-001")
    summary = ask(tools, "query_metrics", entity_name="svc-000")["metrics"]
    assert len(summary) == 60 and summary["metric_000"] == {
        "count": 90,
        "min": 0.0,
        "mean": 44.5,
        "max": 89.0,
    }
    series = ask(tools, "query_metrics", entity_name="svc-000", metric="METRIC_002", limit=5)
    assert series["truncated_to_latest"] and series["total_minutes"] == 90 and series["returned_minutes"] == 5
    assert [p["value"] for p in series["series"]] == [85.0, 86.0, 87.0, 88.0, 89.0]
    unknown = ask(tools, "query_metrics", entity_name="svc-000", metric="latency")
    assert "error" in unknown and len(unknown["available"]) == 80
    topology = ask(tools, "get_topology")
    assert topology["entity_counts"] == {"apm.service": 150, "k8s.node": 1} and topology["nodes"] == [
        "node-a"
    ]
    node = ask(tools, "get_topology", entity_name="NODE-A", relation="calls")
    assert node["edges_matched"] == 0 and node["matches"] == [
        {"type": "k8s.node", "props": {"node_name": "node-a"}}
    ]
    missing = ask(tools, "get_topology", entity_name="svc-0")
    assert "error" in missing and len(missing["similar_entities"]) == 10


def test_logs_traces_events_alerts_order_filter_and_truncate(tools):
    logs = ask(tools, "search_logs", pod_name="SVC-000-ABC-1", keyword="LINE", limit=2)
    assert logs["matched"] == 20 and [line["content"][:8] for line in logs["lines"]] == [
        "line 55 ",
        "line 58 ",
    ]
    assert (
        len(logs["lines"][0]["content"]) == 300 and logs["lines"][-1]["time"] == "2025-09-01T10:58:00+08:00"
    )
    traces = ask(tools, "query_traces", service_name="SVC-000", error_only=True, min_duration_ms=30, limit=3)
    assert traces["matched"] == 6 and traces["duration_max_ms"] == 40.0
    assert [s["duration_ms"] for s in traces["spans"]] == [40.0, 38.0, 36.0]
    assert len(traces["spans"][0]["span"]) == 80 and len(traces["spans"][0]["status_message"]) == 80
    events = ask(tools, "get_k8s_events", keyword="backoff", limit=2)
    assert events["matched"] == 60 and [e["last_time"][11:16] for e in events["events"]] == ["10:59", "10:58"]
    assert events["events"][0]["object"] == "Pod/p" and len(events["events"][0]["message"]) == 200
    alerts = ask(tools, "get_alerts", limit=2)
    assert [a["current_value"] for a in alerts["alerts"]] == [0, 1] and alerts["alerts"][0][
        "severity"
    ] == "P1"


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        ({"entity": "x"}, "unexpected keyword"),
        ({"limit": True}, "integer"),
        ({"limit": "ten"}, "integer"),
        ({"limit": 2.5}, "integer"),
        ({"entity_name": 7}, "string"),
        ({"entity_name": None}, "missing a required argument"),
    ],
)
def test_bad_arguments_raise_argument_error(tools, arguments, problem):
    with pytest.raises(ArgumentError, match=problem):
        tools.call("query_metrics", {"entity_name": "svc-000", **arguments})


def test_schemas_match_the_tool_signatures(tools):
    listed = {s["function"]["name"]: s["function"]["parameters"] for s in schemas()}
    assert list(listed) == list(SPECS) and len(listed) == 9
    assert listed["query_metrics"]["required"] == ["entity_name"]
    assert listed["list_entities"]["required"] == ["entity_type"]
    assert set(listed["query_traces"]["properties"]) == {
        "service_name",
        "error_only",
        "min_duration_ms",
        "limit",
    }


@pytest.mark.parametrize(
    "values",
    [
        [1_756_692_000],
        [1_756_692_000_000],
        [1_756_692_000_000_000],
        [1_756_692_000_000_000_000],
        ["2025-09-01T10:00:00+08:00"],
        ["2025-09-01 02:00:00"],
        ["2025-09-01T02:00:00.000Z"],
    ],
)
def test_times_in_any_unit_or_format_show_in_shanghai_time(values):
    assert shown(to_us(pd.Series(values)).iloc[0]) == "2025-09-01T10:00:00+08:00"


def test_unreadable_times_and_events_are_shown_not_fatal():
    case = big_case()
    odd = CaseData(
        {},
        case.topology,
        case.metrics,
        case.logs.assign(_time_=["not a time"] + list(case.logs["_time_"][1:])),
        case.traces,
        pd.DataFrame({"eventId": ["plain text event"]}),
        case.alerts,
    )
    tools = QueryTools(odd)
    assert ask(tools, "search_logs", keyword="line 0 ")["lines"][0]["time"] == "1970-01-01T08:00:00+08:00"
    assert ask(tools, "get_k8s_events")["events"][0]["message"] == "plain text event"
