"""mini-LOCA family `inventory_alert`: find the products of one warehouse whose stock is below their reorder
threshold and write them to an alert CSV (SPEC-BENCH §3.7 b).

Scale-independent core: 3–6 low-stock products in the target warehouse, plus near misses (stock exactly at
the threshold there, low stock in other warehouses). Distractors are products that are either well stocked
in the target warehouse or anywhere in the other warehouses, so they never change the answer.
"""

from __future__ import annotations

import csv
import io
import random
from collections.abc import Mapping
from typing import Any

from pos_bench.benchmarks.loca.mini.generation import compact, fill, measure, nominal_tokens, uid
from pos_bench.benchmarks.loca.mini.tools import PAGING, Tool, ToolError
from pos_bench.benchmarks.loca.mini.workspace import (
    CLAIM_DONE,
    FS_TOOLS,
    Case,
    Family,
    Verdict,
    Workspace,
    page,
    write_text,
)

NAME = "inventory_alert"
WAREHOUSES = ("Rotterdam", "Lyon", "Gdansk", "Porto")
OUTPUT = "outputs/low_stock_alert.csv"
HEADER = ("sku", "name", "stock", "reorder_threshold", "shortfall")
ADJECTIVES = ("Compact", "Heavy-duty", "Stainless", "Folding", "Insulated", "Cordless", "Modular", "Recycled")
NOUNS = (
    "drill",
    "kettle",
    "shelf unit",
    "lamp",
    "toolbox",
    "ladder",
    "fan",
    "storage bin",
    "workbench",
    "hose",
)
CATEGORIES = ("tools", "kitchen", "storage", "lighting", "garden")
SUPPLIERS = ("Acme Parts", "Baltic Trade", "Iberia Goods", "Nordic Supply", "Vistula Wholesale")


def _product(rng: random.Random, sku: str, warehouse: str, stock: int, threshold: int) -> dict[str, Any]:
    return {
        "sku": sku,
        "name": f"{rng.choice(ADJECTIVES)} {rng.choice(NOUNS)} {rng.randint(10, 99)}",
        "category": rng.choice(CATEGORIES),
        "warehouse": warehouse,
        "stock": stock,
        "reorder_threshold": threshold,
        "unit_cost": round(rng.uniform(3, 250), 2),
        "supplier": rng.choice(SUPPLIERS),
    }


def _sku(*parts: object) -> str:
    return uid("SKU", *parts).upper()


def _noise(seed: int, target: str, i: int) -> tuple[str, dict[str, Any]]:
    rng = random.Random(f"{NAME}/{seed}/noise/{i}")
    threshold = rng.randint(5, 60)
    if rng.random() < 0.5:
        return "product", _product(
            rng, _sku(seed, "noise", i), target, threshold + rng.randint(0, 200), threshold
        )
    other = rng.choice([w for w in WAREHOUSES if w != target])
    return "product", _product(rng, _sku(seed, "noise", i), other, rng.randint(0, 250), threshold)


def generate(seed: int, scale: str) -> Case:
    rng = random.Random(f"{NAME}/{seed}")
    target = rng.choice(WAREHOUSES)
    others = [w for w in WAREHOUSES if w != target]
    products, expected = [], []
    for j in range(rng.randint(3, 6)):
        threshold = rng.randint(10, 60)
        item = _product(rng, _sku(seed, "core", j), target, rng.randint(0, threshold - 1), threshold)
        products.append(item)
        expected.append([item["sku"], item["name"], item["stock"], threshold, threshold - item["stock"]])
    for j in range(2):
        threshold = rng.randint(10, 60)
        products.append(_product(rng, _sku(seed, "edge", j), target, threshold, threshold))
        products.append(
            _product(rng, _sku(seed, "other", j), rng.choice(others), rng.randint(0, 5), threshold)
        )
    db = {"inventory": {"warehouses": list(WAREHOUSES), "products": products}}
    for _, record in fill(nominal_tokens(scale), measure(db), lambda i: _noise(seed, target, i)):
        products.append(record)
    products.sort(key=lambda p: p["sku"])
    instruction = (
        f"Our {target} warehouse needs a restocking alert. Find every product stored in the {target} warehouse "
        "whose stock is strictly below its reorder threshold (stock equal to the threshold is fine; other "
        f"warehouses do not matter). Write them to {OUTPUT} in the workspace as a CSV file with the header row "
        f"{','.join(HEADER)} and one row per product, where shortfall = reorder_threshold - stock (any row order). "
        "The file alert_template.csv in the workspace shows the header. Call claim_done when finished."
    )
    files = {"alert_template.csv": ",".join(HEADER) + "\n"}
    return Case(NAME, seed, scale, instruction, db, files, {"rows": expected}, measure(db))


