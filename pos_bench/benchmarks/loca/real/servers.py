"""A case's MCP servers as launch lines that work on this machine (SPEC-BENCH §3.2).

Upstream's `build_server_config` gives each server's command; several do not run as written: `uv run` wants
Python ≥ 3.12 here, `uvx` and `npx` fetch packages at run time, the servers inherit a stripped environment
(npx then silently drops out), and the terminal server works in the launcher's directory. Each line is
rewritten to this interpreter, to installed entry points and to installed npm packages; every server gets a full
(secret-free) environment; the code-executing ones run in the agent workspace, inside bubblewrap when present.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pos_bench.benchmarks.loca.real.configs import NPM_PACKAGES, CaseConfig
from pos_bench.benchmarks.loca.real.isolation import bwrap_path, sandbox_argv, scrubbed_environ

TETHER = Path(__file__).with_name("tether.py")
"""The launcher that makes a server die with the worker that started it (`tether.py`)."""

CODE_SERVERS = frozenset({"python_execute", "terminal"})
"""Server types that run model-written code."""


@dataclass(frozen=True)
class Installed:
    """Where the non-PyPI-extra parts live: `npm/node_modules` and a `python/` target for pdf-tools-mcp."""

    tools_dir: Path

    @property
    def node_modules(self) -> Path:
        return self.tools_dir / "npm" / "node_modules"

    @property
    def python_dir(self) -> Path:
        return self.tools_dir / "python"


class ServerSetupError(RuntimeError):
    """A server of a case cannot be launched here; the message names the family, the server and the fix."""


def _entry_point_argv(name: str, installed: Installed) -> list[str]:
    """This interpreter running the console script `name` of an installed Python package."""
    path = [*sys.path, str(installed.python_dir)]
    for dist in importlib.metadata.distributions(path=path):
        for ep in dist.entry_points:
            if ep.group == "console_scripts" and ep.name == name:
                module, _, attr = ep.value.partition(":")
                head = attr.split(".")[0]
                code = f"import sys; from {module} import {head}; sys.exit({attr.strip()}())"
                return [sys.executable, "-c", code]
    raise ServerSetupError(
        f"the Python command {name!r} is not installed: run `uv sync --inexact --extra loca` (or `pip install "
        f"'pos_bench[loca]'`) and `bash scripts/loca_setup.sh`"
    )


def _npm_argv(package: str, installed: Installed) -> list[str]:
    manifest = installed.node_modules / package / "package.json"
    if not manifest.is_file():
        raise ServerSetupError(
            f"the npm package {package} is not installed under {installed.node_modules}: run `npm install "
            f"--prefix {installed.tools_dir / 'npm'} {' '.join(NPM_PACKAGES)}` (or `bash scripts/loca_setup.sh`)"
        )
    bins = json.loads(manifest.read_text(encoding="utf-8")).get("bin", {})
    script = bins if isinstance(bins, str) else next(iter(bins.values()))
    return ["node", str(manifest.parent / script)]


def local_argv(command: str, args: list[str], installed: Installed) -> list[str]:
    """Upstream's (command, args) rewritten to run from what is installed, without fetching anything."""
    if command == "python":
        return [sys.executable, *args]
    if command == "uv":  # ["--directory", root, "run", "python", script, ...]
        return [sys.executable, *args[args.index("python") + 1 :]]
    if command == "uvx":
        return [*_entry_point_argv(args[0], installed), *args[1:]]
    if command == "npx":
        return [*_npm_argv(args[0], installed), *args[1:]]
    if command == "node":
        return ["node", *args]
    return [*_entry_point_argv(command, installed), *args]


def _server_environ(root: Path, installed: Installed, own: Mapping[str, str]) -> dict[str, str]:
    env = scrubbed_environ()
    bin_dir = str(Path(sys.executable).parent)
    env["PATH"] = os.pathsep.join([bin_dir, env.get("PATH", "")])  # `uv` inside python_execute is ours
    env["VIRTUAL_ENV"] = sys.prefix
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(root), str(installed.python_dir)) if p)
    env.update({"UV_OFFLINE": "1", "UV_NO_SYNC": "1", "LOCA_QUIET": "1", "FASTMCP_SHOW_CLI_BANNER": "false"})
    env.update({k: str(v) for k, v in own.items()})
    return env


def _params(params: Mapping[str, Any], task_dir: Path, workspace: Path) -> dict[str, Any]:
    out = {}
    for key, value in params.items():
        if isinstance(value, str):
            value = value.replace("{task_workspace}", str(task_dir)).replace(
                "{agent_workspace}", str(workspace)
            )
        out[key] = value
    return {**out, "task_workspace": str(task_dir), "agent_workspace": str(workspace)}


def mcp_config(
    case: CaseConfig, root: Path, task_dir: Path, installed: Installed, *, sandbox: bool
) -> dict[str, Any]:
    """`{"mcpServers": {name: {command, args, env, cwd}}}` for every enabled server of `case`."""
    from gem.tools.mcp_server.config_loader import build_server_config  # the user's checkout

    workspace = task_dir / "agent_workspace"
    bwrap = bwrap_path() if sandbox else None
    servers: dict[str, Any] = {}
    for spec in case.servers:
        try:
            built = build_server_config(spec.type, _params(spec.params, task_dir, workspace), spec.name)
            ((name, line),) = built.items()
            argv = local_argv(line["command"], list(line["args"]), installed)
        except (ServerSetupError, FileNotFoundError, ValueError) as error:
            raise ServerSetupError(
                f"LOCA {case.family}: server {spec.name!r} ({spec.type}): {error}"
            ) from error
        cwd = line.get("cwd")
        if spec.type in CODE_SERVERS:
            cwd = str(workspace)
            if bwrap:
                script_dirs = [Path(a).parent for a in argv[1:2] if Path(a).is_file()]
                argv = [*sandbox_argv(workspace, [*script_dirs, installed.python_dir], bwrap), *argv]
        argv = tethered(argv)
        servers[name] = {
            "command": argv[0],
            "args": argv[1:],
            "env": tether_environ(_server_environ(root, installed, line.get("env", {}))),
            **({"cwd": cwd} if cwd else {}),
        }
    return {"mcpServers": servers}


def tethered(argv: list[str]) -> list[str]:
    """`argv` run through the tether: killed by the kernel when the thread that launched it is gone. The
    launching process names itself in the server's environment (`tether_environ`)."""
    return [sys.executable, "-I", str(TETHER), *argv]


def tether_environ(env: Mapping[str, str]) -> dict[str, str]:
    """`env` naming this process as the launcher, so a tether whose launcher died before it started exits."""
    return {**env, "POS_BENCH_TETHER_PARENT": str(os.getpid())}


def launch_key(config: Mapping[str, Any]) -> str:
    """A digest of the servers' command lines and folders: a cached tool list is valid for the same key."""
    lines = {n: [c["command"], *c["args"], c.get("cwd")] for n, c in config["mcpServers"].items()}
    return hashlib.sha256(json.dumps(lines, sort_keys=True).encode()).hexdigest()[:16]
