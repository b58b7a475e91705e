"""The checkout-free parts of real LOCA: secret scrubbing, the ground-truth vault, launch-line rewriting,
tool validation and observation post-processing."""

from __future__ import annotations

import json
import sys

import pytest

from pos_bench.benchmarks.loca.real import observe
from pos_bench.benchmarks.loca.real.configs import CaseConfig, ServerSpec
from pos_bench.benchmarks.loca.real.isolation import Vault, scrubbed_environ
from pos_bench.benchmarks.loca.real.servers import Installed, ServerSetupError, local_argv
from pos_bench.benchmarks.loca.real.validate import LocaSetupError, validate_log, validate_tools


def test_scrubbed_environ_drops_keys_tokens_and_passwords():
    env = {
        "OPENAI_API_KEY": "x",
        "ANTHROPIC_API_KEY": "y",
        "HF_TOKEN": "z",
        "DB_PASSWORD": "p",
        "PATH": "/bin",
    }
    assert scrubbed_environ(env) == {"PATH": "/bin"}


def test_vault_hides_everything_but_what_servers_need_and_restores_it(tmp_path):
    for name in ("agent_workspace", "local_db", "logs", "groundtruth_workspace", "files"):
        (tmp_path / "task" / name).mkdir(parents=True)
        (tmp_path / "task" / name / "f.txt").write_text(name)
    vault = Vault(tmp_path / "task", tmp_path / "vault" / "case")
    assert vault.lock() == ["files", "groundtruth_workspace"]
    assert sorted(p.name for p in (tmp_path / "task").iterdir()) == ["agent_workspace", "local_db", "logs"]
    vault.unlock()
    assert (tmp_path / "task" / "groundtruth_workspace" / "f.txt").read_text() == "groundtruth_workspace"
    assert not (tmp_path / "vault" / "case").exists()


def test_launch_lines_use_this_interpreter_and_installed_packages(tmp_path):
    installed = Installed(tmp_path)
    assert local_argv("uv", ["--directory", "/r", "run", "python", "/r/s.py", "--x", "1"], installed) == [
        sys.executable, "/r/s.py", "--x", "1",
    ]  # fmt: skip
    assert local_argv("python", ["/r/s.py"], installed) == [sys.executable, "/r/s.py"]
    with pytest.raises(ServerSetupError, match="npm install --prefix"):
        local_argv("npx", ["@modelcontextprotocol/server-memory"], installed)
    (tmp_path / "npm/node_modules/pkg").mkdir(parents=True)
    (tmp_path / "npm/node_modules/pkg/package.json").write_text(json.dumps({"bin": {"pkg": "dist/index.js"}}))
    assert local_argv("npx", ["pkg", "/ws"], installed) == [
        "node", str(tmp_path / "npm/node_modules/pkg/dist/index.js"), "/ws",
    ]  # fmt: skip
    with pytest.raises(ServerSetupError, match="not installed"):
        local_argv("uvx", ["no-such-console-script"], installed)


def case(*servers: str) -> CaseConfig:
    specs = tuple(ServerSpec(s, s, {}) for s in servers)
    return CaseConfig("8k", "CanvasListTest", 42, "gem.envs.x.CanvasListTestS2LEnv", {}, specs)


def tool(name: str) -> dict:
    return {"type": "function", "function": {"name": name, "description": "", "parameters": {}}}


def test_tool_validation_names_the_family_and_the_silent_server():
    validate_tools(case("canvas", "claim_done"), [tool("canvas_list_courses"), tool("claim_done_claim_done")])
    with pytest.raises(LocaSetupError, match=r"CanvasListTest.*'memory' \(memory\) contributed no tools"):
        validate_tools(
            case("canvas", "memory", "claim_done"), [tool("canvas_x"), tool("claim_done_claim_done")]
        )
    with pytest.raises(LocaSetupError, match="no claim_done"):
        validate_tools(case("canvas", "python_execute"), [tool("canvas_x"), tool("python_execute_run")])
    with pytest.raises(LocaSetupError, match="no tools at all"):
        validate_tools(case("canvas"), [])


def test_a_traceback_in_env_log_fails_the_case(tmp_path):
    log = tmp_path / "env.log"
    log.write_text("INFO ok\n")
    validate_log(case("canvas"), log)
    log.write_text("INFO ok\nTraceback (most recent call last):\n  ModuleNotFoundError: fastmcp\n")
    with pytest.raises(LocaSetupError, match="fastmcp"):
        validate_log(case("canvas"), log)


def test_large_structured_results_become_artifacts_and_changes_are_listed(tmp_path):
    rows = [{"id": i, "text": "x" * 100} for i in range(200)]
    raw = json.dumps([{"role": "tool", "tool_call_id": "c1", "content": json.dumps(rows)}])
    text = observe.render(raw, tmp_path, name="001_list", artifacts=True)
    assert "saved to" in text and '"id": 2' in text and '"id": 3' not in text
    assert json.loads((tmp_path / observe.ARTIFACT_DIR / "001_list.json").read_text()) == rows
    assert observe.render(raw, tmp_path, name="002", artifacts=False) == json.dumps(rows)
    small = json.dumps([{"role": "tool", "tool_call_id": "c2", "content": "done"}])
    assert observe.render(small, tmp_path, name="003", artifacts=True) == "done"
    before = observe.snapshot(tmp_path)
    assert before == {}  # artifacts are the harness's own files
    (tmp_path / "out.csv").write_text("a,b\n")
    rows = observe.manifest(before, observe.snapshot(tmp_path), "filesystem_write_file")
    assert rows == [{"path": "out.csv", "bytes": 4, "change": "created", "producer": "filesystem_write_file"}]