def _list_products(ws: Workspace, args: Mapping[str, Any]) -> str:
    return page(ws.load("inventory")["products"], args.get("offset", 0), args.get("limit", 50))


def _search_products(ws: Workspace, args: Mapping[str, Any]) -> str:
    query = args["query"].strip().casefold()
    if not query:
        raise ToolError("query must be a non-empty string")
    fields = ("sku", "name", "category", "supplier")
    hits = [p for p in ws.load("inventory")["products"] if any(query in str(p[f]).casefold() for f in fields)]
    return page(hits, args.get("offset", 0), args.get("limit", 50))


def _get_product(ws: Workspace, args: Mapping[str, Any]) -> str:
    for product in ws.load("inventory")["products"]:
        if product["sku"] == args["sku"].strip().upper():
            return compact(product)
    raise ToolError(f"no product with sku {args['sku']!r}")


def _list_warehouses(ws: Workspace, args: Mapping[str, Any]) -> str:
    return compact({"warehouses": ws.load("inventory")["warehouses"]})


def _write_csv(ws: Workspace, args: Mapping[str, Any]) -> str:
    rows = args["rows"]
    if not all(isinstance(r, list) for r in rows) or not all(isinstance(h, str) for h in args["header"]):
        raise ToolError("header must be a list of strings and rows a list of lists of cell values")
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(args["header"])
    writer.writerows(rows)
    path = ws.resolve(args["path"])
    write_text(path, buffer.getvalue())
    return f"Wrote {len(rows)} rows to {ws.virtual(path)}."


def _read_csv(ws: Workspace, args: Mapping[str, Any]) -> str:
    path = ws.resolve(args["path"])
    if not path.is_file():
        raise ToolError(f"no file {args['path']!r}")
    rows = list(csv.reader(io.StringIO(path.read_text(encoding="utf-8"))))
    return compact({"path": ws.virtual(path), "rows": rows[:200], "total_rows": len(rows)})


def _cell(value: str) -> str | int:
    text = value.strip()
    try:
        number = float(text)
    except ValueError:
        return text
    return int(number) if number == int(number) else text


def check(ws: Workspace) -> Verdict:
    path = ws.resolve(OUTPUT)
    if not path.is_file():
        return Verdict(False, f"{OUTPUT} was not written")
    rows = [r for r in csv.reader(io.StringIO(path.read_text(encoding="utf-8"))) if any(c.strip() for c in r)]
    if not rows or [c.strip().casefold() for c in rows[0]] != list(HEADER):
        return Verdict(False, f"the header must be {','.join(HEADER)}")
    got = sorted([_cell(c) for c in r] for r in rows[1:])
    wanted = sorted([_cell(str(c)) for c in r] for r in ws.case.truth["rows"])
    if got != wanted:
        return Verdict(False, f"{len(got)} rows written; they differ from the {len(wanted)} expected")
    return Verdict(True, f"all {len(wanted)} low-stock products listed correctly")


_PATH = {"type": "string", "description": "A path under /workspace (absolute, or relative to it)."}
TOOLS = (
    Tool(
        "inventory_list_products",
        "[inventory] List all products (every warehouse), sorted by sku, one page at a time.",
        dict(PAGING),
        (),
        _list_products,
    ),
    Tool(
        "inventory_search_products",
        "[inventory] Products whose sku, name, category or supplier contains the text.",
        {"query": {"type": "string", "description": "Text to look for (case-insensitive)."}, **PAGING},
        ("query",),
        _search_products,
    ),
    Tool(
        "inventory_get_product",
        "[inventory] One product by sku.",
        {"sku": {"type": "string", "description": "The product sku."}},
        ("sku",),
        _get_product,
    ),
    Tool("inventory_list_warehouses", "[inventory] The names of the warehouses.", {}, (), _list_warehouses),
    Tool(
        "sheets_write_csv",
        "[sheets] Write a table as a CSV file in the agent workspace (overwrites).",
        {
            "path": _PATH,
            "header": {"type": "array", "items": {"type": "string"}, "description": "Column names."},
            "rows": {
                "type": "array",
                "items": {"type": "array"},
                "description": "One list of cell values per row.",
            },
        },
        ("path", "header", "rows"),
        _write_csv,
    ),
    Tool(
        "sheets_read_csv",
        "[sheets] Read a CSV file from the agent workspace as rows (first 200).",
        {"path": _PATH},
        ("path",),
        _read_csv,
    ),
)

FAMILY = Family(NAME, generate, (*TOOLS, *FS_TOOLS, CLAIM_DONE), check)
