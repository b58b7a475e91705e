"""The telemetry of one synthetic RCA case (SPEC-BENCH §4.10): per-minute metrics, logs, traces, Kubernetes events
and alerts, as column tables in the RCA-100 file schemas (§4.2).

Before the fault starts every entity is at its own noisy baseline. From then on the fault's origin shows the
signal that tells its type apart (node CPU, JVM full GC, slow-query logs, 429 or 500 replies, DNS lookups
failing, BackOff or ScalingReplicaSet events), and errors and latency spread to the callers, weakening at each
hop, up to the alerting operation.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
from dataclasses import dataclass
from datetime import UTC, datetime

from pos_bench.benchmarks.rca.shop import (
    LATENCY_FAULTS,
    MINUTES,
    NAMESPACE,
    NODES,
    SERVICES,
    Plan,
    callers,
    epoch_us,
    iso,
    operation,
)

Table = dict[str, list]
"""Column name → values: one parquet file."""


@dataclass(frozen=True)
class Effect:
    """How a service behaves while the fault is active."""

    error: float = 0.0
    """Share of requests failing, on top of the baseline."""
    slow: float = 1.0
    """Latency factor."""
    traffic: float = 1.0
    """Share of the usual requests still arriving."""
    via: str = ""
    """The callee the trouble comes from; empty at the origin."""


ORIGIN = {
    "podCrashLoop": Effect(0.45, 1.5),
    "slowSQL": Effect(0.08, 12.0),
    "httpError5xx": Effect(0.5, 1.1),
    "fullGC": Effect(0.06, 8.0),
    "dnsResolutionFailure": Effect(0.55, 1.2),
    "rateLimiting": Effect(0.4, 1.0),
    "replicaScaleDown": Effect(0.0, 1.0, traffic=0.0),
    "nodeCpuHigh": Effect(0.04, 5.0),
}

ROOT_SPAN = {
    "podCrashLoop": "transport: connection reset by peer",
    "slowSQL": "context deadline exceeded",
    "httpError5xx": "HTTP 500 Internal Server Error",
    "fullGC": "context deadline exceeded",
    "dnsResolutionFailure": "name resolution failed for {callee}",
    "rateLimiting": "HTTP 429 Too Many Requests",
    "nodeCpuHigh": "context deadline exceeded",
}
ROOT_LOG = {
    "podCrashLoop": "FATAL config: required variable {env} is not set; exiting with code 1",
    "slowSQL": "WARN slow query took {ms} ms: SELECT * FROM {table} WHERE id = $1",
    "httpError5xx": "ERROR {method} failed: 500 Internal Server Error (order state invariant violated)",
    "fullGC": "WARN [GC] Full GC (Ergonomics) pause {sec} s, heap {mb}M->{mb}M of 2048M",
    "dnsResolutionFailure": "ERROR dial tcp: lookup {callee} on 10.96.0.10:53: no such host",
    "rateLimiting": "WARN request rejected by rate limiter: 429 Too Many Requests (quota exceeded)",
    "nodeCpuHigh": "WARN {method} took {ms} ms, container CPU throttled",
}


def effects(plan: Plan) -> dict[str, Effect]:
    """Every affected service's behaviour during the fault: the origin(s), then callers hop by hop."""
    if plan.fault == "nodeCpuHigh":
        on_node = sorted({s for s, node in plan.pods.values() if node == plan.root})
        found = {s: ORIGIN["nodeCpuHigh"] for s in on_node}
    else:
        found = {plan.root: ORIGIN[plan.fault]}
    todo = list(found)
    while todo:
        callee = todo.pop(0)
        seen = found[callee]
        error = 0.9 if seen.traffic == 0 else seen.error
        for caller in callers(callee):
            hop = Effect(0.6 * error, 1 + 0.5 * (seen.slow - 1), via=callee)
            old = found.get(caller)
            if old is None or (old.via and hop.error + hop.slow > old.error + old.slow):
                found[caller] = hop
                todo.append(caller)
    return found


