"""Post-reset checks of a LOCA case (SPEC-BENCH §3.2, §3.6): a failed generation or a server that did not
start leaves no error behind upstream (a near-empty workspace, a traceback only in `logs/env.log`, a missing
tool group), so the harness refuses the case loudly instead of scoring it 0."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pos_bench.benchmarks.loca.real.configs import CaseConfig


class LocaSetupError(RuntimeError):
    """A case whose world or servers are not what upstream would give the agent."""


def validate_log(case: CaseConfig, log: Path) -> None:
    """The generation log exists and holds no Python traceback."""
    if not log.is_file():
        raise LocaSetupError(f"LOCA {case.case_id} ({case.family}): generation wrote no log at {log}")
    text = log.read_text(encoding="utf-8", errors="replace")
    if "Traceback" in text:
        at = text.index("Traceback")
        raise LocaSetupError(
            f"LOCA {case.case_id} ({case.family}): generation failed, see {log}:\n{text[at : at + 1500]}"
        )


def server_of(name: str, servers: Sequence[str]) -> str | None:
    """The server a tool came from: multi-server tool names carry a `<server>_` prefix (longest match)."""
    if len(servers) == 1:
        return servers[0]
    matches = [s for s in servers if name.startswith(f"{s}_")]
    return max(matches, key=len) if matches else None


def validate_tools(case: CaseConfig, schemas: Sequence[Mapping[str, Any]]) -> None:
    """Non-empty tool list, tools from every enabled server, and a claim_done tool."""
    names = [s["function"]["name"] for s in schemas]
    servers = [s.name for s in case.servers]
    if not names:
        raise LocaSetupError(
            f"LOCA {case.case_id} ({case.family}): no tools at all from {', '.join(servers)}"
        )
    counts = {s: 0 for s in servers}
    for name in names:
        owner = server_of(name, servers)
        if owner is not None:
            counts[owner] += 1
    silent = [s for s, n in counts.items() if n == 0]
    if silent:
        types = {s.name: s.type for s in case.servers}
        listed = ", ".join(f"{s!r} ({types[s]})" for s in silent)
        raise LocaSetupError(
            f"LOCA {case.case_id} ({case.family}): server {listed} contributed no tools (it did not start or "
            f"crashed; see the launch line in pos_bench/benchmarks/loca/real/servers.py)"
        )
    if not any("claim_done" in n for n in names):
        raise LocaSetupError(
            f"LOCA {case.case_id} ({case.family}): no claim_done tool among {len(names)} tools"
        )
