"""Every bench × method × model combination composes, every member of every group instantiates, and every
bench × method pair is built through the runner and plays one turn on the scripted model, or stops before its
first episode with one sentence saying why the pair is not supported."""

import functools
import json
import os
import re
import shutil
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from hydra.utils import instantiate
from omegaconf import OmegaConf

from pos_bench.models.roles import build_model
from pos_bench.models.scripted import ScriptedModel
from pos_bench.protocols import Benchmark, ExpertBenchmark, Method, Model
from pos_bench.runner import run
from pos_bench.runner.preflight import ConfigError
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


ENV_REFERENCE = re.compile(r"\$\{oc\.env:([A-Za-z0-9_]+)")


@pytest.fixture
def staged(shared, monkeypatch) -> None:
    """Every folder of the staged data as `$<FOLDER>_DATA`, the variable each benchmark config reads it from."""
    for folder in (shared / "benchmarks").iterdir():
        if folder.is_dir():
            monkeypatch.setenv(f"{folder.name.upper()}_DATA", str(folder))


def data_not_here(bench: str) -> list[str]:
    """The environment variables `conf/bench/<bench>.yaml` reads its data location from that are unset here:
    the benchmark's data is neither staged nor given by the user."""
    named = ENV_REFERENCE.findall(json.dumps(composed(f"bench={bench}")["bench"]))
    return [variable for variable in named if not os.environ.get(variable)]


@pytest.mark.parametrize("bench", members("bench"))
def test_every_benchmark_instantiates_with_tasks_or_says_how_to_get_its_data(bench, staged):
    built = benchmark(bench)
    assert isinstance(built, Benchmark) and built.max_turns > 0
    missing = data_not_here(bench)
    if missing:
        with pytest.raises(FileNotFoundError) as absent:
            built.tasks()
        assert any(variable in str(absent.value) for variable in missing), (missing, str(absent.value))
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


def refused(bench: str, method: str) -> bool:
    """Whether the plug-ins declare `bench` × `method` unsupported: a method that plays the benchmark's expert
    (`expert: true` in its config) on a benchmark without one (`ExpertBenchmark`), or a method whose
    `unsupported` names a reason on the benchmark's first observation."""
    cfg = OmegaConf.to_container(
        OmegaConf.create(composed(f"bench={bench}", f"method={method}", "model=scripted")), resolve=True
    )
    built = benchmark(bench)
    if cfg.get("expert", False):
        return not isinstance(built, ExpertBenchmark)
    env = built.make_env(ScriptedModel())
    try:
        first = env.reset(built.tasks()[0])
    finally:
        env.close()
    with instantiate(cfg["method"], _convert_="all")(model=ScriptedModel()) as made:
        return made.unsupported(first) is not None


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
def test_every_pair_plays_one_turn_or_refuses_before_the_first_episode(bench, method, staged, tmp_path):
    missing = data_not_here(bench)
    if missing:
        with pytest.raises(ConfigError) as stop:
            play_pair(bench, method, tmp_path)
        assert not (tmp_path / "results.jsonl").exists()
        assert any(variable in str(stop.value) for variable in missing)
        pytest.skip(
            f"{bench} data absent (${' / $'.join(missing)} unset): checked the run stops before any episode"
        )
    if refused(bench, method):
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


def extends(conf: Path, method: str) -> list[str]:
    """The method configs `conf/method/<method>.yaml` lists in its defaults (the full method of an ablation)."""
    node = OmegaConf.load(conf / "method" / f"{method}.yaml")
    entries = node.get("defaults") or []
    return [
        entry.removeprefix("/method/") for entry in entries if isinstance(entry, str) and entry != "_self_"
    ]


def missing_bench_settings(conf: Path = CONF) -> list[str]:
    """Every `conf/method_bench/<method>/<bench>.yaml` that an ablation of `<method>` (directly or through
    another ablation) lacks: without it the ablation would play `<bench>` with the full method's defaults."""
    missing = []
    for ablation in sorted(p.stem for p in (conf / "method").glob("*.yaml")):
        parents, seen = extends(conf, ablation), set()
        while parents:
            parent = parents.pop()
            if parent in seen:
                continue
            seen.add(parent)
            parents.extend(extends(conf, parent))
            for settings in sorted((conf / "method_bench" / parent).glob("*.yaml")):
                own = conf / "method_bench" / ablation / settings.name
                if not own.exists():
                    missing.append(
                        f"{own.relative_to(conf.parent)} (forwarding to {settings.relative_to(conf.parent)})"
                    )
    return missing


def test_every_ablation_brings_the_bench_settings_of_the_method_it_extends():
    missing = missing_bench_settings()
    assert not missing, "an ablation lacks its full method's bench settings; add: " + "; ".join(missing)


def test_a_deleted_forwarder_is_named(tmp_path):
    """The check above on a copy of conf/ without one PoS ablation forwarder."""
    copy = tmp_path / "conf"
    shutil.copytree(CONF, copy)
    (copy / "method_bench" / "pos_no_trapping" / "clindiag.yaml").unlink()
    assert missing_bench_settings(copy) == [
        "conf/method_bench/pos_no_trapping/clindiag.yaml (forwarding to conf/method_bench/pos/clindiag.yaml)"
    ]
