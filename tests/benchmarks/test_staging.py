"""Unpacking a data archive: once, atomically, and a clear message for a damaged one."""

import io
import tarfile

import pytest

from pos_bench.benchmarks.staging import DamagedArchive, unpack


def archive(path, files):
    with tarfile.open(path, "w:gz") as bundle:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            bundle.addfile(info, io.BytesIO(data))
    return path


def test_an_archive_is_unpacked_once(tmp_path):
    path = archive(tmp_path / "data.tar.gz", {"cases/a.json": "{}"})
    target = unpack(path, tmp_path / "cache", expect="cases/a.json")
    assert (target / "cases" / "a.json").read_text() == "{}"
    assert unpack(path, tmp_path / "cache") == target


def test_a_truncated_archive_names_the_file_and_the_fix(tmp_path):
    path = archive(tmp_path / "data.tar.gz", {f"cases/{i}.json": "x" * 5000 + str(i) for i in range(50)})
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    with pytest.raises(DamagedArchive, match=r"data.tar.gz is damaged or truncated .*Download it again"):
        unpack(path, tmp_path / "cache")
    assert not any((tmp_path / "cache" / "data").iterdir())  # no half tree left behind
