"""Optional extras (`pyproject.toml`): a check that names the extra to install when one is missing.

Heavy dependencies are imported only by the one module that needs them (STYLE §1.8); that module calls
`require` first, so a missing package is one sentence saying how to get it, not a traceback.
"""

from __future__ import annotations

import importlib.util


class MissingExtra(ImportError):
    """An optional dependency group is not installed."""


def install_hint(extra: str) -> str:
    return f"`uv sync --inexact --extra {extra}` (or `pip install 'pos_bench[{extra}]'`)"


def require(extra: str, *modules: str, what: str) -> None:
    """Raise `MissingExtra` if any of `modules` cannot be found. Finds them without importing them (some,
    like alfworld, change environment variables on import)."""
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        raise MissingExtra(
            f"{what} needs the `{extra}` extra ({', '.join(missing)} not installed): install it with "
            f"{install_hint(extra)}."
        )
