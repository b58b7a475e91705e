"""Regenerate the documentation site's pictures into docs/assets/, so none is pasted by hand:
- figure3.png, figure4.png, belief_accuracy.png: drawn by `pos_bench.analysis` (what `scripts/plots.py` runs) from
  the scripted fixture runs of tests/analysis/fixture_runs.py (stand-in data, not results);
- report.png and belief.png: the HTML report of those runs and a PoS episode's belief view, in headless Chromium
  driven by selenium (Debian's `chromium` and `chromium-driver`, as tests/report/test_browser.py uses them);
- progress.png: the progress bar of a short scripted run, its terminal line drawn as an image.

uv run --frozen --all-extras python scripts/docs_figures.py [--out docs/assets] [--only figures,report,progress]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # the fixture runs live in tests/

from pos_bench.report import chromium  # after the path is set

FIGURES = {
    "figure3_trapping.png": "figure3.png",
    "figure4_lengths.png": "figure4.png",
    "belief_accuracy.png": "belief_accuracy.png",
}
"""`write_figures`' file name → the name the docs use."""


def figures(root: Path, out: Path) -> list[Path]:
    from pos_bench.analysis.collect import collect, write_figures

    drawn = root.parent / "figures"
    drawn.mkdir(exist_ok=True)
    written, skipped = write_figures(collect([root], None), drawn)
    names = {p.name for p in written}
    missing = [name for name in FIGURES if name not in names]
    if missing:
        raise RuntimeError(f"the fixture runs did not give {missing}: {skipped}")
    return [Path(shutil.copy(drawn / name, out / FIGURES[name])) for name in FIGURES]


def browser():
    if not chromium.available():
        raise SystemExit(f"{chromium.MISSING}: it takes the screenshots")
    return chromium.headless("1400,900", "--hide-scrollbars")


def report(root: Path, out: Path) -> list[Path]:
    """The report's first screen, then the first scripted PoS episode opened (its belief timeline)."""
    from selenium.webdriver.support.ui import WebDriverWait

    from pos_bench.report.page import render

    page = root.parent / "report.html"
    page.write_text(render([root], spec=None), encoding="utf-8")
    with browser() as driver:
        driver.get(page.as_uri())
        WebDriverWait(driver, 30).until(
            lambda d: d.find_element("tag name", "body").get_attribute("data-ready")
        )
        driver.save_screenshot(str(out / "report.png"))
        run = next(
            h
            for h in driver.find_elements("css selector", "h3.run")
            if h.text.startswith("toy/pos/scripted ")
        )
        driver.find_element("css selector", f"tr.ep[data-run='{run.get_attribute('data-run')}']").click()
        pane = driver.find_element("id", "pane-a")
        timeline = pane.find_element("css selector", "svg.health")
        driver.execute_script(
            "arguments[0].scrollIntoView({block: 'start'}); window.scrollBy(0, -60)", timeline
        )
        driver.save_screenshot(str(out / "belief.png"))
    return [out / "report.png", out / "belief.png"]


def progress(root: Path, out: Path) -> list[Path]:
    """Run raw on six toy tasks with the scripted model and draw the bar's last frame that shows an ETA."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    command = [
        sys.executable,
        "-m",
        "pos_bench",
        "bench=toy",
        "method=raw",
        "model=scripted",
        "bench.limit=6",
        "runner.n_jobs=2",
        "runner.backend=threading",
        f"results_root={root.parent / 'progress'}",
    ]
    done = subprocess.run(
        command, check=False, cwd=REPO, capture_output=True, text=True, env={**os.environ, "COLUMNS": "110"}
    )
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed:\n{done.stderr[-2000:]}")
    frames = [f.strip() for f in re.split(r"[\r\n]", done.stderr) if f.strip().startswith("episodes:")]
    if not frames:
        raise RuntimeError(f"no progress bar in the run's output:\n{done.stderr[-2000:]}")
    shown = next((f for f in reversed(frames) if "eta" in f and "eta ?" not in f), frames[-1])
    lines = ["$ " + " ".join(["python", "-m"] + command[2:-1]), shown]
    figure = plt.figure(figsize=(11, 0.9), facecolor="#1e1e1e")
    for row, line in enumerate(lines):
        figure.text(0.01, 0.68 - 0.42 * row, line, family="monospace", fontsize=9.5, color="#e6e6e6")
    figure.savefig(out / "progress.png", dpi=110, facecolor=figure.get_facecolor())
    plt.close(figure)
    return [out / "progress.png"]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "assets")
    parser.add_argument("--only", default="figures,report,progress")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    jobs = {"figures": figures, "report": report, "progress": progress}
    wanted = args.only.split(",")
    unknown = set(wanted) - set(jobs)
    if unknown:
        parser.error(f"--only takes {', '.join(jobs)}; got {', '.join(sorted(unknown))}")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "runs"
        if {"figures", "report"} & set(wanted):
            from tests.analysis.fixture_runs import build_all

            build_all(root)
        for name in wanted:
            for path in jobs[name](root, args.out):
                print(f"{path} ({path.stat().st_size // 1024} KB)")


if __name__ == "__main__":
    main()
