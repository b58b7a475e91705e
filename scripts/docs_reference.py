"""The configuration reference and the entry-point list of the documentation site, generated from `conf/` and the
source (the constructors' signatures and docstrings, read by griffe without importing anything), so it cannot
drift from the code. mkdocs.yml names this file as a hook: every build writes the pages afresh.
`tests/docs/test_reference.py` checks that every member and key of `conf/` is in them.

python scripts/docs_reference.py [--conf conf] [--out DIR]   writes the pages to DIR (to read them without mkdocs)
"""

from __future__ import annotations

import argparse
import json
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[1]
GROUPS = ("bench", "method", "model", "runner", "experiment", "hydra/launcher")
"""The config groups with one page each, in the site's order; `method_bench` has a page of its own."""
PAGE = "reference/config/{}.md"
HYDRA_KEYS = {"_target_", "_partial_", "_convert_", "_recursive_"}
SUPPLIED = {"Model", "Model | None"}
"""Annotations of the constructor arguments the runner supplies (the episode's model), never set in a config."""


@dataclass(frozen=True)
class Param:
    """One constructor argument (or one field of a config record): its default and its docstring."""

    name: str
    default: str
    doc: str


def read(path: Path) -> dict[str, Any]:
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    if not isinstance(data, dict):
        raise TypeError(f"{path}: expected a mapping at the top, got {type(data).__name__}")
    return data


def header(path: Path) -> str:
    """The comment lines that open a config file (its own description), without the `@package` line."""
    lines = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.startswith("#"):
            break
        if "@package" not in line:
            lines.append(line.lstrip("# ").rstrip())
    return " ".join(lines)


def flat(node: Any, prefix: str = "") -> list[tuple[str, Any]]:
    """Every key of a config node as a dotted path with its value (a nested mapping is walked into)."""
    if not isinstance(node, dict) or not node:
        return [(prefix, node)] if prefix else []
    rows: list[tuple[str, Any]] = []
    for key, value in node.items():
        if key == "defaults" and not prefix:
            continue
        rows += flat(value, f"{prefix}.{key}" if prefix else str(key))
    return rows


@cache
def api(repo: Path) -> Any:
    import logging

    import griffe

    logging.getLogger("griffe").setLevel(logging.ERROR)  # docstring style notes are not the reader's business
    loader = griffe.GriffeLoader(search_paths=[str(repo)], extensions=griffe.load_extensions("dataclasses"))
    for package in ("pos_bench", "baselines"):
        loader.load(package)
    loader.resolve_aliases(implicit=False, external=False)
    return loader


def find(repo: Path, path: str) -> Any:
    """The griffe object at `path` (a class or a module), aliases followed; None when the source lacks it."""
    try:
        obj = api(repo).modules_collection[path]
    except KeyError:
        return None
    return obj.final_target if obj.is_alias else obj


def documented(obj: Any) -> dict[str, str]:
    """Argument name → description from the `Args:` sections of a class's and its `__init__`'s docstrings."""
    out: dict[str, str] = {}
    for holder in (obj, obj.all_members.get("__init__")):
        if holder is None or holder.docstring is None:
            continue
        for section in holder.docstring.parse("google"):
            if section.kind.value == "parameters":
                out.update({item.name: one_line(item.description) for item in section.value})
    return out


def one_line(text: str | None) -> str:
    return " ".join((text or "").split())


def params(repo: Path, target: str) -> list[Param]:
    """The constructor's arguments of `target` (inherited `__init__` included), minus those the runner supplies."""
    cls = find(repo, target)
    if cls is None or not cls.is_class:
        return []
    init = cls.all_members.get("__init__")
    if init is None:
        return []
    docs = documented(cls)
    fields = {name: m for name, m in cls.all_members.items() if m.is_attribute}
    rows = []
    for p in init.parameters:
        if p.kind.value == "variadic keyword":  # `**settings` checked by the class's own config record
            record = dataclass_at(repo, f"{cls.module.path}.{cls.name}Config")
            rows += params(repo, record) if record else []
        if p.name == "self" or str(p.annotation) in SUPPLIED or p.kind.value.startswith("variadic"):
            continue
        field_doc = fields[p.name].docstring.value if p.name in fields and fields[p.name].docstring else ""
        rows.append(
            Param(
                p.name, "—" if p.default is None else str(p.default), one_line(docs.get(p.name) or field_doc)
            )
        )
    return rows


def record_of(repo: Path, target: str, name: str) -> str | None:
    """The config record a mapping argument `name` is validated by: its annotation when that is a class, else
    `<Name>Config` in the target's module (PoS's `sentinel` → `SentinelConfig`)."""
    cls = find(repo, target)
    if cls is None:
        return None
    init = cls.all_members.get("__init__")
    annotation = next((p.annotation for p in init.parameters if p.name == name), None) if init else None
    candidates = [
        getattr(annotation, "canonical_path", None),
        f"{cls.module.path}.{''.join(w.title() for w in name.split('_'))}Config",
    ]
    return next((found for path in candidates if path and (found := dataclass_at(repo, path))), None)


