"""Where benchmark data is staged and cached, and the one-time unpacking of a data archive.

Shared by the ALFWorld and ClinDiag loaders: the staged copy beside the repository (`../shared/benchmarks/<name>`,
or `$POS_BENCH_SHARED/benchmarks/<name>`), the cache (`$XDG_CACHE_HOME` or `~/.cache`, then `pos_bench/<name>`),
and extraction that never leaves a half tree behind.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import shutil
import tarfile
import tempfile
import zipfile
import zlib
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def cache_root(benchmark: str) -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "pos_bench" / benchmark


def staged_dir(benchmark: str) -> Path:
    shared = os.environ.get("POS_BENCH_SHARED")
    return (Path(shared) if shared else REPO.parent / "shared") / "benchmarks" / benchmark


class DamagedArchive(RuntimeError):
    """A data archive that cannot be read to its end; the message names the file and the fix."""


def unpack(archive: Path, cache: Path, *, expect: Path | None = None) -> Path:
    """Extract a `.tar.gz` or `.zip` once into `cache/data/<content hash>` and return that directory.

    Extraction goes to a temporary sibling renamed into place, so parallel workers or a killed run never
    leave a half tree behind. `expect` is a relative path the archive must contain.
    """
    digest = hashlib.sha256(archive.read_bytes()).hexdigest()[:16]
    target = cache / "data" / digest
    if target.is_dir() and (expect is None or (target / expect).exists()):
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{digest}-", dir=target.parent))
    try:
        try:
            if archive.name.endswith(".zip"):
                with zipfile.ZipFile(archive) as bundle:
                    bundle.extractall(tmp)  # zipfile strips absolute paths and `..` components itself
            else:
                with tarfile.open(archive) as bundle:
                    bundle.extractall(tmp, filter="data")
        except (tarfile.TarError, zipfile.BadZipFile, gzip.BadGzipFile, EOFError, zlib.error) as error:
            raise DamagedArchive(
                f"{archive} is damaged or truncated ({type(error).__name__}: {error}). Download it again (or "
                "copy it again from the staged data), or point bench.data_dir at a good copy."
            ) from error
        if expect is not None and not (tmp / expect).exists():
            raise FileNotFoundError(f"{archive} does not contain {expect}")
        try:
            tmp.rename(target)
        except OSError:
            if not target.is_dir():  # someone else's rename must have won
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target
