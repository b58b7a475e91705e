"""Case trees without a manifest, subsets that have no cases and duplicate case ids (clindiag/data.py)."""

import logging
import shutil
import time

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


def test_an_upstream_tree_without_a_manifest_takes_subsets_from_the_folder_names(staged_source, tmp_path):
    rare = sorted(k for k in staged_source.case_dirs if k.startswith("rare"))[:2]
    pmids = sorted(k for k in staged_source.case_dirs if not k.startswith("rare"))[:3]
    tree = copy_cases(staged_source, tmp_path / "upstream", {"benchmark_dataset": [*rare, *pmids]})
    assert [t.id for t in ClinDiagBenchmark(str(tree), subset="rare").tasks()] == [f"rare/{i}" for i in rare]
    challenging = ClinDiagBenchmark(str(tree), subset="challenging").tasks()
    assert [t.id for t in challenging] == [f"challenging/{i}" for i in pmids]
    assert {t.meta["subset"] for t in ClinDiagBenchmark(str(tree)).tasks()} == set(data.SUBSETS)


def test_a_subset_without_cases_is_an_error_naming_the_subsets_found(staged_source, tmp_path):
    pmids = sorted(k for k in staged_source.case_dirs if not k.startswith("rare"))[:3]
    tree = copy_cases(staged_source, tmp_path / "flat", {"benchmark_dataset": pmids})
    with pytest.raises(ValueError, match="bench.subset=rare has no cases in .*subsets found: challenging"):
        ClinDiagBenchmark(str(tree), subset="rare").tasks()


def synthetic_tree(root, n, *, broken=False):
    """`n` case folders in upstream naming (a tenth `rare<N>`, the rest PMID-like); `broken` files are not JSON,
    which only matters to code that parses them."""
    for i in range(n):
        folder = root / "benchmark_dataset" / (f"rare{i}" if i % 10 == 0 else str(30_000_000 + i))
        folder.mkdir(parents=True)
        for name in (data.INITIAL, data.ANSWER):
            (folder / name).write_text("{not json" if broken else "{}", encoding="utf-8")
    return root


def test_listing_two_thousand_cases_parses_none_and_is_quick(tmp_path):
    tree = synthetic_tree(tmp_path / "big", 2000, broken=True)
    started = time.process_time()
    tasks = ClinDiagBenchmark(str(tree), subset="rare").tasks()
    assert len(tasks) == 200 and all(t.id.startswith("rare/rare") for t in tasks)
    assert time.process_time() - started < 10  # CPU seconds; about 0.2 s on a quiet machine
    env = ClinDiagBenchmark(str(tree), subset="rare", limit=1).make_env(None)
    with pytest.raises(data.CaseDataError, match=r"case rare/rare0: .*rare0/initial_information.json"):
        env.reset(tasks[0])


def test_bad_case_files_name_the_file_and_the_case(staged_source, tmp_path):
    case_id = min(k for k in staged_source.case_dirs if k.startswith("rare"))
    tree = copy_cases(staged_source, tmp_path / "bad", {"benchmark_dataset": [case_id]})
    folder = tree / "benchmark_dataset" / case_id
    (folder / "laboratory_test.json").write_bytes(b"\x89PNG\r\n\x1a\n\xff\xfe")
    bench = ClinDiagBenchmark(str(tree))
    with pytest.raises(
        data.CaseDataError, match=rf"case rare/{case_id}: .*laboratory_test.json is not UTF-8"
    ):
        bench.make_env(None).reset(bench.tasks()[0])
    (folder / "laboratory_test.json").unlink()
    (folder / data.ANSWER).write_text("[1, 2]", encoding="utf-8")
    source = data.find_source(tree)
    with pytest.raises(data.CaseDataError, match=rf"case rare/{case_id}: .*diagnosis.json should hold"):
        data.load_answer(source, data.CaseRef(case_id, "rare"))


def test_a_case_missing_its_presentation_is_an_error_naming_the_file(staged_source, tmp_path):
    ids = sorted(k for k in staged_source.case_dirs if not k.startswith("rare"))[:2]
    tree = copy_cases(staged_source, tmp_path / "gap", {"benchmark_dataset": ids})
    (tree / "benchmark_dataset" / ids[1] / data.INITIAL).unlink()
    with pytest.raises(
        FileNotFoundError, match=rf"1 selected ClinDiag cases .*challenging/{ids[1]}: no .*{data.INITIAL}"
    ):
        ClinDiagBenchmark(str(tree)).tasks()


def test_duplicate_case_ids_are_an_error_naming_both_paths(staged_source, tmp_path):
    case_id = min(staged_source.case_dirs)
    tree = copy_cases(staged_source, tmp_path / "dup", {"a": [case_id], "b": [case_id]})
    with pytest.raises(ValueError, match=f"{case_id!r} occurs twice") as raised:
        ClinDiagBenchmark(str(tree)).tasks()
    assert str(tree / "a" / case_id) in str(raised.value) and str(tree / "b" / case_id) in str(raised.value)