def dataclass_at(repo: Path, path: str) -> str | None:
    found = find(repo, path)
    is_record = (
        found is not None and found.is_class and any("dataclass" in str(d.value) for d in found.decorators)
    )
    return found.path if is_record else None


def code(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return "`" + text.replace("|", "\\|").replace("`", "'") + "`"


def cell(text: str) -> str:
    return text.replace("|", "\\|")


def table(rows: list[tuple[str, str, str, str]]) -> str:
    lines = ["| key | value here | constructor default | what it is |", "| --- | --- | --- | --- |"]
    lines += [f"| `{k}` | {v} | {d} | {cell(w)} |" for k, v, d, w in rows]
    return "\n".join(lines)


def node_rows(repo: Path, target: str | None, node: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    """One row per key: the constructor's arguments (expanded through their config records), then every other
    key the node sets, nested ones as dotted paths, with the value it sets and the constructor's default."""
    values = dict(flat(node))
    rows, seen = [], set()
    for p in params(repo, target) if target else []:
        record = record_of(repo, target, p.name)
        for sub in params(repo, record) if record else [p]:
            key = f"{p.name}.{sub.name}" if record else p.name
            here = node[key] if key in node else values.get(key, "—")
            default = "required" if sub.default == "—" else f"`{sub.default}`"
            rows.append((key, "—" if here == "—" else code(here), default, sub.doc))
            seen.add(key)
    for key, value in values.items():
        if key not in seen:
            what = "a Hydra key" if key.split(".")[-1] in HYDRA_KEYS else ""
            rows.append(
                (key, code(value), "—", what or (f"inside `{key.split('.')[0]}`" if "." in key else ""))
            )
    return rows


def lineage(folder: Path, name: str) -> tuple[dict[str, Any], list[str]]:
    """The node a group member composes to from its own group (its `defaults` chain merged), and the chain."""
    data = read(folder / f"{name}.yaml")
    chain: list[str] = []
    merged: dict[str, Any] = {}
    for parent in data.get("defaults") or []:
        if isinstance(parent, str) and parent != "_self_" and (folder / f"{parent}.yaml").exists():
            node, above = lineage(folder, parent)
            merged, chain = merge(merged, node), chain + above + [parent]
    return merge(merged, data), chain


def merge(base: dict[str, Any], top: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in top.items():
        out[key] = (
            merge(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
        )
    return out


def member(repo: Path, conf: Path, group: str, name: str) -> str:
    path = conf / group / f"{name}.yaml"
    node, chain = lineage(conf / group, name)
    node = {k: v for k, v in node.items() if k != "defaults"}
    own = node.get(group) if "@package _global_" in path.read_text(encoding="utf-8") else None
    target = (own or node).get("_target_") if isinstance(own or node, dict) else None
    lines = [
        f"## `{name}`",
        "",
        f"`{path.relative_to(conf.parent)}` · `{group}={name}`" + (f" · target `{target}`" if target else ""),
    ]
    if chain:
        lines.append(" · extends " + ", ".join(f"[`{p}`](#{p})" for p in chain))
    if header(path):
        lines += ["", header(path)]
    if group in ("experiment", "hydra/launcher"):
        lines += ["", "```yaml", path.read_text(encoding="utf-8").strip(), "```"]
    lines += [
        "",
        table(
            node_rows(repo, target, own if isinstance(own, dict) else node)
            + (
                [(k, code(v), "—", "a global key") for k, v in flat(node) if not k.startswith(group)]
                if isinstance(own, dict)
                else []
            )
        ),
    ]
    return "\n".join(lines)


def group_page(repo: Path, conf: Path, group: str) -> str:
    names = sorted(p.stem for p in (conf / group).glob("*.yaml"))
    intro = [
        f"# `{group}`",
        "",
        (
            f"Generated at build time from `conf/{group}/` and the constructors' signatures and docstrings "
            f"(`scripts/docs_reference.py`). Choose a member with `{group}={names[0]}`; set any key below with "
            f"`{group.split('/')[0]}.<key>=<value>` on the command line. *value here* is what the config sets "
            "(— : the constructor's default applies)."
        ),
        "",
        "Members: " + ", ".join(f"[`{n}`](#{n})" for n in names),
    ]
    return "\n\n".join(["\n".join(intro)] + [member(repo, conf, group, n) for n in names]) + "\n"


def method_bench_page(repo: Path, conf: Path) -> str:
    parts = [
        (
            "# `method_bench`\n\nGenerated from `conf/method_bench/<method>/<bench>.yaml`: the settings a method "
            "gets on a benchmark, merged into `method` by the bench choice (see "
            "[Per-benchmark method settings](../configuration.md#per-benchmark-method-settings))."
        )
    ]
    for folder in sorted(p for p in (conf / "method_bench").iterdir() if p.is_dir()):
        parts.append(f"## `{folder.name}`")
        target = (
            lineage(conf / "method", folder.name)[0].get("_target_")
            if (conf / "method" / f"{folder.name}.yaml").exists()
            else None
        )
        for path in sorted(folder.glob("*.yaml")):
            rows = [r for r in node_rows(repo, target, read(path)) if r[1] != "—"]
            parts.append(
                f"### `{folder.name}` on `{path.stem}`\n\n`{path.relative_to(conf.parent)}`"
                + (f" · {header(path)}" if header(path) else "")
                + "\n\n"
                + table(rows)
            )
    return "\n\n".join(parts) + "\n"


def top_page(repo: Path, conf: Path) -> str:
    """`conf/config.yaml`'s own keys, each config record expanded (preflight's `RECORDS` names them)."""
    data = read(conf / "config.yaml")
    records = find(repo, "pos_bench.runner.preflight.RECORDS").value
    by_key = {str(k).strip("'\""): v.canonical_path for k, v in zip(records.keys, records.values)}
    parts = [
        "# Top-level keys\n\nGenerated from `conf/config.yaml` and the records that validate its plain "
        "nodes (`pos_bench.runner.preflight.RECORDS`). The groups have a page each.\n\n"
        "```yaml\n" + (conf / "config.yaml").read_text(encoding="utf-8").strip() + "\n```"
    ]
    for key, value in data.items():
        if key in ("defaults", "hydra"):
            continue
        rows = (
            node_rows(repo, by_key.get(key), value)
            if isinstance(value, dict)
            else [(key, code(value), "—", "")]
        )
        if isinstance(value, dict):
            rows = [(f"{key}.{k}", v, d, w) for k, v, d, w in rows]
        note = f" · validated by `{by_key[key]}`" if key in by_key else ""
        parts.append(f"## `{key}`\n\n`{key}`{note}\n\n" + table(rows or [(key, code(value), "—", "")]))
    return "\n\n".join(parts) + "\n"


def entry_points_page(repo: Path) -> str:
    """Every `python -m` entry point of the package and every script, with its own module docstring."""
    modules = sorted(
        {
            p
            for p in (repo / "pos_bench").rglob("*.py")
            if p.name == "__main__.py" or '__name__ == "__main__"' in p.read_text(encoding="utf-8")
        }
    )
    parts = [
        (
            "# Entry points\n\nGenerated from the modules' own docstrings (`scripts/docs_reference.py`). Run "
            "each with `uv run --frozen --all-extras python -m <module>` or `uv run python scripts/<name>.py`."
        )
    ]
    for path in modules + sorted((repo / "scripts").glob("*.py")):
        rel = path.relative_to(repo)
        dotted = ".".join(rel.with_suffix("").parts).removesuffix(".__main__")
        obj = find(repo, dotted) if rel.parts[0] == "pos_bench" else None
        doc = obj.docstring.value if obj is not None and obj.docstring else script_doc(path)
        title = f"python -m {dotted}" if rel.parts[0] == "pos_bench" else f"python {rel}"
        parts.append(f"## `{title}`\n\n`{rel}`\n\n```text\n{doc.strip() or '(no docstring)'}\n```")
    return "\n\n".join(parts) + "\n"


def script_doc(path: Path) -> str:
    match = re.match(
        r'\s*(?:#[^\n]*\n)*\s*(?:"""|\'\'\')(.*?)(?:"""|\'\'\')', path.read_text(encoding="utf-8"), re.DOTALL
    )
    return match.group(1) if match else ""


def render(conf: Path = REPO / "conf", repo: Path = REPO) -> dict[str, str]:
    """Page path inside the docs → markdown, for every generated page."""
    pages = {
        PAGE.format("index"): top_page(repo, conf),
        PAGE.format("method_bench"): method_bench_page(repo, conf),
        "reference/entry-points.md": entry_points_page(repo),
    }
    for group in GROUPS:
        if (conf / group).is_dir():
            pages[PAGE.format(group.replace("/", "-"))] = group_page(repo, conf, group)
    return pages


def on_files(files: Any, config: Any) -> Any:
    """mkdocs hook: add the generated pages to the site before the navigation is built."""
    from mkdocs.structure.files import File

    for uri, content in render().items():
        files.append(File.generated(config, uri, content=content))
    return files


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--conf", type=Path, default=REPO / "conf")
    parser.add_argument("--out", type=Path, default=REPO / "site-reference")
    args = parser.parse_args()
    for uri, content in render(args.conf).items():
        out = args.out / uri
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(content, encoding="utf-8")
        print(out)


if __name__ == "__main__":
    main()
