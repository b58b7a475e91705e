"""What each RCA-100 query tool accepts (SPEC-BENCH §4.4): its description, arguments with defaults and clamps,
and the OpenAI function schemas built from them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Arg:
    type: str
    description: str
    default: Any = None
    maximum: int | None = None
    """Clamp for `limit` arguments."""


@dataclass(frozen=True)
class ToolSpec:
    description: str
    args: dict[str, Arg]
    required: tuple[str, ...] = ()


SPECS: dict[str, ToolSpec] = {
    "get_data_overview": ToolSpec(
        "Row counts, distinct entities/pods/services and time ranges of every data source, and topology size.",
        {},
        (),
    ),
    "list_entities": ToolSpec(
        "Distinct topology entity names of one type (apm.service, apm.operation, k8s.pod, k8s.node, "
        "k8s.deployment), sorted, optionally filtered by a case-insensitive substring.",
        {
            "entity_type": Arg("string", "Topology entity type, e.g. apm.service or k8s.node."),
            "keyword": Arg("string", "Case-insensitive substring filter on the name."),
            "limit": Arg("integer", "Names to return (default 50, at most 100).", 50, 100),
        },
        ("entity_type",),
    ),
    "list_metric_names": ToolSpec(
        "Metric names with how many entities report each; optionally for one entity and/or by substring.",
        {
            "entity_name": Arg("string", "Exact entity name (case-insensitive)."),
            "keyword": Arg("string", "Case-insensitive substring of the metric name."),
            "limit": Arg("integer", "Metric names to return (default 80, at most 120).", 80, 120),
        },
        (),
    ),
    "get_topology": ToolSpec(
        "Without entity_name: entity counts by type plus all service and node names. With it: the entity's "
        "type, properties and the edges touching it (optionally one relation such as calls, contains, hosts).",
        {
            "entity_name": Arg("string", "Exact entity name (case-insensitive)."),
            "relation": Arg("string", "Only edges with this relation."),
            "limit": Arg("integer", "Edges to return (default 30, at most 50).", 30, 50),
        },
        (),
    ),
    "query_metrics": ToolSpec(
        "Without metric: count/min/mean/max of every metric of the entity. With metric: its per-minute mean "
        "series (the latest `limit` minutes) and overall min/mean/max.",
        {
            "entity_name": Arg(
                "string", "Exact entity name (case-insensitive): a service, node, pod or operation."
            ),
            "metric": Arg("string", "Exact metric name, as listed by list_metric_names."),
            "limit": Arg("integer", "Latest minutes to return (default 40, at most 60).", 40, 60),
        },
        ("entity_name",),
    ),
    "search_logs": ToolSpec(
        "Log lines filtered by pod-name prefix and/or a substring of the content (both case-insensitive); "
        "returns the number matched and the latest `limit` lines.",
        {
            "pod_name": Arg("string", "Pod name prefix, e.g. a service name."),
            "keyword": Arg("string", "Substring of the log line."),
            "limit": Arg("integer", "Lines to return (default 20, at most 50).", 20, 50),
        },
        (),
    ),
    "query_traces": ToolSpec(
        "Spans filtered by service, error status and minimum duration; returns counts, mean/max duration and "
        "the slowest `limit` spans.",
        {
            "service_name": Arg("string", "Exact service name (case-insensitive)."),
            "error_only": Arg("boolean", "Only spans with error status (code 2); default false.", False),
            "min_duration_ms": Arg("number", "Only spans at least this long, in milliseconds."),
            "limit": Arg("integer", "Spans to return (default 10, at most 30).", 10, 30),
        },
        (),
    ),
    "get_k8s_events": ToolSpec(
        "Kubernetes events, newest first, optionally filtered by a case-insensitive substring of the record.",
        {
            "keyword": Arg("string", "Substring of the event (reason, object, message...)."),
            "limit": Arg("integer", "Events to return (default 20, at most 50).", 20, 50),
        },
        (),
    ),
    "get_alerts": ToolSpec(
        "The alert records, oldest first.",
        {"limit": Arg("integer", "Alerts to return (default 12, at most 30).", 12, 30)},
        (),
    ),
}
"""Tool name → its description and arguments."""


def schemas() -> tuple[dict[str, Any], ...]:
    def prop(arg: Arg) -> dict[str, Any]:
        return {"type": arg.type, "description": arg.description}

    return tuple(
        {
            "type": "function",
            "function": {
                "name": name,
                "description": spec.description,
                "parameters": {
                    "type": "object",
                    "properties": {key: prop(arg) for key, arg in spec.args.items()},
                    "required": list(spec.required),
                },
            },
        }
        for name, spec in SPECS.items()
    )


class ArgumentError(ValueError):
    """A call whose argument names or values do not fit the tool."""
