"""Every bench × method × model combination composes, and every member of every group instantiates."""

import functools

import pytest
from hydra import compose, initialize_config_dir
from hydra.utils import instantiate
from omegaconf import OmegaConf

from pos_bench.models.roles import build_model
from pos_bench.models.scripted import ScriptedModel
from pos_bench.protocols import Benchmark, Method, Model
from tests.conftest import REPO

CONF = REPO / "conf"


def members(group: str) -> list[str]:
    return sorted(p.stem for p in (CONF / group).glob("*.yaml"))


def composed(*overrides: str) -> dict:
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        cfg = compose("config", overrides=list(overrides), return_hydra_config=False)
    return OmegaConf.to_container(cfg, resolve=False)


@functools.cache
def benchmark(name: str) -> Benchmark:
    node = composed(f"bench={name}")["bench"]
    return instantiate(node, _convert_="all")


def test_every_combination_composes(shared):
    combos = [(b, m, d) for b in members("bench") for m in members("method") for d in members("model")]
    assert len(combos) >= 3 * 14 * 12
    for bench, method, model in combos:
        cfg = composed(f"bench={bench}", f"method={method}", f"model={model}")
        assert cfg["bench"]["_target_"] and cfg["method"]["_target_"] and cfg["model"]["_target_"]
        assert cfg["method"].get("_partial_") is True


NOT_STAGED = {"rca100": "RCA100_DATA", "loca": "LOCA_BENCH_ROOT"}
"""Benchmarks whose real data ../shared does not hold (restricted labels; a user's LOCA-bench checkout); each must
say how to get it."""


@pytest.mark.parametrize("bench", members("bench"))
def test_every_benchmark_instantiates_with_tasks(bench, shared, monkeypatch):
    monkeypatch.setenv("ALFWORLD_DATA", str(shared / "benchmarks" / "alfworld"))
    monkeypatch.setenv("CLINDIAG_DATA", str(shared / "benchmarks" / "clindiag"))
    for variable in NOT_STAGED.values():
        monkeypatch.delenv(variable, raising=False)
    built = benchmark(bench)
    assert isinstance(built, Benchmark) and built.max_turns > 0
    if bench in NOT_STAGED:
        with pytest.raises(FileNotFoundError, match=NOT_STAGED[bench]):
            built.tasks()
    else:
        assert len(built.tasks()) > 0


@pytest.mark.parametrize("method", members("method"))
def test_every_method_builds_for_an_episode(method):
    factory = instantiate(composed(f"method={method}")["method"], _convert_="all")
    with factory(model=ScriptedModel()) as built:
        assert isinstance(built, Method)


@pytest.mark.parametrize("model", [m for m in members("model") if m != "replay"])
def test_every_model_builds_lazily_and_describes_itself(model, tmp_path):
    cfg = composed(f"model={model}", f"results_root={tmp_path}")
    built = build_model(OmegaConf.to_container(OmegaConf.create(cfg), resolve=True))
    assert isinstance(built, Model)
    info = built.describe()
    assert info and "key" not in {k.lower() for k in info}


def test_replay_needs_a_recorded_run(tmp_path):
    cfg = composed("model=replay", f"results_root={tmp_path}", f"model.run={tmp_path / 'nothing'}")
    with pytest.raises(Exception, match="run"):
        build_model(OmegaConf.to_container(OmegaConf.create(cfg), resolve=True)).describe()


def test_a_benchmark_brings_its_method_settings_and_the_command_line_wins():
    """SPEC-BASE §4.5, §5.4, SPEC-POS §14: conf/method_bench/<method>/<bench>.yaml, chosen by the bench."""
    acon = composed("method=acon", "bench=clindiag")["method"]
    assert (acon["t_hist"], acon["t_obs"], acon["domain"]) == (4096, 512, "clinical")
    assert composed("method=acon", "bench=alfworld")["method"]["t_hist"] == 1024
    assert composed("method=pace", "bench=loca_mini")["method"]["t_max"] == 100
    assert composed("method=pace", "bench=rca_synthetic")["method"]["t_max"] == 150
    assert composed("method=acon", "bench=clindiag", "method.t_hist=2048")["method"]["t_hist"] == 2048
    for pos in ("pos", "pos_no_trapping", "pos_generic_recovery", "pos_no_consistency"):
        clindiag = composed(f"method={pos}", "bench=clindiag")["method"]
        assert clindiag["max_json_retries"] == 2 and clindiag["sentinel"]["consistency_max_tokens"] == 4096
        assert (
            composed(f"method={pos}", "bench=loca_mini")["method"]["sentinel"]["global_audit_every_steps"]
            == 32
        )
    assert composed("method=pos_no_trapping", "bench=clindiag")["method"]["trapping"]["enabled"] is False
    assert composed("method=pos", "bench=alfworld")["method"]["max_json_retries"] == 1
