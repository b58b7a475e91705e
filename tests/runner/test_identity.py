"""Run identity: what changes the fingerprint, what does not, and the index of run folders."""

import json

import pytest

from pos_bench.runner.identity import (
    RunIndex,
    RunMismatch,
    check_folder,
    data_identity,
    folder_name,
    run_identity,
)

SCRIPTED = {"provider": "scripted", "model": "scripted", "temperature": 0.0, "test": True}


def cfg(**changes):
    base = {
        "bench": {"_target_": "pos_bench.benchmarks.toy.ToyBenchmark", "n_tasks": 8, "limit": None, "max_turns": 5},
        "method": {"_target_": "baselines.raw.RawHistory", "_partial_": True, "max_json_retries": 2},
        "model": {"_target_": "pos_bench.models.scripted.ScriptedModel"},
        "runner": {"n_jobs": 1, "backend": "loky", "progress": True, "max_meta_per_turn": 3},
        "retry": {}, "cache": {"mode": "read_write"}, "prices": {}, "roles": {},
    }  # fmt: skip
    for dotted, value in changes.items():
        node = base
        *parents, last = dotted.split("__")
        for key in parents:
            node = node[key]
        node[last] = value
    return base


def fingerprint(config, description=SCRIPTED):
    return run_identity(config, description).fingerprint


def test_settings_that_shape_an_episode_change_the_fingerprint():
    base = fingerprint(cfg())
    assert fingerprint(cfg()) == base  # stable
    for change in (
        {"bench__max_turns": 20},
        {"method__max_json_retries": 1},
        {"runner__max_meta_per_turn": 1},
        {"model__delay": 0.5},
    ):
        assert fingerprint(cfg(**change)) != base, change
    assert fingerprint(cfg(), {**SCRIPTED, "model": "other"}) != base


def test_an_expert_run_identifies_no_model_since_it_calls_none():
    expert = cfg(method={"_target_": "baselines.expert.Expert", "_partial_": True}, expert=True)
    identity = run_identity(expert, {})
    assert identity.settings["model"] is None and identity.settings["roles"] == {}
    other_model = {
        **expert,
        "model": {"_target_": "pos_bench.models.local.LocalModel"},
        "roles": {"belief": {}},
    }
    assert fingerprint(other_model, {}) == identity.fingerprint
    assert fingerprint({**expert, "expert": False}, SCRIPTED) != identity.fingerprint


def test_settings_that_cannot_change_an_outcome_keep_the_fingerprint():
    base = fingerprint(cfg())
    for change in (
        {"runner__n_jobs": 8},
        {"runner__progress": False},
        {"runner__backend": "threading"},
        {"bench__limit": 2},
        {"retry": {"max_attempts": 2}},
        {"prices": {"default": {"input_per_mtok": 1.0, "output_per_mtok": 1.0}}},
        {"cache": {"mode": "off"}},
        {"model__api_key_env": "OTHER_KEY"},
        {"model__base_url": "http://elsewhere/v1"},
    ):
        assert fingerprint(cfg(**change)) == base, change
    assert fingerprint(cfg(), {**SCRIPTED, "retry": {"max_attempts": 3}, "cache": "read_write"}) == base


def test_data_identity_follows_the_content_of_named_paths(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (data / "case1.json").write_text("{}")
    first = data_identity({"data_dir": str(data), "subset": "all"})
    assert list(first) == [str(data)]
    (data / "case2.json").write_text("{}")
    assert data_identity({"data_dir": str(data)}) != first
    changed = cfg(bench__data_dir=str(data))
    assert fingerprint(changed) != fingerprint(cfg(bench__data_dir=str(tmp_path)))


def test_each_fingerprint_gets_its_own_folder_and_the_index_says_how_they_differ(tmp_path):
    index = RunIndex(tmp_path)
    a = run_identity(cfg(), SCRIPTED)
    b = run_identity(cfg(bench__max_turns=9), SCRIPTED)
    folder_a = index.folder_for(a, ["bench=toy", "++bench.limit=2"])
    assert folder_a.name == f"default-{a.short}"
    assert index.folder_for(a, ["bench.max_turns=5"]) == folder_a  # found by fingerprint, not by name
    folder_b = index.folder_for(b, ["++bench.max_turns=9", "++runner.n_jobs=4"])
    assert folder_b.name == f"max_turns-9-{b.short}"
    entries = json.loads((tmp_path / "index.json").read_text())
    assert [e["fingerprint"] for e in entries] == [a.fingerprint, b.fingerprint]
    assert entries[1]["differs_from"] == [{"folder": folder_a.name, "differs_in": ["bench.max_turns"]}]


def test_a_folder_of_other_settings_is_refused_with_the_keys_and_the_command(tmp_path):
    a = run_identity(cfg(), SCRIPTED)
    (tmp_path / "run.json").write_text(
        json.dumps({"identity": {"fingerprint": a.fingerprint, "settings": a.settings}})
    )
    (tmp_path / "results.jsonl").write_text('{"task_id": "toy/000", "status": "done"}\n')
    check_folder(tmp_path, a)
    with pytest.raises(RunMismatch, match=r"bench.max_turns.*mv "):
        check_folder(tmp_path, run_identity(cfg(bench__max_turns=7), SCRIPTED))


def test_folder_names_leave_out_operational_and_slice_settings():
    overrides = ["bench=toy", "++runner.n_jobs=2", "++bench.limit=3", "results_root=/x", "+experiment=paper"]
    assert folder_name(overrides, "abcd1234") == "experiment-paper-abcd1234"


def test_a_run_folder_path_pastes_into_an_override():
    """The printed run folder is a valid unquoted override value (`model=replay model.run=<run folder>`)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    overrides = ["bench=toy", "++bench.max_turns=3", "++model.temperature=0.5", "++method.window=4"]
    path = f"results/toy/raw/scripted/{folder_name(overrides, 'abcd1234')}"
    assert "=" not in path and "," not in path
    assert OverridesParser.create().parse_override(f"model.run={path}").value() == path


@pytest.mark.parametrize(
    ("index_json", "named"),
    [
        ('{"folder": "x"}', "a list of runs expected"),
        ("[1]", "not an object"),
        ('[{"folder": "x", "settings": {}}]', "'fingerprint'"),
        ('[{"folder": 7, "fingerprint": "f", "settings": {}}]', "'folder'"),
        ('[{"folder": "..", "fingerprint": "f", "settings": {}}]', "not a folder name inside"),
        ('[{"folder": "../../etc", "fingerprint": "f", "settings": {}}]', "not a folder name inside"),
        ('[{"folder": "/tmp", "fingerprint": "f", "settings": {}}]', "not a folder name inside"),
        ("[[[", "JSONDecodeError"),
    ],
)
def test_an_index_of_the_wrong_shape_or_with_an_outside_folder_is_refused_in_one_line(
    tmp_path, index_json, named
):
    (tmp_path / "index.json").write_text(index_json)
    with pytest.raises(RunMismatch) as refused:
        RunIndex(tmp_path).folder_for(run_identity(cfg(), SCRIPTED))
    message = str(refused.value)
    assert named in message and "\n" not in message and "nothing was run" in message


def test_a_link_leading_out_of_the_results_root_is_refused(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    (root / "escape").symlink_to(tmp_path)
    a = run_identity(cfg(), SCRIPTED)
    (root / "index.json").write_text(
        json.dumps([{"folder": "escape", "fingerprint": a.fingerprint, "settings": {}}])
    )
    with pytest.raises(RunMismatch, match="not a folder name inside"):
        RunIndex(root).folder_for(a)
