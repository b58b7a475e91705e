"""`pytest -q`, README's habit, must still end with the summary line (an `addopts = "-q"` made it `-qq`)."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import REPO


def test_pytest_q_ends_with_its_summary_line(tmp_path):
    probe = tmp_path / "test_probe.py"
    probe.write_text("def test_one():\n    assert 1 + 1 == 2\n")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-c",
            str(REPO / "pyproject.toml"),
            "--rootdir",
            str(tmp_path),
            str(probe),
        ],
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip().splitlines()[-1].startswith("1 passed")
