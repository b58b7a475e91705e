"""Case trees without a manifest, subsets that have no cases and duplicate case ids (clindiag/data.py)."""

import logging
import shutil

import pytest

from pos_bench.benchmarks.clindiag import data
from pos_bench.benchmarks.clindiag.benchmark import ClinDiagBenchmark


@pytest.fixture(scope="module")
def staged_source(shared):
    return data.find_source(shared / "benchmarks" / "clindiag")


def copy_cases(source, target, layout):
    """`layout` maps a folder below `target` to the staged case ids copied into it."""
    for folder, ids in layout.items():
        for case_id in ids:
            shutil.copytree(source.case_dirs[case_id], target / folder / case_id)
    return target


def test_a_tree_without_a_manifest_plays_all_its_cases_sorted_and_says_so_once(
    staged_source, tmp_path, caplog
):
    rare = sorted(k for k in staged_source.case_dirs if k.startswith("rare"))[:2]
    challenging = sorted(k for k in staged_source.case_dirs if not k.startswith("rare"))[:2]
    tree = copy_cases(staged_source, tmp_path / "tree", {"rare": rare, "challenging": challenging})
    bench = ClinDiagBenchmark(str(tree))
    with caplog.at_level(logging.WARNING):
        tasks = bench.tasks()
        assert bench.tasks() == tasks
    expected = sorted(
        [*(("rare", i) for i in rare), *(("challenging", i) for i in challenging)], key=lambda p: p[1]
    )
    assert [t.id for t in tasks] == [f"{s}/{i}" for s, i in expected]
    notes = [r.getMessage() for r in caplog.records if "no manifest" in r.getMessage()]
    assert len(notes) == 1 and "all 4 cases play in sorted id order" in notes[0]
    assert [t.id for t in ClinDiagBenchmark(str(tree), subset="rare").tasks()] == [f"rare/{i}" for i in rare]


def test_a_subset_without_cases_is_an_error_naming_the_subsets_found(staged_source, tmp_path):
    ids = sorted(staged_source.case_dirs)[:3]
    tree = copy_cases(staged_source, tmp_path / "flat", {"benchmark_dataset": ids})
    assert [t.id for t in ClinDiagBenchmark(str(tree)).tasks()] == [
        f"{data.UNLABELLED}/{i}" for i in sorted(ids)
    ]
    with pytest.raises(
        ValueError, match=f"bench.subset=rare has no cases in .*subsets found: {data.UNLABELLED}"
    ):
        ClinDiagBenchmark(str(tree), subset="rare").tasks()


def test_duplicate_case_ids_are_an_error_naming_both_paths(staged_source, tmp_path):
    case_id = min(staged_source.case_dirs)
    tree = copy_cases(staged_source, tmp_path / "dup", {"a": [case_id], "b": [case_id]})
    with pytest.raises(ValueError, match=f"{case_id!r} occurs twice") as raised:
        ClinDiagBenchmark(str(tree)).tasks()
    assert str(tree / "a" / case_id) in str(raised.value) and str(tree / "b" / case_id) in str(raised.value)
