"""Build the model a run uses: the agent model, plus optional per-role models (belief, sentinel,
benchmark_provider, …) that default to it."""

from __future__ import annotations

from typing import Any, Mapping

from hydra.utils import instantiate

from pos_bench.protocols import Model
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


def build_model(cfg: Mapping[str, Any]) -> Model:
    """The run's model from the `model` node and the optional `roles` mapping (role → model node)."""
    default = instantiate(cfg["model"], _convert_="all")
    roles = cfg.get("roles") or {}
    if not roles:
        return default
    return RoleRouter(default, {role: instantiate(node, _convert_="all") for role, node in roles.items()})
