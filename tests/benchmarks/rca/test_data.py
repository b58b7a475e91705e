import re
import shutil

import pytest

from pos_bench.benchmarks.rca import data as rca_data
from pos_bench.benchmarks.rca.benchmark import RCABenchmark
from pos_bench.loop import play
from pos_bench.transcript import Transcript
from tests.benchmarks.rca.test_benchmark import Oracle


@pytest.fixture(scope="module")
def synthetic_copy(tmp_path_factory):
    return rca_data.synthetic(3, 1, cache=tmp_path_factory.mktemp("rca_cache"))


@pytest.fixture()
def real_layout(tmp_path, synthetic_copy):
    """A user's copy: manifest.txt + cases/ in one folder, the labels in another."""
    data, key = tmp_path / "rca100", tmp_path / "labels"
    shutil.copytree(synthetic_copy.cases, data / "cases")
    (data / "manifest.txt").write_text("t002\nt001\n")
    shutil.copytree(synthetic_copy.answer_key, key)
    return data, key


@pytest.fixture()
def clean_env(monkeypatch):
    monkeypatch.delenv("RCA100_DATA", raising=False)
    monkeypatch.delenv("RCA100_ANSWER_KEY", raising=False)


def test_synthetic_cases_are_generated_once_into_a_versioned_folder(tmp_path):
    first = rca_data.synthetic(2, 4, cache=tmp_path)
    stamp = (first.cases / "t001" / "metrics.parquet").stat().st_mtime_ns
    again = rca_data.synthetic(2, 4, cache=tmp_path)
    assert again == first and (again.cases / "t001" / "metrics.parquet").stat().st_mtime_ns == stamp
    assert first.cases.parent.name.startswith("synthetic-v") and first.answer_key.parent == first.cases.parent
    assert [p.name for p in tmp_path.iterdir()] == [first.cases.parent.name]  # no temporary folder left


def test_real_source_reads_the_users_copy_in_manifest_order(real_layout, clean_env, monkeypatch):
    data, key = real_layout
    monkeypatch.setenv("RCA100_DATA", str(data))
    monkeypatch.setenv("RCA100_ANSWER_KEY", str(key))
    bench = RCABenchmark(source="real")
    tasks = bench.tasks()
    assert [t.id for t in tasks] == ["t002", "t001"] and tasks[0].meta == {"source": "real"}
    result = play(
        tasks[0], bench.make_env(None), Oracle(), None, brief=bench.brief, max_turns=50, log=Transcript()
    )
    assert result.success and result.extras["joint"] is True


def test_missing_real_data_is_one_clear_error(tmp_path, clean_env):
    with pytest.raises(FileNotFoundError) as caught:
        RCABenchmark(source="real", data_dir=str(tmp_path / "nowhere")).tasks()
    message = str(caught.value)
    assert message.startswith("RCA-100 cases (manifest.txt + cases/) not found (searched: ")
    assert (
        str(tmp_path / "nowhere") in message
        and "answer key (*.gt.json) not found" in message
        and rca_data.DATA_URL in message
    )
    assert "Alibaba Cloud AIOps Team" in message and "bench=rca_synthetic" in message


def test_missing_labels_or_case_files_are_named(real_layout, clean_env):
    data, key = real_layout
    with pytest.raises(
        FileNotFoundError, match=r"RCA-100 answer key \(\*.gt.json\) not found \(searched: .*labels_elsewhere"
    ):
        RCABenchmark(
            source="real", data_dir=str(data), answer_key=str(data.parent / "labels_elsewhere")
        ).tasks()
    (data / "cases" / "t001" / "traces.parquet").unlink()
    (key / "t002.gt.json").unlink()
    (key / "t003.gt.json").unlink()
    with pytest.raises(
        FileNotFoundError, match="2 RCA-100 files are missing.*t001/traces.parquet.*t002.gt.json"
    ):
        RCABenchmark(source="real", data_dir=str(data), answer_key=str(key)).tasks()
    assert [
        t.id for t in RCABenchmark(source="real", data_dir=str(data), answer_key=str(key), limit=0).tasks()
    ] == []


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("t001\n..\n", "line 2: case id '..'"),
        ("t001\n.\n", "line 2: case id '.'"),
        ("a/b\n", "line 1: case id 'a/b'"),
        ("t001\nt002\nt001\n", "lines 1 and 3: case id 't001' is listed twice"),
    ],
)
def test_a_manifest_id_that_is_no_plain_folder_name_or_repeats_is_refused_naming_the_line(
    tmp_path, text, named
):
    manifest = tmp_path / "manifest.txt"
    manifest.write_text(text)
    with pytest.raises(ValueError, match=re.escape(f"{manifest} {named}")):
        rca_data.read_manifest(manifest)


def test_a_plain_manifest_is_read_in_order(tmp_path):
    manifest = tmp_path / "manifest.txt"
    manifest.write_text("t002\n\n t001 \nv1.1_case-3\n")
    assert rca_data.read_manifest(manifest) == ("t002", "t001", "v1.1_case-3")