def _utc(minute: float) -> str:
    return datetime.fromtimestamp(epoch_us(minute) / 1e6, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _digest(*parts: object) -> str:
    return hashlib.sha1("/".join(map(str, parts)).encode()).hexdigest()[:12]


def _event(reason: str, kind: str, name: str, message: str, minute: float, kind_: str, count: int = 1) -> str:
    record = {
        "metadata": {"name": f"{name}.{_digest(reason, minute)}", "namespace": NAMESPACE},
        "reason": reason,
        "involvedObject": {"kind": kind, "name": name, "namespace": NAMESPACE},
        "message": message,
        "firstTimestamp": _utc(max(0.0, minute - count)),
        "lastTimestamp": _utc(minute),
        "type": kind_,
        "count": count,
    }
    return json.dumps(record, sort_keys=True)


class _Drawer:
    """Draws the five tables of one case; one instance per case."""

    def __init__(self, plan: Plan, rng: random.Random):
        self.plan, self.rng = plan, rng
        self.effects = effects(plan)
        self.callee = (
            SERVICES[plan.root].calls[0] if plan.root in SERVICES and SERVICES[plan.root].calls else ""
        )
        self.metrics: Table = {"time": [], "entity_name": [], "metric": [], "value": []}
        self.logs: Table = {"_time_": [], "_pod_name_": [], "content": []}
        self.traces: Table = {
            "serviceName": [],
            "spanName": [],
            "startTime": [],
            "duration": [],
            "statusCode": [],
            "statusMessage": [],
        }
        self.events: list[tuple[float, str]] = []
        self.alert_values: list[tuple[int, float]] = []

    def effect(self, service: str, minute: int) -> Effect | None:
        return self.effects.get(service) if minute >= self.plan.start else None

    def metric(self, minute: int, entity: str, name: str, value: float) -> None:
        for column, item in zip(self.metrics, (epoch_us(minute), entity, name, round(float(value), 6))):
            self.metrics[column].append(item)

    def services(self, minute: int) -> None:
        rng, plan = self.rng, self.plan
        for service, spec in SERVICES.items():
            e = self.effect(service, minute) or Effect()
            rate = spec.rate * rng.uniform(0.93, 1.07) * e.traffic
            if service == self.callee and minute >= plan.start and plan.fault == "dnsResolutionFailure":
                rate *= 0.6  # its caller can no longer find it
            errors = round(rate * (0.003 + e.error) * rng.uniform(0.85, 1.15))
            latency = spec.latency_ms * rng.uniform(0.9, 1.15) * e.slow
            self.metric(minute, service, "request_count", round(rate))
            if rate:
                self.metric(minute, service, "error_count", errors)
                self.metric(minute, service, "error_rate", errors / rate)
                self.metric(minute, service, "avg_duration_ms", latency)
            if service in ("frontend", "checkout"):
                for method in spec.methods:
                    op = operation(service, method)
                    share = len(spec.methods)
                    self.metric(minute, op, "request_count", round(rate / share))
                    self.metric(minute, op, "error_count", round(errors / share))
                    self.metric(minute, op, "avg_duration_ms", latency * rng.uniform(0.95, 1.05))
                    if op == plan.alert_operation and minute >= plan.start + 2:
                        value = latency if plan.fault in LATENCY_FAULTS else errors / share
                        self.alert_values.append((minute, round(value, 3)))
            if spec.language == "java":
                full = plan.fault == "fullGC" and service == plan.root and minute >= plan.start
                self.metric(
                    minute, service, "arms_jvm_gc_delta", rng.randint(28, 40) if full else rng.randint(1, 3)
                )
                self.metric(
                    minute,
                    service,
                    "arms_jvm_gc_seconds_delta",
                    rng.uniform(9, 20) if full else rng.uniform(0.02, 0.08),
                )
                used = rng.uniform(0.95, 0.99) if full else rng.uniform(0.4, 0.6)
                self.metric(minute, service, "arms_jvm_mem_used_bytes", round(used * 2**31))
                self.metric(minute, service, "arms_jvm_mem_max_bytes", 2**31)

    def infrastructure(self, minute: int) -> None:
        rng, plan = self.rng, self.plan
        hot = plan.fault == "nodeCpuHigh" and minute >= plan.start
        for index, node in enumerate(NODES):
            cpu = rng.uniform(93, 99) if hot and node == plan.root else 30 + 6 * index + rng.uniform(-4, 4)
            running = sum(1 for pod in plan.pods if plan.pods[pod][1] == node and self.pod_alive(pod, minute))
            self.metric(minute, node, "node_cpu_usage_rate", cpu)
            self.metric(minute, node, "node_memory_usage_rate", 55 + 4 * index + rng.uniform(-2, 2))
            self.metric(minute, node, "node_disk_usage_rate", 38 + rng.uniform(-1, 1))
            self.metric(minute, node, "node_ready_status", 1)
            self.metric(minute, node, "node_pod_running_count", running)
        for pod, (service, node) in plan.pods.items():
            if not self.pod_alive(pod, minute):
                continue
            throttled = hot and node == plan.root
            self.metric(
                minute, pod, "pod_cpu_usage_rate", rng.uniform(85, 100) if throttled else rng.uniform(8, 30)
            )
            crashing = plan.fault == "podCrashLoop" and service == plan.root and minute >= plan.start
            self.metric(minute, pod, "pod_restart_count", (minute - plan.start) // 2 + 1 if crashing else 0)

    def pod_alive(self, pod: str, minute: int) -> bool:
        service = self.plan.pods[pod][0]
        return not (
            self.plan.fault == "replicaScaleDown" and service == self.plan.root and minute >= self.plan.start
        )

    def spans(self, minute: int) -> None:
        rng = self.rng
        for service, spec in SERVICES.items():
            e = self.effect(service, minute)
            if e is not None and e.traffic == 0:
                continue
            count = 2 if e is None else 4
            failing = 0 if e is None or e.error < 0.02 else math.ceil(count * min(1.0, e.error + 0.25))
            for index in range(count):
                slow = 1.0 if e is None else e.slow
                duration = spec.latency_ms * slow * rng.lognormvariate(0, 0.25)
                if index < failing:
                    message = self.span_message(service, e)
                    code = "2"
                else:
                    message, code = "", "0"
                second = rng.uniform(0, 59)
                row = (service, rng.choice(spec.methods), epoch_us(minute + second / 60) * 1000)
                for column, item in zip(self.traces, (*row, round(duration * 1e6), code, message)):
                    self.traces[column].append(item)

    def span_message(self, service: str, e: Effect) -> str:
        if e.via:
            if self.plan.fault == "replicaScaleDown" and e.via == self.plan.root:
                return f"upstream {e.via}: no healthy endpoints, connection refused"
            return f"upstream {e.via} request failed"
        return ROOT_SPAN[self.plan.fault].format(callee=self.callee)

    def lines(self, minute: int) -> None:
        rng, plan = self.rng, self.plan
        for pod, (service, node) in plan.pods.items():
            if not self.pod_alive(pod, minute):
                continue
            spec = SERVICES[service]
            method = rng.choice(spec.methods)
            texts = [f"INFO {method} completed status=OK in {spec.latency_ms * rng.uniform(0.8, 1.3):.1f} ms"]
            e = self.effect(service, minute)
            origin = e is not None and not e.via
            if plan.fault == "nodeCpuHigh" and origin and node != plan.root:
                origin = False
            if origin:
                fields = {
                    "env": f"{service.upper().replace('-', '_')}_ADDR",
                    "ms": rng.randint(2500, 9000),
                    "table": "products" if service == "product-catalog" else "payments",
                    "method": method,
                    "sec": round(rng.uniform(1.5, 4.0), 2),
                    "mb": rng.randint(1950, 2040),
                    "callee": self.callee,
                }
                texts += [ROOT_LOG[plan.fault].format(**fields)] * 2
            elif e is not None and e.via:
                verb = "slow" if plan.fault in LATENCY_FAULTS else "failed"
                texts.append(f"ERROR call to {e.via} {verb}: upstream returned an error")
            for text in texts:
                self.logs["_time_"].append(iso(minute + rng.uniform(0, 59) / 60))
                self.logs["_pod_name_"].append(pod)
                self.logs["content"].append(text)

    def k8s_events(self) -> None:
        rng, plan = self.rng, self.plan
        for pod in rng.sample(sorted(plan.pods), 3):
            minute = rng.uniform(1, 5)
            node = plan.pods[pod][1]
            self.events.append(
                (minute, _event("Pulled", "Pod", pod, "Container image already present", minute, "Normal"))
            )
            self.events.append(
                (minute, _event("Started", "Pod", pod, f"Started container on {node}", minute, "Normal"))
            )
        if rng.random() < 0.5:
            name = f"load-generator-{rng.getrandbits(36):09x}"
            text = "0/3 nodes are available: 3 Insufficient memory."
            self.events.append((8.0, _event("FailedScheduling", "Pod", name, text, 8.0, "Warning", 3)))
            # Distractors: the load generator is not part of the shop, whatever happens to it.
            text = "Container load-generator was OOMKilled (exit code 137)"
            self.events.append((6.0, _event("OOMKilled", "Pod", name, text, 6.0, "Warning")))
        root_pods = [pod for pod, (service, _) in plan.pods.items() if service == plan.root]
        if plan.fault == "podCrashLoop":
            for pod in root_pods:
                for step, minute in enumerate(range(plan.start + 1, MINUTES, 4), start=1):
                    text = f"Back-off restarting failed container {plan.root} in pod {pod}"
                    self.events.append(
                        (minute, _event("BackOff", "Pod", pod, text, minute, "Warning", 3 * step))
                    )
        if plan.fault == "replicaScaleDown":
            template = root_pods[0].rsplit("-", 1)[0]
            text = f"Scaled down replica set {template} to 0 from {len(root_pods)}"
            self.events.append(
                (plan.start, _event("ScalingReplicaSet", "Deployment", plan.root, text, plan.start, "Normal"))
            )
            for pod in root_pods:
                text = f"Stopping container {plan.root}"
                self.events.append(
                    (plan.start + 0.2, _event("Killing", "Pod", pod, text, plan.start + 0.2, "Normal"))
                )

    def tables(self) -> dict[str, Table]:
        for minute in range(MINUTES):
            self.services(minute)
            self.infrastructure(minute)
            self.spans(minute)
            self.lines(minute)
        self.k8s_events()
        self.events.sort(key=lambda item: item[0])
        alerts: Table = {"time": [], "status": [], "severity": [], "data": []}
        for minute, value in self.alert_values:
            alerts["time"].append(epoch_us(minute))
            alerts["status"].append("firing")
            alerts["severity"].append("P2")
            alerts["data"].append(json.dumps({"currentValue": value, "entity": self.plan.alert_operation}))
        return {
            "metrics": self.metrics,
            "logs": self.logs,
            "traces": self.traces,
            "events": {"eventId": [text for _, text in self.events]},
            "alerts": alerts,
        }


def draw(plan: Plan, rng: random.Random) -> dict[str, Table]:
    """The five telemetry tables of `plan`, keyed by file stem (`metrics` → metrics.parquet)."""
    return _Drawer(plan, rng).tables()
