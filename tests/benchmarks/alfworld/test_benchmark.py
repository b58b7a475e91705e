"""ALFWorld: game selection and data resolution on the staged tarball, and the real engine (2.1.1 / 2.1.2
text, planner expert, step cap). Engine tests are marked `engine` and skip without alfworld."""

from __future__ import annotations

import collections
import importlib.util
import json
import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from baselines.expert import Expert
from pos_bench.benchmarks.alfworld.benchmark import AlfWorldBenchmark, AlfWorldEnv
from pos_bench.benchmarks.alfworld.data import TARBALL, patch_to_2_1_2
from pos_bench.loop import play
from pos_bench.models.scripted import ScriptedModel
from pos_bench.runner import run
from pos_bench.transcript import Transcript
from pos_bench.types import ToolCall
from tests.conftest import REPO

SPEC_COUNTS = {"clean": 31, "heat": 23, "cool": 21, "pick_and_place": 24, "look_at_obj": 18, "pick_two": 17}


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A private cache directory for the whole module (extraction and patched games go there)."""
    path = tmp_path_factory.mktemp("cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("XDG_CACHE_HOME", str(path))
        yield path


@pytest.fixture(scope="module")
def tarball(shared: Path, cache: Path) -> Path:
    path = shared / "benchmarks" / "alfworld" / TARBALL
    if not path.is_file():
        pytest.skip(f"staged ALFWorld tarball not found at {path}")
    return path


@pytest.fixture(scope="module")
def engine() -> None:
    for package in ("alfworld", "textworld"):
        if importlib.util.find_spec(package) is None:
            pytest.skip(f"{package} is not installed")


def first_of(tasks, task_type):
    return next(t for t in tasks if t.meta["task_type"] == task_type)


def test_selects_the_134_games_with_the_spec_type_counts(tarball: Path) -> None:
    tasks = AlfWorldBenchmark(tarball).tasks()
    assert len(tasks) == 134
    assert collections.Counter(t.meta["task_type"] for t in tasks) == SPEC_COUNTS
    assert [t.id for t in tasks] == sorted(t.id for t in tasks)
    assert all(Path(t.source).name == "game.tw-pddl" and "/trial_" in "/" + t.id for t in tasks)


def test_slices_start_and_limit(tarball: Path) -> None:
    every = AlfWorldBenchmark(tarball).tasks()
    assert AlfWorldBenchmark(tarball, start=10, limit=5).tasks() == every[10:15]
    assert AlfWorldBenchmark(tarball, start=130).tasks() == every[130:]
    assert AlfWorldBenchmark(tarball, limit=0).tasks() == []


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"text_version": "2.2"}, "2.1.1, 2.1.2"),
        ({"start": -1}, "start"),
        ({"limit": -3}, "limit"),
        ({"max_turns": 0}, "max_turns"),
    ],
)
def test_rejects_bad_arguments(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        AlfWorldBenchmark(**kwargs)


def test_every_data_dir_form_finds_the_same_games_and_extracts_once(tarball: Path, cache: Path) -> None:
    from_file = AlfWorldBenchmark(tarball).tasks()
    extracted = sorted((cache / "pos_bench" / "alfworld" / "data").iterdir())
    stamp = [p.stat().st_mtime_ns for p in extracted]
    from_folder = AlfWorldBenchmark(tarball.parent).tasks()
    root = Path(from_file[0].source).parents[4]
    from_tree = AlfWorldBenchmark(str(root)).tasks()
    assert [t.id for t in from_folder] == [t.id for t in from_tree] == [t.id for t in from_file]
    assert sorted((cache / "pos_bench" / "alfworld" / "data").iterdir()) == extracted
    assert [p.stat().st_mtime_ns for p in extracted] == stamp


def test_explicit_data_dir_without_data_is_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="alfworld-download") as raised:
        AlfWorldBenchmark(tmp_path).tasks()
    assert str(tmp_path) in str(raised.value) and "ALFWORLD_DATA" in str(raised.value)


def test_no_data_anywhere_is_one_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("ALFWORLD_DATA", str(tmp_path / "alfworld"))
    monkeypatch.setenv("POS_BENCH_SHARED", str(tmp_path / "shared"))
    with pytest.raises(FileNotFoundError, match="bench.data_dir") as raised:
        AlfWorldBenchmark().tasks()
    for where in ("alfworld", "home", "shared"):
        assert str(tmp_path / where) in str(raised.value)


def test_text_patch_rewrites_grammar_adds_help_and_is_idempotent(tarball: Path, engine: None) -> None:
    source = Path(AlfWorldBenchmark(tarball, limit=1).tasks()[0].source)
    original = source.read_bytes()
    game = json.loads(original)
    patched = patch_to_2_1_2(game)
    assert "put {o} in/on {r}" in game["grammar"] and "put {o} in/on {r}" not in patched["grammar"]
    assert "move {o} to {r}" in patched["grammar"] and "{lend.name}" not in patched["grammar"]
    assert patched["pddl_domain"].count("(:action help") == 1
    assert patch_to_2_1_2(patched) == patched
    assert source.read_bytes() == original


def play_expert(task, env):
    return play(
        task,
        env,
        Expert(),
        ScriptedModel(),
        brief=AlfWorldBenchmark().brief,
        max_turns=50,
        log=Transcript(keep=True),
    )


@pytest.mark.engine
@pytest.mark.parametrize(
    ("text_version", "kinds"), [("2.1.2", ("clean", "heat", "look_at_obj")), ("2.1.1", ("cool",))]
)
def test_planner_expert_wins_real_games(tarball: Path, engine: None, text_version: str, kinds: tuple) -> None:
    bench = AlfWorldBenchmark(tarball, text_version=text_version)
    chosen = [first_of(bench.tasks(), kind) for kind in kinds]
    env = bench.make_expert_env(ScriptedModel())
    try:
        results = [play_expert(task, env) for task in chosen]
    finally:
        env.close()
    assert all(r.success and r.score == 1.0 and 0 < r.steps < 50 for r in results)
    assert [r.task_id for r in results] == [t.id for t in chosen]


def play_until_holding(env: AlfWorldEnv, task):
    """Follow the expert until the first object is picked up; return (arrival texts, observation)."""
    obs = env.reset(task)
    arrivals = []
    while not any(a.startswith(("move ", "put ")) for a in obs.actions):
        obs = env.step(obs.info["plan"][0])
        if obs.text.startswith("You arrive at"):
            arrivals.append(obs.text)
    return arrivals, obs


@pytest.mark.engine
def test_text_versions_differ_as_specified(tarball: Path, engine: None) -> None:
    task = first_of(AlfWorldBenchmark(tarball).tasks(), "pick_and_place")
    new, old = AlfWorldEnv("2.1.2", expert_plan=True), AlfWorldEnv("2.1.1", expert_plan=True)
    try:
        arrivals, holding = play_until_holding(new, task)
        assert arrivals and all("You arrive at loc" not in a for a in arrivals)
        receptacle = arrivals[-1].removeprefix("You arrive at ").split(".")[0]
        assert f"On the {receptacle}" in arrivals[-1] or f"The {receptacle} is" in arrivals[-1]
        assert "help" in holding.actions and any(
            a.startswith("move ") and " to " in a for a in holding.actions
        )
        assert not any(a.startswith("put ") for a in holding.actions)

        arrivals, holding = play_until_holding(old, task)
        assert arrivals and all(a.startswith("You arrive at loc ") for a in arrivals)
        assert "help" not in holding.actions and any(" in/on " in a for a in holding.actions)
    finally:
        new.close()
        old.close()


@pytest.mark.engine
def test_inadmissible_or_tool_actions_do_nothing_and_the_step_cap_ends_the_game(
    tarball: Path, engine: None
) -> None:
    task = AlfWorldBenchmark(tarball, limit=1).tasks()[0]
    env = AlfWorldEnv("2.1.2", max_steps=3, expert_plan=True)
    try:
        first = env.reset(task)
        assert first.goal and first.goal in first.text and first.info["plan"]
        bogus = env.step("fly to the moon")
        tool = env.step(ToolCall("look"))
        assert bogus.text == tool.text == "Nothing happens."
        assert not tool.done and tool.actions == first.actions
        last = env.step("look")
        assert last.done and not env.score().success and env.score().value == 0.0
    finally:
        env.close()


@pytest.mark.engine
def test_without_the_planner_observations_carry_no_plan_and_the_expert_says_why(
    tarball: Path, engine: None
) -> None:
    bench = AlfWorldBenchmark(tarball, limit=1)
    env = bench.make_env(ScriptedModel())
    try:
        with pytest.raises(ValueError, match="expert environment"):
            play_expert(bench.tasks()[0], env)
        assert "plan" not in env.step("look").info
    finally:
        env.close()


@pytest.fixture(scope="module")
def seen_tree(tarball: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny `valid_seen` tree: three games of different types copied out of the staged valid_unseen data."""
    tasks = AlfWorldBenchmark(tarball).tasks()
    root = tmp_path_factory.mktemp("alfworld_seen")
    for kind in ("pick_and_place", "look_at_obj", "clean"):
        trial = Path(first_of(tasks, kind).source).parent
        target = root / "json_2.1.1" / "valid_seen" / trial.parent.name / trial.name
        target.mkdir(parents=True)
        for name in ("traj_data.json", "game.tw-pddl"):
            shutil.copy(trial / name, target / name)
    return root


