"""Import direction (STYLE §2): plug-ins never import the loop, runner or entry point; pos_bench never
imports baselines; importing the package has no side effects."""

import ast
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO

CORE_ALLOWED = {
    "pos_bench.types",
    "pos_bench.protocols",
    "pos_bench.prompting",
    "pos_bench.parse",
    "pos_bench.structured",
    "pos_bench.weights",
    "pos_bench.redact",
    "pos_bench.extras",
    "pos_bench.build",
    "pos_bench.truth",
}
PLUGIN_DIRS = ["pos_bench/benchmarks", "pos_bench/models", "pos_bench/pos", "baselines"]


def imports_of(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def test_plugins_import_only_the_lower_layers():
    offenders = []
    for folder in PLUGIN_DIRS:
        own = folder.replace("/", ".")
        for path in (REPO / folder).rglob("*.py"):
            for name in imports_of(path):
                if name.startswith("pos_bench") and not name.startswith(own) and name not in CORE_ALLOWED:
                    offenders.append(f"{path.relative_to(REPO)} imports {name}")
    assert offenders == []


def test_pos_bench_never_imports_baselines():
    offenders = [
        str(p)
        for p in (REPO / "pos_bench").rglob("*.py")
        if any(n.startswith("baselines") for n in imports_of(p))
    ]
    assert offenders == []


def test_importing_the_package_prints_and_loads_nothing_heavy():
    code = (
        "import sys, pos_bench, pos_bench.runner; "
        "heavy = [m for m in ('alfworld', 'textworld', 'xllamacpp', 'openai', 'anthropic') if m in sys.modules]; "
        "print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]" and out.stderr == ""


def module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def test_no_import_circle_anywhere():
    """Every import counts, including those under TYPE_CHECKING: a circle there still couples the modules."""
    paths = [p for folder in ("pos_bench", "baselines") for p in (REPO / folder).rglob("*.py")]
    modules = {module_name(p): p for p in paths}
    graph = {
        name: {m for m in imports_of(path) if m in modules and m != name} for name, path in modules.items()
    }
    state: dict[str, int] = {}
    circles = []

    def visit(name: str, trail: list[str]) -> None:
        state[name] = 1
        for target in sorted(graph[name]):
            if state.get(target) == 1:
                circles.append(" → ".join([*trail[trail.index(target) :], target]))
            elif target not in state:
                visit(target, [*trail, target])
        state[name] = 2

    for name in sorted(modules):
        if name not in state:
            visit(name, [name])
    assert circles == []
