"""The generated configuration reference (scripts/docs_reference.py) names every benchmark, method and model preset
and every key of every config file; a member the documentation's groups table names but the reference lacks
(its config removed, say) fails, naming it."""

from __future__ import annotations

import importlib.util
import re
import shutil
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TABLE = REPO / "docs" / "reference" / "configuration.md"
"""The hand-written page whose groups table names every member (the documentation's list of record)."""
CHECKED = ("bench", "method", "model")
"""Groups whose table row must match conf/ both ways: benchmarks, methods and model presets."""


def load_generator():
    spec = importlib.util.spec_from_file_location("docs_reference", REPO / "scripts" / "docs_reference.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


gen = load_generator()


def sections(page: str, level: str = "## ") -> dict[str, str]:
    """Heading name (the first code span of each `level` heading) → the text below it."""
    parts = re.split(rf"^{level}`([^`]+)`.*$", page, flags=re.MULTILINE)
    return {parts[i]: parts[i + 1] for i in range(1, len(parts), 2)}


def table_members(text: str) -> dict[str, set[str]]:
    """Group → the member names its row of the configuration groups table lists."""
    rows = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
        if len(cells) >= 3 and re.fullmatch(r"`[\w/]+`", cells[0]):
            rows[cells[0].strip("`")] = set(re.findall(r"`([a-z0-9_]+)`", cells[1]))
    return rows


def missing(pages: dict[str, str], conf: Path, documented: dict[str, set[str]]) -> list[str]:
    """One line per member or key that `conf/` or the groups table has and the generated pages lack."""
    problems = []
    for group in gen.GROUPS:
        page = sections(pages[gen.PAGE.format(group.replace("/", "-"))])
        files = {p.stem: p for p in (conf / group).glob("*.yaml")}
        for name in sorted(documented.get(group, set()) - set(page)) if group in CHECKED else []:
            problems.append(
                f"{group} {name}: named in {TABLE.relative_to(REPO)} but missing from the generated "
                f"reference (no conf/{group}/{name}.yaml?)"
            )
        for name, path in sorted(files.items()):
            if name not in page:
                problems.append(
                    f"{group} {name}: conf/{group}/{name}.yaml has no section in the generated reference"
                )
                continue
            if group in CHECKED + ("experiment",) and name not in documented.get(group, set()):
                problems.append(f"{group} {name}: not in the `{group}` row of {TABLE.relative_to(REPO)}")
            problems += [
                f"{group} {name}: key `{key}` missing"
                for key, _ in gen.flat(gen.read(path))
                if f"`{key}`" not in page[name] and f"`{key.removeprefix(group + '.')}`" not in page[name]
            ]
            target = gen.lineage(conf / group, name)[0].get("_target_")
            problems += [
                f"{group} {name}: constructor argument `{p.name}` missing"
                for p in (gen.params(REPO, target) if target else [])
                if f"`{p.name}`" not in page[name] and f"`{p.name}." not in page[name]
            ]
    bench_page = pages[gen.PAGE.format("method_bench")]
    for path in sorted((conf / "method_bench").glob("*/*.yaml")):
        heading = f"### `{path.parent.name}` on `{path.stem}`"
        body = bench_page.split(heading, 1)[1].split("\n#", 1)[0] if heading in bench_page else None
        if body is None:
            problems.append(
                f"method_bench {path.parent.name}/{path.stem}: no section in the generated reference"
            )
            continue
        problems += [
            f"method_bench {path.parent.name}/{path.stem}: key `{key}` missing"
            for key, _ in gen.flat(gen.read(path))
            if f"`{key}`" not in body
        ]
    top = sections(pages[gen.PAGE.format("index")])
    for key, value in gen.read(conf / "config.yaml").items():
        if key not in ("defaults", "hydra"):
            keys = [key] + [f"{key}.{k}" for k, _ in gen.flat(value)] if isinstance(value, dict) else [key]
            problems += [f"top-level key `{k}` missing" for k in keys if f"`{k}`" not in top.get(key, "")]
    return problems


@pytest.fixture(scope="module")
def documented() -> dict[str, set[str]]:
    return table_members(TABLE.read_text(encoding="utf-8"))


def test_the_reference_names_every_member_and_key(documented):
    assert documented.keys() >= set(CHECKED), f"{TABLE} lost its configuration groups table"
    assert missing(gen.render(), REPO / "conf", documented) == []


def test_a_removed_method_config_is_named(tmp_path, documented):
    conf = shutil.copytree(REPO / "conf", tmp_path / "conf")
    (conf / "method" / "raw.yaml").unlink()
    problems = missing(gen.render(conf), conf, documented)
    assert len(problems) == 1 and problems[0].startswith(
        "method raw: named in docs/reference/configuration.md"
    )


def test_a_key_the_reference_lacks_is_named(tmp_path, documented):
    pages = gen.render()
    conf = shutil.copytree(REPO / "conf", tmp_path / "conf")
    toy = conf / "bench" / "toy.yaml"
    toy.write_text(toy.read_text(encoding="utf-8") + "\nbrand_new_key: 3\n", encoding="utf-8")
    assert missing(pages, conf, documented) == ["bench toy: key `brand_new_key` missing"]


def test_a_preset_missing_from_the_groups_table_is_named(tmp_path, documented):
    conf = shutil.copytree(REPO / "conf", tmp_path / "conf")
    shutil.copy(conf / "model" / "vllm.yaml", conf / "model" / "my_server.yaml")
    problems = missing(gen.render(conf), conf, documented)
    assert problems == ["model my_server: not in the `model` row of docs/reference/configuration.md"]


def test_the_pos_page_gives_every_key_with_its_default_and_description():
    pos = sections(gen.render()[gen.PAGE.format("method")])["pos"]
    row = next(line for line in pos.splitlines() if line.startswith("| `trapping.health_threshold`"))
    assert (
        "`0.25`" in row and "θ_H" in row
    )  # the config's value, the constructor's default, the field docstring