def test_a_split_reads_its_own_directory_and_prefixes_its_ids(seen_tree: Path) -> None:
    tasks = AlfWorldBenchmark(str(seen_tree), split="valid_seen").tasks()
    assert len(tasks) == 3 and all(t.id.startswith("valid_seen/") for t in tasks)
    assert sorted(t.meta["task_type"] for t in tasks) == ["clean", "look_at_obj", "pick_and_place"]
    with pytest.raises(FileNotFoundError, match="split valid_unseen"):
        AlfWorldBenchmark(str(seen_tree)).tasks()
    with pytest.raises(ValueError, match="valid_unseen, valid_seen, train"):
        AlfWorldBenchmark(split="test")


def test_a_split_is_found_in_upstream_tarballs_and_folders_of_any_name(
    seen_tree: Path, tmp_path: Path
) -> None:
    upstream = tmp_path / "alfworld_data_upstream.tar.gz"  # the upstream layout: data/alfworld/json_2.1.1/…
    with tarfile.open(upstream, "w:gz") as bundle:
        bundle.add(seen_tree / "json_2.1.1", arcname="data/alfworld/json_2.1.1")
    expected = [t.id for t in AlfWorldBenchmark(str(seen_tree), split="valid_seen").tasks()]
    assert [t.id for t in AlfWorldBenchmark(str(upstream), split="valid_seen").tasks()] == expected
    folder = tmp_path / "downloads"
    folder.mkdir()
    shutil.copy(upstream, folder / "my_valid_seen_copy.tar.gz")
    (folder / "unrelated.tar.gz").write_bytes(b"not a tarball")
    assert [t.id for t in AlfWorldBenchmark(str(folder), split="valid_seen").tasks()] == expected
    nested = tmp_path / "a" / "b" / "c"
    shutil.copytree(seen_tree / "json_2.1.1", nested / "json_2.1.1")
    assert [t.id for t in AlfWorldBenchmark(str(tmp_path / "a"), split="valid_seen").tasks()] == expected
    too_deep = tmp_path / "deep" / "1" / "2" / "3" / "4" / "5"
    shutil.copytree(seen_tree / "json_2.1.1", too_deep / "json_2.1.1")
    with pytest.raises(FileNotFoundError, match="at most 4 folders down"):
        AlfWorldBenchmark(str(tmp_path / "deep"), split="valid_seen").tasks()


