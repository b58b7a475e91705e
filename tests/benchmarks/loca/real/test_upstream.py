"""Which LOCA-bench a run used: commit from git or a recorded file, the staged-configuration flag, and how the
identity enters the run's fingerprint (checkout-free: a fake checkout built from the staged configurations)."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from pos_bench.benchmarks.loca.real.benchmark import LocaBenchmark
from pos_bench.benchmarks.loca.real.configs import CLONE_URL
from pos_bench.benchmarks.loca.real.upstream import (
    STAGED_CONFIGS_SHA256,
    checkout_commit,
    configs_digest,
    identify,
)
from pos_bench.benchmarks.toy import ToyBenchmark
from pos_bench.protocols import SourcedBenchmark
from pos_bench.runner import run
from pos_bench.runner.identity import run_identity
from pos_bench.types import Upstream, to_jsonable

VALIDATED = "8cd474d5efdf36c8c95555165ba0965e0496e48f"


@pytest.fixture
def staged(shared):
    return shared / "benchmarks" / "loca" / "task-configs"


@pytest.fixture
def fake_checkout(tmp_path, staged):
    """A folder shaped like a LOCA-bench checkout (no git), with the staged task configurations."""
    root = tmp_path / "LOCA-bench"
    (root / "gem" / "tools" / "mcp_server").mkdir(parents=True)
    (root / "gem" / "tools" / "mcp_server" / "config_loader.py").write_text("")
    (root / "mcp_convert").mkdir()
    shutil.copytree(staged, root / "task-configs")
    return root


def test_the_recorded_digest_is_that_of_the_staged_configurations(staged):
    assert configs_digest(staged) == STAGED_CONFIGS_SHA256


def test_commit_comes_from_git_else_from_the_recorded_file(tmp_path):
    assert checkout_commit(tmp_path) is None
    (tmp_path / "UPSTREAM_COMMIT").write_text(f"{VALIDATED}\n")
    assert checkout_commit(tmp_path) == VALIDATED
    repo = tmp_path / "git"
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "x"], check=True)
    head = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True)
    assert checkout_commit(repo) == head.stdout.strip()


def test_a_known_commit_with_the_staged_configurations_has_no_note(fake_checkout):
    (fake_checkout / "UPSTREAM_COMMIT").write_text(VALIDATED)
    found = identify(fake_checkout, fake_checkout / "task-configs")
    assert (found.commit, found.known, found.configs_match, found.note) == (VALIDATED, True, True, "")
    assert "validated" in found.about


def test_an_unknown_commit_and_edited_configurations_are_flagged_and_said(fake_checkout, capsys):
    (fake_checkout / "UPSTREAM_COMMIT").write_text("0" * 40)
    path = fake_checkout / "task-configs" / "final_16k_set_config.json"
    path.write_text(path.read_text().replace('"seed": 42', '"seed": 43', 1))
    bench = LocaBenchmark(root=str(fake_checkout))
    assert isinstance(bench, SourcedBenchmark)
    found = bench.upstream()
    assert (found.commit, found.known, found.configs_match) == ("0" * 40, False, False)
    assert "not one of the known commits" in capsys.readouterr().err


def test_the_upstream_identity_enters_the_fingerprint_only_where_there_is_one(fake_checkout):
    cfg = {"bench": {"_target_": "x"}, "method": {}, "model": {}}
    plain = run_identity(cfg, {})
    (fake_checkout / "UPSTREAM_COMMIT").write_text(VALIDATED)
    one = to_jsonable(identify(fake_checkout, fake_checkout / "task-configs"))
    (fake_checkout / "UPSTREAM_COMMIT").write_text("8b6fac49d9edd92922593e703b74ea255357c3ec")
    other = to_jsonable(identify(fake_checkout, fake_checkout / "task-configs"))
    assert run_identity(cfg, {}, None).fingerprint == plain.fingerprint
    a, b = run_identity(cfg, {}, one), run_identity(cfg, {}, other)
    assert len({plain.fingerprint, a.fingerprint, b.fingerprint}) == 3
    assert a.settings["upstream"]["commit"] == VALIDATED and a.settings["upstream"]["configs_match"] is True


class SourcedToy(ToyBenchmark):
    """The toy household, claiming to run on a LOCA-bench checkout, to see what the runner records."""

    def upstream(self) -> Upstream:
        return Upstream(CLONE_URL, VALIDATED, True, "validated", True, STAGED_CONFIGS_SHA256)


def test_the_runner_records_the_upstream_identity_in_run_json_and_the_fingerprint(tmp_path):
    def cfg(target):
        return {
            "bench": {"_target_": target, "n_tasks": 1, "max_turns": 3},
            "method": {"_target_": "baselines.raw.RawHistory", "_partial_": True},
            "model": {"_target_": "pos_bench.models.scripted.ScriptedModel"},
            "runner": {"n_jobs": 1, "backend": "threading", "progress": False},
            "roles": {},
        }

    run(cfg(f"{__name__}.SourcedToy"), tmp_path / "sourced", {})
    run(cfg("pos_bench.benchmarks.toy.ToyBenchmark"), tmp_path / "plain", {})
    sourced = json.loads((tmp_path / "sourced" / "run.json").read_text())
    plain = json.loads((tmp_path / "plain" / "run.json").read_text())
    assert sourced["upstream"]["commit"] == VALIDATED and sourced["upstream"]["configs_match"] is True
    assert sourced["identity"]["settings"]["upstream"]["commit"] == VALIDATED
    assert plain["upstream"] is None and "upstream" not in plain["identity"]["settings"]
