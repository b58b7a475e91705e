"""The RCA-100 fault-type catalog and the scoring rules (SPEC-BENCH §4.7, §4.9).

A submission names one root-cause entity (a service or node, verbatim) and one fault type from the 29 ids.
Entities match after trimming, collapsing whitespace and lowercasing; fault types after trimming, dropping a
leading `F<digits>-` and lowercasing, and only when they then spell a catalog id.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

FAULT_TYPES: dict[str, str] = {
    "nodeDown": "a host is down or unreachable, and every pod on it goes with it",
    "threadExhaustion": "the application's thread pool is full, so requests queue up or time out",
    "trafficHotspot": "load piles onto one key, product or endpoint and overloads one partition or pod",
    "messageQueueBacklog": "consumers fall behind producers; queue depth and delivery delay keep growing",
    "trafficSurge": "incoming traffic jumps well beyond what the system can serve",
    "memoryPressure": "memory close to its limit with bursts of GC; slower, but nothing is OOM-killed",
    "cacheBreakdown": "cache misses or a mass invalidation send a flood of requests to the backend",
    "slowSQL": "slow database queries make the requests above them pile up and time out",
    "codeDefect": "some other bug in the code (validation, logic, configuration)",
    "cpuDeadLoop": "an endless loop holds one core at 100% in one hot method",
    "httpError5xx": "a service answers 5xx and the evidence points to nothing more specific (the fallback)",
    "rateLimiting": "throttling, quotas or protective rejection, usually HTTP 429",
    "dbNetworkLatency": "delay, jitter or loss on the network path to a dependency such as the database",
    "loadBalancerFailure": "broken Service endpoints or a misconfigured load balancer",
    "fullGC": "back-to-back full garbage collections with long stop-the-world pauses",
    "nullPointerException": "a null dereference makes an endpoint throw and return 500s",
    "diskIOHigh": "disk operations per second or disk latency far above normal",
    "nodeCpuHigh": "a host's CPU is saturated, so several pods placed on it slow down together",
    "redisUnavailable": "Redis or the cache cannot be reached or refuses connections",
    "nodeMemoryOOM": "a host runs out of memory and the kernel OOM killer ends processes",
    "slowResource": "slow static resources or raised response time, often only a node on the propagation path",
    "cpuFullLoad": "application CPU high across all cores (heavy computation, load or concurrency)",
    "replicaScaleDown": "a deployment scaled to zero replicas: no endpoints remain and its traffic stops",
    "resourceLimitMisconfig": "container limits set too low: OOM-killed or throttled under normal load, again after restarts",
    "podCrashLoop": "containers exit right after starting; CrashLoopBackOff with fast-rising restart counts",
    "podPendingUnschedulable": "pods stay Pending (node selectors, taints, resources or volumes)",
    "podRestartFlapping": "pods restart every so often, so the service is up only part of the time",
    "networkPolicyIsolation": "a network policy blocks traffic between particular services",
    "dnsResolutionFailure": "service names fail to resolve through DNS, or resolve to the wrong place",
}
"""The 29 fault-type ids with one-line meanings (the `fault_type` enum of submit_root_cause)."""

_BY_LOWER = {name.lower(): name for name in FAULT_TYPES}
_PREFIX = re.compile(r"^f\d+-", re.IGNORECASE)


def norm_entity(name: str) -> str:
    return " ".join(name.split()).lower()


def norm_fault_type(name: str) -> str | None:
    """The catalog id `name` stands for (`F014-httpError5xx` → `httpError5xx`), or None when it is none."""
    return _BY_LOWER.get(_PREFIX.sub("", name.strip()).lower())


@dataclass(frozen=True)
class Verdict:
    entity_correct: bool
    type_correct: bool

    @property
    def joint(self) -> bool:
        return self.entity_correct and self.type_correct


def judge(entity: str, fault_type: str, entities: Iterable[str], types: Iterable[str]) -> Verdict:
    """Compare one submission with the labelled root-cause entities and fault types."""
    submitted = norm_fault_type(fault_type)
    labelled = {norm_fault_type(t) or t.strip().lower() for t in types}
    return Verdict(
        entity_correct=norm_entity(entity) in {norm_entity(e) for e in entities},
        type_correct=submitted is not None and submitted in labelled,
    )
