"""Fast answers: `--cfg job`, `--help` and a config error import no heavy library (pandas, matplotlib, scipy,
statsmodels, joblib/loky, Ray, the providers' SDKs, llama.cpp); those are imported where they are used."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from tests.conftest import REPO

HEAVY = ("pandas", "matplotlib", "scipy", "statsmodels", "joblib", "ray", "openai", "anthropic", "xllamacpp")


def imported(*args: str) -> tuple[set[str], subprocess.CompletedProcess]:
    """Top-level packages the command imports (from `python -X importtime`) and its completed process."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "pos_bench", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    names = re.findall(r"^import time:\s+\d+ \|\s+\d+ \|\s*([\w.]+)", done.stderr, flags=re.MULTILINE)
    return {name.split(".")[0] for name in names}, done


@pytest.mark.parametrize(
    "args",
    [
        ("--cfg", "job", "bench=toy"),
        ("bench=toy", "model=scripted", "method=nope"),
        ("bench=toy", "model=scripted", "method=raw", "bench.n_taks=3"),
    ],
    ids=["cfg", "bad-choice", "misspelt-key"],
)
def test_a_config_answer_imports_no_heavy_library(args):
    packages, done = imported(*args)
    assert (
        "hydra" in packages or done.returncode == 2
    )  # the probe saw the imports (a bad choice stops earlier)
    assert "pos_bench" in packages
    assert not packages & set(HEAVY), sorted(packages & set(HEAVY))
    if "--cfg" in args:
        assert done.returncode == 0 and "_target_: pos_bench.benchmarks.toy.ToyBenchmark" in done.stdout
