"""Every bench × method × model combination composes, every member of every group instantiates, and every
bench × method pair is built through the runner and plays one turn on the scripted model, or stops before its
first episode with one sentence saying why the pair is not supported."""

import functools
import json
import os

import pytest
from hydra import compose, initialize_config_dir
from hydra.utils import instantiate
from omegaconf import OmegaConf

from pos_bench.models.roles import build_model
from pos_bench.models.scripted import ScriptedModel
from pos_bench.preflight import ConfigError
from pos_bench.protocols import Benchmark, Method, Model
from pos_bench.runner import run
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


def test_every_method_and_model_compose_and_resolve_together(shared):
    """Method nodes may interpolate model settings (the passport's limits), so every pair is resolved; the bench
    dimension is covered by the pair test below, which builds and plays every bench × method."""
    combos = [(m, d) for m in members("method") for d in members("model")]
    assert len(combos) >= 14 * 12
    for method, model in combos:
        cfg = composed("bench=toy", f"method={method}", f"model={model}")
        resolved = OmegaConf.to_container(OmegaConf.create(cfg), resolve=True)
        assert resolved["method"]["_target_"] and resolved["model"]["_target_"]
        assert resolved["method"].get("_partial_") is True


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


PLANNERS = {"alfworld", "toy"}
"""Benchmarks with a planner expert of their own (ExpertBenchmark)."""
TOOL_BENCHES = {"clindiag", "rca100", "rca_synthetic", "loca_mini"}
"""Benchmarks that act through tool calls, not commands."""
COMMAND_ONLY = {"stateact", "reflact"}


def unsupported(bench: str, method: str) -> bool:
    """The pairs README lists as unsupported; every other pair must play."""
    return (method == "expert" and bench not in PLANNERS) or (
        method in COMMAND_ONLY and bench in TOOL_BENCHES
    )


SCHEMA_REPLIES = "+model.default={_target_:pos_bench.models.scripted.schema_reply,_partial_:true}"
"""Every role of every method answers with the smallest reply its schema accepts."""


def play_pair(bench: str, method: str, root, *extra: str) -> list[dict]:
    """One episode of one turn of `bench` × `method` through `runner.run`; the lines of its results.jsonl."""
    overrides = [
        f"bench={bench}",
        f"method={method}",
        "model=scripted",
        SCHEMA_REPLIES,
        "bench.limit=1",
        "bench.max_turns=1",
        f"results_root={root}",
        "runner.progress=false",
        "cache.mode=off",
        *extra,
    ]
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        cfg = compose("config", overrides=overrides, return_hydra_config=False)
    run(OmegaConf.to_container(cfg, resolve=True), root, {"bench": bench, "method": method, "label": "full"})
    lines = (root / "results.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


@pytest.mark.parametrize("method", members("method"))
@pytest.mark.parametrize("bench", members("bench"))
def test_every_pair_plays_one_turn_or_refuses_before_the_first_episode(
    bench, method, shared, tmp_path, monkeypatch
):
    monkeypatch.setenv("ALFWORLD_DATA", str(shared / "benchmarks" / "alfworld"))
    monkeypatch.setenv("CLINDIAG_DATA", str(shared / "benchmarks" / "clindiag"))
    if bench in NOT_STAGED and not os.environ.get(NOT_STAGED[bench]):
        with pytest.raises(ConfigError) as stop:
            play_pair(bench, method, tmp_path)
        assert not (tmp_path / "results.jsonl").exists()
        assert NOT_STAGED[bench] in str(stop.value)
        pytest.skip(
            f"{bench} data absent (${NOT_STAGED[bench]} unset): checked the run stops before any episode"
        )
    if unsupported(bench, method):
        with pytest.raises(ConfigError) as refusal:
            play_pair(bench, method, tmp_path)
        sentence = str(refusal.value)
        assert f"method={method}" in sentence and sentence.endswith(".") and "\n" not in sentence
        assert not (tmp_path / "results.jsonl").exists()
        return
    (result,) = play_pair(bench, method, tmp_path)
    assert result["status"] == "done", result["error"]
    assert result["turns"] == 1 and result["steps"] + result["spent_turns"] + result["meta_actions"] >= 1
    events = (tmp_path / "episodes").rglob("events.jsonl")
    kinds = {json.loads(line)["kind"] for path in events for line in path.read_text().splitlines()}
    assert "reset" in kinds and "score" in kinds


def test_run_json_records_the_passport_limits_of_the_embedded_preset_and_none_elsewhere(tmp_path):
    for model, limited in (("smollm2", True), ("scripted", False)):
        with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
            cfg = compose(
                "config",
                overrides=[
                    "bench=toy",
                    "method=passport",
                    f"model={model}",
                    "bench.limit=0",
                    "runner.progress=false",
                ],
            )
        folder = tmp_path / model
        run(OmegaConf.to_container(cfg, resolve=True), folder, {"model": model})
        recorded = json.loads((folder / "run.json").read_text())
        limits = recorded["config"]["method"]["limits"]
        assert (limits is not None) is limited
        if limited:
            assert limits == {"items": 6, "name_chars": 32, "state_chars": 80, "ref_chars": 24, "findings": 3}
            assert recorded["model"]["passport_limits"] == limits


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
