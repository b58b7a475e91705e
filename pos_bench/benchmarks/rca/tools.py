"""The nine RCA-100 query tools (SPEC-BENCH §4.4) over one case's telemetry (their specs: `tool_specs.py`).

Every tool returns a compact JSON string; times are shown in Asia/Shanghai (+08:00) whatever unit or format
the file stores them in; limits are clamped to [1, max]. Problems the agent can fix (an unknown entity or
metric) come back as a JSON object with an `error` key and suggestions.
"""

from __future__ import annotations

import difflib
import inspect
import json
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta, timezone
from typing import Any

import pandas as pd

from pos_bench.benchmarks.rca.data import CaseData
from pos_bench.benchmarks.rca.tool_specs import SPECS, ArgumentError

SHANGHAI = timezone(timedelta(hours=8))


def to_us(column: pd.Series) -> pd.Series:
    """Epoch microseconds from numbers in s/ms/µs/ns (told apart by magnitude) or date-time strings."""
    if pd.api.types.is_numeric_dtype(column):
        values = column.astype("float64")
        size = values.abs().median() if len(values) else 0.0
        factor = 1e-3 if size > 1e17 else 1.0 if size > 1e14 else 1e3 if size > 1e11 else 1e6
        return (values * factor).round().astype("int64")
    # One unreadable stamp in a real case must not make the whole case unreadable: it shows as the epoch.
    stamps = pd.to_datetime(column, utc=True, format="ISO8601", errors="coerce")
    return stamps.fillna(pd.Timestamp(0, tz="UTC")).dt.as_unit("us").astype("int64")


def shown(us: float) -> str:
    return datetime.fromtimestamp(float(us) / 1e6, SHANGHAI).isoformat(timespec="seconds")


def _span(times: pd.Series) -> list[str] | None:
    return [shown(times.min()), shown(times.max())] if len(times) else None


def _similar(name: str, names: list[str], n: int = 10) -> list[str]:
    low = name.lower()
    hits = [x for x in names if low in x.lower() or x.lower() in low]
    return (hits or difflib.get_close_matches(name, names, n=n, cutoff=0.5))[:n]


def _event_record(raw: str) -> dict[str, Any]:
    try:
        event = json.loads(raw) if isinstance(raw, str) else dict(raw)
    except (json.JSONDecodeError, TypeError, ValueError):
        event = {"message": str(raw)}  # shown as text rather than hiding the row
    target = event.get("involvedObject") or {}
    return {
        "last_time": event.get("lastTimestamp") or event.get("eventTime") or event.get("firstTimestamp"),
        "type": event.get("type"),
        "reason": event.get("reason"),
        "object": f"{target.get('kind', '')}/{target.get('name', '')}",
        "count": event.get("count"),
        "message": str(event.get("message") or "")[:200],
    }


