"""A run folder is data, never code: the overrides it records may only choose the project's own configs and set
plain values, and anything else is refused (one line, exit 2) before anything is composed or built."""

import json
from pathlib import Path

import pytest

from pos_bench.runner.overrides import checked_overrides
from pos_bench.runner.preflight import ConfigError
from pos_bench.runner.rescore import main as rescore_main

PLAIN = [
    "bench=clindiag",
    "method=pos",
    "+model@roles.belief=qwen",
    "+experiment=quickstart",
    "bench.limit=2",
    "++bench.max_turns=5",
    "~model.api_key_env",
    "prices.default.input_per_mtok=0.4",
    "runner.n_jobs=2",
    "bench.families=[A,B]",
    "model.name='a b'",
]

REFUSED = {
    "++bench._target_=shutil.copyfile": "special key",
    "++roles.judge={_target_:shutil.copyfile,src:/etc/hostname,dst:/tmp/x}": "special key",
    "++roles.judge={inner:{_partial_:true}}": "special key",
    "bench.limit=${oc.env:HOME}": "interpolation",
    "model.base_url='http://${oc.env:OPENAI_API_KEY}@x'": "interpolation",
    "bench.x=[1,'${y}']": "interpolation",
    "hydra.run.dir=/tmp": "Hydra",
    "+model@hydra.x=qwen": "Hydra",
    "bench=../../../tmp/evil": "not one of the project's bench configs",
    "model=no_such_model": "not one of the project's model configs",
    "method=raw,pos": "sweep",
    "runer.n_jobs=3": "no such setting",
    "model.timeout=nan": "non-finite",
    "model.timeout=inf": "non-finite",
}


@pytest.mark.parametrize("override", PLAIN)
def test_plain_choices_and_values_are_kept(override):
    assert checked_overrides([override], Path("run.json")) == [override]


@pytest.mark.parametrize("override,why", REFUSED.items())
def test_anything_that_is_not_plain_data_is_refused_naming_the_file_and_the_override(override, why):
    with pytest.raises(ConfigError) as refused:
        checked_overrides(["bench=clindiag", override], Path("/runs/x/run.json"))
    message = str(refused.value)
    assert message.startswith("/runs/x/run.json: override ") and override in message and why in message
    assert "\n" not in message


@pytest.mark.parametrize("stored", [{"a": 1}, "bench=toy", [1, 2], None])
def test_overrides_that_are_not_a_list_of_strings_are_refused(stored):
    with pytest.raises(ConfigError, match="must be a list of strings"):
        checked_overrides(stored, Path("run.json"))


DONE_ROW = {
    "task_id": "case-1",
    "status": "done",
    "success": False,
    "score": 0.0,
    "turns": 1,
    "steps": 1,
    "meta_actions": 0,
    "spent_turns": 0,
    "peak_input_tokens": 0,
    "dependency_m": 0,
    "seconds": 0.0,
    "extras": {},
    "task_meta": {},
}


def crafted_run(root: Path, overrides: list[str], where: str) -> Path:
    run_dir = root / "clindiag" / "raw" / "scripted" / "r1"
    run_dir.mkdir(parents=True)
    (run_dir / "results.jsonl").write_text(json.dumps(DONE_ROW) + "\n")
    meta = {"labels": {"bench": "clindiag"}}
    if where == "run.json":
        meta["overrides"] = overrides
    else:
        (run_dir.parent / "index.json").write_text(json.dumps([{"folder": "r1", "overrides": overrides}]))
    (run_dir / "run.json").write_text(json.dumps(meta))
    return run_dir


@pytest.mark.parametrize("where", ["run.json", "index.json"])
def test_rescoring_a_crafted_folder_writes_no_file_and_exits_2_naming_file_and_key(
    where, tmp_path, shared, monkeypatch, capsys
):
    monkeypatch.setenv("CLINDIAG_DATA", str(shared / "benchmarks" / "clindiag"))
    target = tmp_path / "written-by-the-folder"
    attack = f"++roles.benchmark_judge={{_target_:shutil.copyfile,src:{__file__},dst:{target}}}"
    run_dir = crafted_run(tmp_path / "results", ["bench=clindiag", "model=scripted", attack], where)
    code = rescore_main([str(run_dir)])
    err = capsys.readouterr().err
    assert not target.exists()
    assert code == 2
    assert where in err and "roles.benchmark_judge" in err and "_target_" in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert not list(run_dir.glob("results.*.jsonl"))  # nothing ran


@pytest.mark.parametrize("content", ["[1, 2]", '"text"', "{not json", b"\xff\xfe{}"])
def test_a_run_json_that_is_not_an_object_is_one_line_and_exit_2(content, tmp_path, capsys):
    run_dir = crafted_run(tmp_path / "results", ["bench=clindiag"], "index.json")
    data = content if isinstance(content, bytes) else content.encode()
    (run_dir / "run.json").write_bytes(data)
    assert rescore_main([str(run_dir)]) == 2
    err = capsys.readouterr().err
    assert str(run_dir / "run.json") in err and len(err.strip().splitlines()) == 1
