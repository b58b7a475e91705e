"""The synthetic shop behind the RCA-100 stand-in (SPEC-BENCH §4.10): services, nodes, fault types, and the
plan of one case (which fault, where, when, which pods, where the alert fires).

An OpenTelemetry-demo-like shop: frontend → checkout → payment, cart, currency, shipping, product-catalog, ad →
valkey-cart, postgres, kafka, with pods on three nodes. A plan is a function of (seed, case number) only.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

GENERATOR_VERSION = 3
"""Bump when the output changes, so cached case sets are regenerated."""
TZ = timezone(timedelta(hours=8))
START = datetime(2025, 9, 1, 10, 0, tzinfo=TZ)
MINUTES = 40
NAMESPACE = "otel-demo"
NODES = ("cn-hongkong.10.0.1.21", "cn-hongkong.10.0.1.37", "cn-hongkong.10.0.1.69")


@dataclass(frozen=True)
class ServiceSpec:
    language: str
    methods: tuple[str, ...]
    calls: tuple[str, ...] = ()
    replicas: int = 1
    rate: float = 60.0
    """Requests per minute at baseline."""
    latency_ms: float = 20.0


SERVICES: dict[str, ServiceSpec] = {
    "frontend": ServiceSpec(
        "typescript",
        ("/oteldemo.Frontend/Checkout", "/oteldemo.Frontend/BrowseProduct", "/oteldemo.Frontend/ViewCart"),
        ("checkout", "product-catalog", "cart", "currency", "ad"),
        2,
        300,
        40,
    ),
    "checkout": ServiceSpec(
        "go",
        ("/oteldemo.CheckoutService/PlaceOrder",),
        ("payment", "cart", "currency", "shipping", "product-catalog", "kafka"),
        2,
        60,
        120,
    ),
    "payment": ServiceSpec("java", ("/oteldemo.PaymentService/Charge",), ("postgres",), 1, 60, 35),
    "cart": ServiceSpec(
        "dotnet",
        ("/oteldemo.CartService/GetCart", "/oteldemo.CartService/AddItem"),
        ("valkey-cart",),
        2,
        200,
        8,
    ),
    "currency": ServiceSpec("cpp", ("/oteldemo.CurrencyService/Convert",), (), 1, 400, 2),
    "shipping": ServiceSpec(
        "rust", ("/oteldemo.ShippingService/GetQuote", "/oteldemo.ShippingService/ShipOrder"), (), 1, 120, 6
    ),
    "product-catalog": ServiceSpec(
        "go",
        ("/oteldemo.ProductCatalogService/GetProduct", "/oteldemo.ProductCatalogService/ListProducts"),
        ("postgres",),
        2,
        350,
        5,
    ),
    "ad": ServiceSpec("java", ("/oteldemo.AdService/GetAds",), (), 1, 150, 12),
    "valkey-cart": ServiceSpec("redis", ("/valkey.Command/HGET", "/valkey.Command/HSET"), (), 1, 400, 1),
    "postgres": ServiceSpec("postgresql", ("/postgresql.Query/SELECT",), (), 1, 410, 3),
    "kafka": ServiceSpec("kafka", ("/kafka.Producer/Send",), (), 1, 60, 4),
}

_APPS = ("checkout", "payment", "cart", "currency", "shipping", "product-catalog", "ad")
_ALL_BUT_FRONTEND = tuple(s for s in SERVICES if s != "frontend")
FAULT_ROOTS: dict[str, tuple[str, ...]] = {
    "nodeCpuHigh": NODES,
    "podCrashLoop": _ALL_BUT_FRONTEND,
    "slowSQL": ("payment", "product-catalog"),
    "httpError5xx": _APPS,
    "fullGC": tuple(s for s, spec in SERVICES.items() if spec.language == "java"),
    "replicaScaleDown": _ALL_BUT_FRONTEND,
    "dnsResolutionFailure": tuple(s for s in _APPS if SERVICES[s].calls),
    "rateLimiting": _APPS,
}
"""The fault types the generator injects and the entities each may start from."""
FAULT_NUMBERS = {name: number for number, name in enumerate(FAULT_ROOTS, start=1)}
LATENCY_FAULTS = frozenset({"nodeCpuHigh", "slowSQL", "fullGC"})
"""Faults whose first symptom upstream is latency rather than errors (the alert is a latency alert)."""


def callers(service: str) -> list[str]:
    return [name for name, spec in SERVICES.items() if service in spec.calls]


def operation(service: str, method: str) -> str:
    return f"{service}::{method}"


def entity_id(kind: str, name: str) -> str:
    return hashlib.sha1(f"{kind}/{name}".encode()).hexdigest()[:16]


def iso(minute: float) -> str:
    return (START + timedelta(minutes=minute)).isoformat(timespec="seconds")


def epoch_us(minute: float) -> int:
    """Microseconds since the Unix epoch, `minute` minutes into the case window."""
    return round(START.timestamp() * 1_000_000 + minute * 60_000_000)


@dataclass(frozen=True)
class Plan:
    """One case before its telemetry is drawn: the fault, where it starts, the pods and the alert."""

    case_id: str
    number: int
    fault: str
    root: str
    start: int
    """Minute the fault begins (0-based within the window)."""
    pods: dict[str, tuple[str, str]]
    """Pod name → (service, node)."""
    alert_operation: str
    alert_id: str


def plan_case(seed: int, number: int) -> Plan:
    rng = random.Random(f"rca-synthetic/{seed}/{number}")
    fault = list(FAULT_ROOTS)[(number - 1 + seed) % len(FAULT_ROOTS)]
    root = rng.choice(FAULT_ROOTS[fault])
    pods: dict[str, tuple[str, str]] = {}
    names = []
    for service, spec in SERVICES.items():
        template = f"{rng.getrandbits(40):010x}"[:9]
        names += [
            (f"{service}-{template}-{rng.getrandbits(24):06x}"[:-1], service) for _ in range(spec.replicas)
        ]
    order = rng.sample(names, len(names))
    for index, (pod, service) in enumerate(order):
        pods[pod] = (service, NODES[index % len(NODES)])
    # The alert fires upstream: on checkout when the fault reaches it from below, else on a frontend operation.
    reaches_checkout = root in NODES or (root != "checkout" and root in _reach("checkout"))
    if reaches_checkout:
        alert = operation("checkout", SERVICES["checkout"].methods[0])
    else:
        alert = operation("frontend", rng.choice(SERVICES["frontend"].methods))
    return Plan(
        case_id=f"t{number:03d}",
        number=number,
        fault=fault,
        root=root,
        start=rng.randint(22, 28),
        pods=pods,
        alert_operation=alert,
        alert_id=f"{rng.getrandbits(64):016x}",
    )


def _reach(service: str) -> set[str]:
    """Every service `service` calls, directly or through others."""
    seen: set[str] = set()
    todo = list(SERVICES[service].calls)
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo += SERVICES[name].calls
    return seen
