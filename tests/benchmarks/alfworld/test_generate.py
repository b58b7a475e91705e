"""Generated ALFWorld games (SPEC-BENCH §2.7 item 2): the generator's rooms, its 2.1.1 logic, and the planner
expert winning every generated game through `bench=alfworld bench.data_dir=…` in both text versions."""

from __future__ import annotations

import collections
import importlib.util
import json
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from pos_bench.benchmarks.alfworld.data import TASK_TYPES, has_help, patch_to_2_1_2, select_games
from pos_bench.benchmarks.alfworld.generate import GameSpec, logic, plan_room, write_tree
from pos_bench.runner import run
from tests.conftest import REPO

SPECS = [
    GameSpec(kind, receptacles=5 + 3 * (i % 2), objects=4 + 2 * (i % 2), seed=i)
    for i, kind in enumerate(TASK_TYPES)
]
"""Six games, one per task type, in rooms of 5 and 8 receptacles."""


@pytest.fixture(scope="module")
def engine() -> None:
    for package in ("alfworld", "textworld"):
        if importlib.util.find_spec(package) is None:
            pytest.skip(f"{package} is not installed")


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private cache, where the loader writes its 2.1.2 copies of the generated games."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: f"{TASK_TYPES[s.task_type]}-{s.receptacles}-{s.seed}")
def test_rooms_follow_the_parameters_and_leave_work_to_do(spec: GameSpec) -> None:
    room = plan_room(spec)
    assert room == plan_room(spec)  # same seed, same room
    lamp = spec.task_type == "look_at_obj_in_light"
    assert len(room.receptacles) == spec.receptacles and len(room.objects) == spec.objects + lamp
    targets = [o for o, (kind, _) in room.objects.items() if kind == room.target]
    assert len(targets) >= (2 if spec.task_type == "pick_two_obj_and_place" else 1)
    if not lamp:  # no target object starts where the goal wants it
        assert all(room.receptacles[room.objects[o][1]] != room.parent for o in targets)


def test_seeds_change_the_room() -> None:
    rooms = {
        json.dumps(plan_room(GameSpec("pick_and_place_simple", 6, 5, seed)).objects) for seed in range(5)
    }
    assert len(rooms) > 1


def test_bad_parameters_are_refused() -> None:
    with pytest.raises(ValueError, match="task_type"):
        GameSpec("fly_to_the_moon")
    with pytest.raises(ValueError, match="receptacles"):
        GameSpec("pick_and_place_simple", receptacles=1)


def test_the_tree_is_the_layout_the_loader_reads(tmp_path: Path, engine: None) -> None:
    root = write_tree(tmp_path / "games", SPECS)
    games = select_games(root)
    assert len(games) == len(SPECS)
    assert collections.Counter(g.task_type for g in games) == dict.fromkeys(TASK_TYPES.values(), 1)
    game = json.loads(games[0].gamefile.read_text())
    assert game["solvable"] is True and not has_help(game) and "UNKNOWN GOAL" not in game["grammar"]


def test_generated_games_go_under_the_split_asked_for(tmp_path: Path, engine: None) -> None:
    root = write_tree(tmp_path / "games", SPECS[:2], split="valid_seen")
    assert not (root / "json_2.1.1" / "valid_unseen").exists()
    assert len(select_games(root, "valid_seen")) == 2


def test_a_broken_game_file_is_an_error_naming_the_file_and_the_game(tmp_path: Path, engine: None) -> None:
    root = write_tree(tmp_path / "games", SPECS[:1])
    trial = next((root / "json_2.1.1" / "valid_unseen").glob("*/*"))
    (trial / "traj_data.json").write_bytes(b"\xff\xfe\x00binary")
    game = trial.relative_to(root / "json_2.1.1" / "valid_unseen").as_posix()
    with pytest.raises(ValueError, match=rf"ALFWorld game {game}: .*traj_data.json is not UTF-8 JSON"):
        select_games(root)


def test_the_loader_patch_turns_the_2_1_1_logic_back_into_the_packaged_one(engine: None) -> None:
    domain, grammar = logic("2.1.1")
    packaged_domain, packaged_grammar = logic("2.1.2")
    patched = patch_to_2_1_2({"pddl_domain": domain, "grammar": grammar})
    assert patched["grammar"] == packaged_grammar
    assert patched["pddl_domain"].split() == packaged_domain.split()
    assert "put {o} in/on {r}" in grammar and "(:action help" not in domain


@pytest.mark.engine
@pytest.mark.parametrize("text_version", ["2.1.1", "2.1.2"])
def test_the_planner_expert_wins_every_generated_game(
    text_version: str, tmp_path: Path, cache: Path, engine: None
) -> None:
    root = write_tree(tmp_path / "games", SPECS)
    overrides = [
        "bench=alfworld",
        f"bench.data_dir={root}",
        f"bench.text_version={text_version}",
        "method=expert",
        "model=scripted",
        f"results_root={tmp_path / 'runs'}",
        "runner.progress=false",
        "cache.mode=off",
    ]
    with initialize_config_dir(config_dir=str(REPO / "conf"), version_base="1.3"):
        cfg = compose("config", overrides=overrides)
    summary = run(OmegaConf.to_container(cfg, resolve=True), tmp_path / "run", {"method": "expert"})
    rows = [json.loads(line) for line in (tmp_path / "run" / "results.jsonl").read_text().splitlines()]
    assert len(rows) == len(SPECS) and summary.episodes == len(SPECS)
    lost = [(r["task_id"], r["status"], r.get("error")) for r in rows if not r["success"]]
    assert lost == []
    assert all(0 < r["steps"] <= 12 for r in rows)
    if text_version == "2.1.2":  # played through the loader's patch, from the cache
        assert list(cache.rglob("game.tw-pddl"))