class QueryTools:
    """The query tools bound to one case; `call` dispatches by name and checks the argument names."""

    def __init__(self, case: CaseData):
        self.metrics = case.metrics.assign(
            at_us=to_us(case.metrics["time"]), entity_lc=case.metrics["entity_name"].str.lower()
        )
        self.logs = case.logs.assign(at_us=to_us(case.logs["_time_"])).sort_values("at_us", kind="stable")
        self.traces = case.traces.assign(
            at_us=to_us(case.traces["startTime"]), dur_ms=case.traces["duration"] / 1e6
        )
        records = [_event_record(raw) for raw in case.events["eventId"]]
        self.events = pd.DataFrame(
            records, columns=["last_time", "type", "reason", "object", "count", "message"]
        )
        if records:
            self.events = self.events.assign(
                at_us=to_us(self.events["last_time"].fillna("1970-01-01T00:00:00Z"))
            )
        self.events_text = [json.dumps(r, ensure_ascii=False).lower() for r in records]
        self.alerts = case.alerts.assign(at_us=to_us(case.alerts["time"])).sort_values("at_us", kind="stable")
        self.entities = {e["id"]: e for e in case.topology.get("entities", [])}
        self.edges = case.topology.get("edges", [])
        self.tools: dict[str, Callable[..., dict[str, Any]]] = {name: getattr(self, name) for name in SPECS}

    def call(self, name: str, arguments: Mapping[str, Any]) -> str:
        """Run tool `name`; raises ArgumentError for unknown or ill-typed arguments."""
        tool = self.tools[name]
        given = {key: value for key, value in arguments.items() if value is not None}  # null = default
        try:
            inspect.signature(tool).bind(**given)
        except TypeError as err:
            allowed = ", ".join(SPECS[name].args) or "none"
            raise ArgumentError(f"{err}; {name} takes these arguments: {allowed}") from None
        values = {key: self._coerce(name, key, value) for key, value in given.items()}
        return json.dumps(tool(**values), ensure_ascii=False, separators=(",", ":"), default=str)

    @staticmethod
    def _coerce(tool: str, key: str, value: Any) -> Any:
        arg = SPECS[tool].args[key]
        if arg.type == "integer":
            whole = isinstance(value, float) and value.is_integer()
            digits = isinstance(value, str) and value.strip().lstrip("-").isdigit()
            number = int(value) if whole or digits else value
            if isinstance(number, bool) or not isinstance(number, int):
                raise ArgumentError(f"{key} must be an integer; got {value!r}")
            return max(1, min(number, arg.maximum or number))
        if arg.type == "number":
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ArgumentError(f"{key} must be a number; got {value!r}")
            return float(value)
        if arg.type == "boolean":
            if not isinstance(value, bool):
                raise ArgumentError(f"{key} must be true or false; got {value!r}")
            return value
        if not isinstance(value, str):
            raise ArgumentError(f"{key} must be a string; got {value!r}")
        return value.strip()

    # ---- the tools -------------------------------------------------------------------------------

    def get_data_overview(self) -> dict[str, Any]:
        m, lg, tr = self.metrics, self.logs, self.traces
        return {
            "metrics": {
                "rows": len(m),
                "entities": int(m["entity_name"].nunique()),
                "metrics": int(m["metric"].nunique()),
                "time_range": _span(m["at_us"]),
            },
            "logs": {
                "rows": len(lg),
                "pods": int(lg["_pod_name_"].nunique()),
                "time_range": _span(lg["at_us"]),
            },
            "traces": {
                "rows": len(tr),
                "services": int(tr["serviceName"].nunique()),
                "time_range": _span(tr["at_us"]),
            },
            "k8s_events": {"rows": len(self.events)},
            "alerts": {"rows": len(self.alerts)},
            "topology": {"entities": len(self.entities), "edges": len(self.edges)},
        }

    def list_entities(self, entity_type: str, keyword: str | None = None, limit: int = 50) -> dict[str, Any]:
        kind = entity_type.lower()
        names = sorted({e["name"] for e in self.entities.values() if str(e.get("type")).lower() == kind})
        if keyword:
            names = [n for n in names if keyword.lower() in n.lower()]
        out: dict[str, Any] = {
            "entity_type": entity_type,
            "matched": len(names),
            "returned": min(limit, len(names)),
        }
        out["names"] = names[:limit]
        if not names and not keyword:
            out["available_types"] = sorted({e.get("type") for e in self.entities.values()})
        return out

    def list_metric_names(
        self, entity_name: str | None = None, keyword: str | None = None, limit: int = 80
    ) -> dict[str, Any]:
        rows = self.metrics
        if entity_name:
            rows = rows[rows["entity_lc"] == entity_name.lower()]
            if rows.empty:
                similar = _similar(entity_name, sorted(self.metrics["entity_name"].unique()))
                return {"error": f"no metrics for entity {entity_name!r}", "similar_entities": similar}
        counts = rows.groupby("metric")["entity_name"].nunique().sort_index()
        if keyword:
            counts = counts[counts.index.str.lower().str.contains(keyword.lower(), regex=False)]
        return {
            "entity_name": entity_name,
            "matched": len(counts),
            "returned": min(limit, len(counts)),
            "metrics": [{"metric": k, "entities": int(v)} for k, v in counts.head(limit).items()],
            "hint": "Copy metric names verbatim into query_metrics.",
        }

    def get_topology(
        self, entity_name: str | None = None, relation: str | None = None, limit: int = 30
    ) -> dict[str, Any]:
        entities = list(self.entities.values())
        if not entity_name:
            counts: dict[str, int] = {}
            for e in entities:
                counts[e["type"]] = counts.get(e["type"], 0) + 1
            kinds = {"services": "apm.service", "nodes": "k8s.node"}
            names = {k: sorted({e["name"] for e in entities if e["type"] == t}) for k, t in kinds.items()}
            return {"entity_counts": dict(sorted(counts.items())), **names}
        found = [e for e in entities if e["name"].lower() == entity_name.lower()]
        if not found:
            similar = _similar(entity_name, sorted({e["name"] for e in entities}))
            return {"error": f"entity {entity_name!r} not found in the topology", "similar_entities": similar}
        ids = {e["id"] for e in found}
        edges = [
            {
                "src": self._name(edge["src"]),
                "src_type": edge.get("src_type"),
                "relation": edge.get("relation"),
                "dst": self._name(edge["dst"]),
                "dst_type": edge.get("dst_type"),
            }
            for edge in self.edges
            if (edge["src"] in ids or edge["dst"] in ids)
            and (not relation or edge.get("relation") == relation)
        ]
        return {
            "entity_name": found[0]["name"],
            "matches": [
                {
                    "type": e["type"],
                    "props": {k: v for k, v in (e.get("props") or {}).items() if v not in (None, "")},
                }
                for e in found
            ],
            "edges_matched": len(edges),
            "edges": edges[:limit],
        }

    def _name(self, entity: str) -> str:
        return self.entities[entity]["name"] if entity in self.entities else entity

    def query_metrics(self, entity_name: str, metric: str | None = None, limit: int = 40) -> dict[str, Any]:
        rows = self.metrics[self.metrics["entity_lc"] == entity_name.lower()]
        if rows.empty:
            similar = _similar(entity_name, sorted(self.metrics["entity_name"].unique()))
            return {"error": f"no metrics for entity {entity_name!r}", "similar_entities": similar}
        if not metric:
            stats = rows.groupby("metric")["value"].agg(["count", "min", "mean", "max"]).head(60)
            return {
                "entity_name": entity_name,
                "metrics": {
                    name: {
                        "count": int(r["count"]),
                        **{k: round(float(r[k]), 6) for k in ("min", "mean", "max")},
                    }
                    for name, r in stats.iterrows()
                },
            }
        series = rows[rows["metric"].str.lower() == metric.lower()]
        if series.empty:
            return {
                "error": f"metric {metric!r} not reported for {entity_name!r}",
                "available": sorted(rows["metric"].unique())[:80],
            }
        minutes = series.groupby(series["at_us"] // 60_000_000 * 60_000_000)["value"].mean().sort_index()
        latest = minutes.tail(limit)
        return {
            "entity_name": entity_name,
            "metric": series["metric"].iloc[0],
            "min": round(float(series["value"].min()), 6),
            "mean": round(float(series["value"].mean()), 6),
            "max": round(float(series["value"].max()), 6),
            "total_minutes": len(minutes),
            "returned_minutes": len(latest),
            "truncated_to_latest": len(latest) < len(minutes),
            "series": [{"time": shown(t), "value": round(float(v), 6)} for t, v in latest.items()],
        }

    def search_logs(
        self, pod_name: str | None = None, keyword: str | None = None, limit: int = 20
    ) -> dict[str, Any]:
        rows = self.logs
        if pod_name:
            rows = rows[rows["_pod_name_"].str.lower().str.startswith(pod_name.lower())]
        if keyword:
            rows = rows[rows["content"].str.lower().str.contains(keyword.lower(), regex=False)]
        latest = rows.tail(limit)
        lines = [
            {"time": shown(us), "pod": pod, "content": str(content)[:300]}
            for us, pod, content in zip(latest["at_us"], latest["_pod_name_"], latest["content"])
        ]
        return {"matched": len(rows), "returned": len(lines), "lines": lines}

    def query_traces(
        self,
        service_name: str | None = None,
        error_only: bool = False,
        min_duration_ms: float | None = None,
        limit: int = 10,
    ) -> dict[str, Any]:
        rows = self.traces
        if service_name:
            rows = rows[rows["serviceName"].str.lower() == service_name.lower()]
        if error_only:
            rows = rows[rows["statusCode"].astype(str) == "2"]
        if min_duration_ms is not None:
            rows = rows[rows["dur_ms"] >= min_duration_ms]
        spans = [
            {
                "start": shown(r.at_us),
                "service": r.serviceName,
                "span": str(r.spanName)[:80],
                "duration_ms": round(float(r.dur_ms), 3),
                "status_code": str(r.statusCode),
                "status_message": str(r.statusMessage or "")[:80],
            }
            for r in rows.sort_values("dur_ms", ascending=False, kind="stable")
            .head(limit)
            .itertuples(index=False)
        ]
        mean = round(float(rows["dur_ms"].mean()), 3) if len(rows) else None
        peak = round(float(rows["dur_ms"].max()), 3) if len(rows) else None
        return {"matched": len(rows), "duration_mean_ms": mean, "duration_max_ms": peak, "spans": spans}

    def get_k8s_events(self, keyword: str | None = None, limit: int = 20) -> dict[str, Any]:
        keep = [i for i, text in enumerate(self.events_text) if not keyword or keyword.lower() in text]
        rows = self.events.iloc[keep]
        if len(rows):
            rows = rows.sort_values("at_us", ascending=False, kind="stable")
        columns = ["last_time", "type", "reason", "object", "count", "message"]
        events = (
            [
                {**dict(zip(columns, values)), "last_time": shown(us)}
                for *values, us in rows.head(limit)[[*columns, "at_us"]].itertuples(index=False)
            ]
            if len(rows)
            else []
        )
        return {"matched": len(rows), "returned": len(events), "events": events}

    def get_alerts(self, limit: int = 12) -> dict[str, Any]:
        alerts = []
        for r in self.alerts.head(limit).itertuples(index=False):
            try:
                data = json.loads(r.data) if isinstance(r.data, str) else r.data
                value = data.get("currentValue") if isinstance(data, Mapping) else None
            except json.JSONDecodeError:
                value = None
            alerts.append(
                {"time": shown(r.at_us), "status": r.status, "severity": r.severity, "current_value": value}
            )
        return {"total": len(self.alerts), "returned": len(alerts), "alerts": alerts}
