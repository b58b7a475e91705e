"""mkdocs hook: pages that other work adds to docs/ get their place in the navigation when they exist, and the
build stays strict when they do not (a nav entry naming a missing file fails `mkdocs build --strict`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

OPTIONAL = (
    ("How-to guides", "Browse runs in inspect view", "inspect.md"),
    ("How-to guides", "Full-size runs", "fullsize.md"),
)
"""(nav section, title, page inside docs/) for each page that may or may not be there yet."""


def on_config(config: Any) -> Any:
    docs = Path(config["docs_dir"])
    for section, title, page in OPTIONAL:
        if not (docs / page).exists():
            continue
        entries = next(item[section] for item in config["nav"] if isinstance(item, dict) and section in item)
        if not any(page in item.values() for item in entries if isinstance(item, dict)):
            entries.append({title: page})
    return config