def test_the_data_checker_counts_every_split_it_finds(seen_tree: Path, tarball: Path) -> None:
    script = REPO / "scripts" / "check_alfworld_data.py"
    seen = subprocess.run(
        [sys.executable, str(script), str(seen_tree)], capture_output=True, text=True, cwd=REPO, check=False
    )
    assert seen.returncode == 1  # three games are not the published 140
    assert "splits not found: valid_unseen, train" in seen.stdout
    assert re.search(r"valid_seen .*\n(.*\n)*total\s+3\s+140", seen.stdout)
    unseen = subprocess.run(
        [sys.executable, str(script), str(tarball)], capture_output=True, text=True, cwd=REPO, check=False
    )
    assert unseen.returncode == 0 and re.search(r"total\s+134\s+134", unseen.stdout)


@pytest.mark.engine
def test_the_expert_wins_a_valid_seen_tree_through_the_command_line_config(
    seen_tree: Path, engine: None, tmp_path: Path
) -> None:
    overrides = [
        "method=expert",
        "bench=alfworld",
        "bench.split=valid_seen",
        "bench.limit=3",
        f"bench.data_dir={seen_tree}",
        "model=scripted",
        "runner.progress=false",
    ]
    with initialize_config_dir(config_dir=str(REPO / "conf"), version_base="1.3"):
        cfg = OmegaConf.to_container(compose("config", overrides=overrides), resolve=True)
    summary = run(cfg, tmp_path, {"bench": "alfworld", "method": "expert"})
    assert (summary.episodes, summary.successes, summary.errors) == (3, 3, 0)


