"""Import direction (STYLE §2), read from every import statement (lazy ones inside functions included):
no cycle between modules; plug-ins import only the root helpers, never the runner, analysis or report;
pos_bench never imports baselines; the package root keeps at most 15 modules; importing the package has no
side effects."""

import ast
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO

ROOT_HELPERS = {
    "pos_bench.types",
    "pos_bench.protocols",
    "pos_bench.events",
    "pos_bench.prompting",
    "pos_bench.parse",
    "pos_bench.structured",
    "pos_bench.weights",
    "pos_bench.redact",
    "pos_bench.extras",
    "pos_bench.build",
    "pos_bench.truth",
    "pos_bench.models.inspect_bridge",
    "pos_bench.fullsize.processes",
    "pos_bench.standin.wire",
    "pos_bench.standin.replies",
    "pos_bench.standin.instance",
    "pos_bench.standin.pattern",
}
"""What a plug-in may import from pos_bench outside its own folder: the root helpers, the one adapter between
pos_bench's models and inspect_ai's (methods built on inspect_ai's own code, issue 42, need it), and two leaves
of the full-size check that import nothing of the framework: the process sampler (LOCA records its servers'
processes and memory with it) and the stand-in's chat template (the scripted model counts tokens as the stand-in
does). The package root is full."""
PLUGIN_DIRS = ["pos_bench/benchmarks", "pos_bench/models", "pos_bench/pos", "baselines"]
NEVER_FROM_PLUGINS = ("pos_bench.runner", "pos_bench.analysis", "pos_bench.report")
MAX_ROOT_MODULES = 15


def module_name(path: Path, root: Path = REPO) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def source_modules(root: Path = REPO) -> dict[str, Path]:
    return {
        module_name(p, root): p
        for folder in ("pos_bench", "baselines")
        for p in (root / folder).rglob("*.py")
    }


def imports_of(path: Path, name: str, known: set[str]) -> set[str]:
    """The modules `path` (module `name`) imports: `from a import b` is module `a.b` when that is a module,
    else `a`; relative imports are resolved against the module's package."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, *([base] if base else [])])
            for alias in node.names:
                found.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base)
    return found


def import_graph(root: Path = REPO, *, outside: bool = False) -> dict[str, set[str]]:
    """Module → the modules it imports, among pos_bench and baselines (plus every other import if `outside`)."""
    modules = source_modules(root)
    known = set(modules)
    return {
        name: {m for m in imports_of(path, name, known) if (outside or m in known) and m != name}
        for name, path in modules.items()
    }


def cycles(graph: dict[str, set[str]]) -> list[str]:
    state: dict[str, int] = {}
    found = []

    def visit(name: str, trail: list[str]) -> None:
        state[name] = 1
        for target in sorted(graph[name]):
            if state.get(target) == 1:
                found.append(" → ".join([*trail[trail.index(target) :], target]))
            elif target not in state:
                visit(target, [*trail, target])
        state[name] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name, [name])
    return found


def test_no_import_cycle_between_modules():
    """Every import counts, including those inside functions and under TYPE_CHECKING."""
    assert cycles(import_graph()) == []


def test_the_cycle_finder_sees_a_lazy_import_through_the_package(tmp_path):
    (tmp_path / "pos_bench" / "pool").mkdir(parents=True)
    (tmp_path / "baselines").mkdir()
    (tmp_path / "pos_bench" / "__init__.py").write_text("")
    (tmp_path / "pos_bench" / "pool" / "__init__.py").write_text("def go():\n    from . import ray\n")
    (tmp_path / "pos_bench" / "pool" / "ray.py").write_text("from pos_bench.pool import go\n")
    assert cycles(import_graph(tmp_path)) == ["pos_bench.pool → pos_bench.pool.ray → pos_bench.pool"]


def test_plugins_import_only_the_root_helpers():
    graph = import_graph()
    offenders = []
    for folder in PLUGIN_DIRS:
        own = folder.replace("/", ".")
        for name, targets in graph.items():
            if name != own and not name.startswith(own + "."):
                continue
            for target in sorted(targets):
                outside = target.startswith("pos_bench") and not target.startswith(own)
                if target.startswith(NEVER_FROM_PLUGINS) or (outside and target not in ROOT_HELPERS):
                    offenders.append(f"{name} imports {target}")
    assert offenders == []


def test_pos_bench_never_imports_baselines():
    graph = import_graph(outside=True)
    offenders = [
        f"{name} imports {target}"
        for name, targets in graph.items()
        if name.startswith("pos_bench")
        for target in targets
        if target.split(".")[0] == "baselines"
    ]
    assert offenders == []


def test_the_package_root_keeps_at_most_15_modules():
    root = sorted(p.name for p in (REPO / "pos_bench").glob("*.py"))
    assert len(root) <= MAX_ROOT_MODULES, root


def test_importing_the_package_prints_and_loads_nothing_heavy():
    code = (
        "import sys, pos_bench, pos_bench.runner; "
        "heavy = [m for m in ('alfworld', 'textworld', 'xllamacpp', 'openai', 'anthropic') if m in sys.modules]; "
        "print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]" and out.stderr == ""
