import json
import unicodedata

import pytest

from pos_bench.runner import run
from pos_bench.runner.preflight import ConfigError
from pos_bench.transcript import ID_FILE, episode_dir, find_episode, folder_name, remove_inside
from tests.runner.odd_ids import ODD_IDS
from tests.runner.test_run import config, lines


def odd_config(ids=None, **runner):
    cfg = config(**runner)
    cfg["bench"] = {"_target_": "tests.runner.odd_ids.OddIds", "max_turns": 10, "ids": ids}
    return cfg


def test_folder_names_are_safe_distinct_and_bounded():
    names = [folder_name(i) for i in ODD_IDS + ("x" * 5000, "", "\ud800")]
    assert len({n.casefold() for n in names}) == len(names)
    for name in names:
        assert name not in (".", "..") and "/" not in name and "\\" not in name and not name.startswith(".")
        assert len(name) <= 61 and name.isascii()
        assert unicodedata.normalize("NFC", name) == name
    assert folder_name("toy/000").startswith("toy_000-")  # still readable


def test_hostile_and_colliding_ids_get_one_folder_each_and_no_row_is_lost(tmp_path):
    run_dir = tmp_path / "run"
    summary = run(odd_config(n_jobs=2), run_dir, {"bench": "odd"})
    rows = lines(run_dir / "results.jsonl")
    assert summary.episodes == len(ODD_IDS) and sorted(r["task_id"] for r in rows) == sorted(ODD_IDS)
    assert (run_dir / "run.json").exists() and (run_dir / "summary.json").exists()
    folders = sorted((run_dir / "episodes").iterdir())
    assert len(folders) == len(ODD_IDS)
    assert not (tmp_path / "escape").exists()
    for task_id in ODD_IDS:
        folder = episode_dir(run_dir, task_id)
        assert folder.parent == run_dir / "episodes"
        assert (folder / ID_FILE).read_text(encoding="utf-8") == task_id
        assert json.loads((folder / "result.json").read_text())["task_id"] == task_id
        assert find_episode(run_dir, task_id) == folder
    # resume: everything is done, nothing is deleted or played again
    again = run(odd_config(), run_dir, {"bench": "odd"})
    assert again.episodes == len(ODD_IDS) and len(lines(run_dir / "results.jsonl")) == len(ODD_IDS)


def test_the_same_id_twice_is_refused_before_the_run_naming_it(tmp_path):
    with pytest.raises(ConfigError, match="'t1' and 't1'"):
        run(odd_config(ids=["t0", "t1", "t1"]), tmp_path, {})
    assert not (tmp_path / "results.jsonl").exists()


def test_a_legacy_folder_of_an_old_run_is_found_only_for_its_own_id(tmp_path):
    legacy = tmp_path / "episodes" / "case__x"
    legacy.mkdir(parents=True)
    (legacy / "result.json").write_text(json.dumps({"task_id": "case x"}))
    assert find_episode(tmp_path, "case x") == legacy
    assert find_episode(tmp_path, "case__x") == episode_dir(tmp_path, "case__x")
    assert find_episode(tmp_path, "..") == episode_dir(tmp_path, "..")


def test_a_delete_outside_the_run_folder_is_refused(tmp_path):
    (tmp_path / "run").mkdir()
    keep = tmp_path / "keep"
    keep.mkdir()
    for path in (tmp_path / "run", tmp_path / "run" / "episodes" / "..", keep):
        with pytest.raises(AssertionError, match="refusing to delete"):
            remove_inside(path, tmp_path / "run")
    assert keep.exists()