@pytest.mark.engine
def test_games_load_and_step_in_threads_of_one_process(tarball: Path, engine: None) -> None:
    """TextWorld's PDDL parser is shared by the process, and a game uses it when it loads and again in every
    step (the admissible commands' text): without the engine lock, two games at once in threads
    (runner.backend=threading, Ray's threads per actor, inspect's samples) fail with `pop from empty list`."""
    from concurrent.futures import ThreadPoolExecutor

    bench = AlfWorldBenchmark(tarball, limit=4)
    envs = [bench.make_env(ScriptedModel()) for _ in bench.tasks()]

    def play(pair) -> list[str]:
        """The texts of the first observation and of 15 steps, each taking the last admissible command."""
        env, task = pair
        seen = [env.reset(task)]
        for _ in range(15):
            seen.append(env.step(seen[-1].actions[-1]))
        return [obs.text for obs in seen]

    with ThreadPoolExecutor(4) as pool:
        in_threads = list(pool.map(play, zip(envs, bench.tasks(), strict=True)))
    assert in_threads == [play(pair) for pair in zip(envs, bench.tasks(), strict=True)]
    for env in envs:
        env.close()


def planner_copies() -> int:
    """Copies of fast-downward's planner library mapped into this process: each loaded copy is a file of its
    own (device and inode), deleted once loaded and never unloaded."""
    maps = Path("/proc/self/maps")
    if not maps.is_file():
        pytest.skip("no /proc/self/maps here")
    lines = [line.split() for line in maps.read_text().splitlines() if "libdownward" in line]
    return len({(fields[3], fields[4]) for fields in lines})


def played(env: AlfWorldEnv, task) -> list:
    """Observations and facts of the first steps of `task` on `env`."""
    first = env.reset(task)
    seen = [(first.text, first.actions, env.truth())]
    for action in first.actions[:3]:
        obs = env.step(action)
        seen.append((obs.text, obs.actions, env.truth()))
    return seen


@pytest.mark.engine
def test_games_one_after_another_reuse_one_planner_library_and_play_the_same(
    tarball: Path, engine: None
) -> None:
    """TextWorld loads a copy of the planner library per game and never unloads it (2.5 MB each): without
    reuse, a process grew by one copy per game, a sweep's driver by one per run and a worker by one per
    episode."""
    bench = AlfWorldBenchmark(tarball, limit=2)
    first, second = bench.tasks()
    env = bench.make_env(ScriptedModel())
    try:
        before = played(env, first)
        copies = planner_copies()
        played(env, second)
        again = played(env, first)
        other = bench.make_env(ScriptedModel())
        try:
            assert played(other, second) == played(env, second)
        finally:
            other.close()
    finally:
        env.close()
    assert again == before  # a library another game used plays the game as before
    assert planner_copies() <= copies + 1  # two games open at once need two copies; one after another, one


@pytest.mark.engine
def test_the_preflight_check_of_each_run_of_a_sweep_maps_no_new_planner_library(
    tarball: Path, engine: None
) -> None:
    """The driver plays a sweep's runs one after another and checks each before its first episode, loading
    the first game; its memory stays flat across the runs."""
    from pos_bench.runner.preflight import preflight

    overrides = [
        "bench=alfworld",
        "bench.limit=1",
        f"bench.data_dir={tarball}",
        "model=scripted",
        "cache.mode=off",
    ]
    with initialize_config_dir(config_dir=str(REPO / "conf"), version_base="1.3"):
        configs = [
            OmegaConf.to_container(compose("config", overrides=[*overrides, f"method={m}"]), resolve=True)
            for m in ("raw", "acon", "raw")
        ]
    preflight(configs[0])
    copies = planner_copies()
    for cfg in configs[1:]:
        preflight(cfg)
    assert planner_copies() == copies
