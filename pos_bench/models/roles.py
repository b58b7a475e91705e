"""Build the model a run uses. Each configured model is composed the same way: provider → `Budgeted` (the
run's endpoint budget) → `Retrying` (one shared policy) → `Cached` (record/replay) → `Kept` (the episode's own
record of its replies, when an episode folder is given); then a `RoleRouter` sends each role to its model. The
agent model is `model`; optional per-role models (belief, sentinel, benchmark_provider, …) come from `roles` and
default to it."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pos_bench.build import build
from pos_bench.models.budget import Budget, Budgeted, LocalBudget, endpoint_of
from pos_bench.models.cache import CacheConfig, Cached, Store
from pos_bench.models.kept import Kept, ResponseLog
from pos_bench.models.retry import Retrying, RetryPolicy
from pos_bench.models.trial import Trial
from pos_bench.protocols import Model
from pos_bench.redact import redactor_for
from pos_bench.types import Prompt, Reply


class RoleRouter:
    """Sends each call to the model configured for its role, else to the default model."""

    def __init__(self, default: Model, by_role: Mapping[str, Model]):
        self.default = default
        self.by_role = dict(by_role)
        self.name = default.name

    def describe(self) -> Mapping[str, Any]:
        info = dict(self.default.describe())
        if self.by_role:
            info["roles"] = {role: dict(m.describe()) for role, m in self.by_role.items()}
        return info

    def generate(self, prompt: Prompt, *, role: str = "agent") -> Reply:
        return self.by_role.get(role, self.default).generate(prompt, role=role)


def wrap(
    model: Model, cfg: Mapping[str, Any], budget: Budget, store: Store | None, kept: ResponseLog | None = None
) -> Model:
    """`model` behind the endpoint budget, the run's retry policy and response cache (`retry` and `cache`
    nodes; cache off when absent), its replies kept in `kept` when given."""
    endpoint = endpoint_of(model.describe())
    if endpoint is not None:
        model = Budgeted(model, budget, endpoint)
    model = Retrying(model, RetryPolicy(**(cfg.get("retry") or {})))
    cache = CacheConfig(**(cfg.get("cache") or {}))
    if cache.mode != "off":
        model = Cached(model, cache, store, redact=redactor_for(cfg).text)
    return model if kept is None else Kept(model, kept)


def build_model(
    cfg: Mapping[str, Any],
    *,
    budget: Budget | None = None,
    store: Store | None = None,
    trial: int = 0,
    keep_in: Path | None = None,
) -> Model:
    """The run's model from the `model` node and the optional `roles` mapping (role → model node).

    `budget` is the run's endpoint budget, shared by all its workers; without one, the models built by
    this call share a budget of their own. `store` replaces the cache file (a Ray run's single owner).
    `trial` marks every request with the episode's trial (`models/trial.py`). `keep_in` is the file where an
    episode keeps the replies it used (`models/kept.py`), so its run replays from its own folder."""
    budget = budget if budget is not None else LocalBudget()
    kept = None if keep_in is None else ResponseLog(keep_in, redact=redactor_for(cfg).text)
    default = wrap(build(cfg["model"]), cfg, budget, store, kept)
    roles = cfg.get("roles") or {}
    model = (
        RoleRouter(
            default, {role: wrap(build(node), cfg, budget, store, kept) for role, node in roles.items()}
        )
        if roles
        else default
    )
    return Trial(model, trial) if trial else model
