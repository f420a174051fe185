"""The core's folders are the pipeline's steps, and a module imports only downward.

The import graph is built from the source with ``ast``: every ``import`` and ``from ... import``,
at module level, under ``if TYPE_CHECKING:`` and inside functions alike (a late import is still a
dependency). Two things are asserted: no module imports itself back through others (no cycle),
and each layer imports only the layers ``ALLOWED`` lists below it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# Each layer, lowest first: the layers it may import (its own modules are always allowed).
# ``rule``, ``fixes``, ``findings``... are single modules at the top of devlint/.
ALLOWED: dict[str, set[str]] = {
    "findings": set(),
    "signals": set(),
    "torchfacts": set(),
    "settings": {"torchfacts"},
    "project": set(),
    "fixes": {"findings"},
    "linediff": set(),
    "gate": {"torchfacts", "signals"},
    "analysis": {"torchfacts", "settings", "project"},
    "rule": {"analysis", "fixes", "findings", "gate", "settings", "torchfacts"},
    "rulekit": {"rule", "analysis", "fixes", "findings", "settings", "torchfacts"},
    "engine": {"rule", "rulekit", "analysis", "gate", "fixes", "findings", "settings", "torchfacts", "signals", "project"},
    "rules": {"rule", "rulekit", "analysis", "fixes", "findings", "settings", "torchfacts"},
    "registry": {"rules", "rule", "gate", "torchfacts"},
    "docs": {"registry", "rule"},
    "formats": {"docs", "registry", "rule", "findings", "__init__"},
    "run": {
        "formats", "docs", "registry", "rules", "engine", "rule", "gate", "fixes", "findings", "settings", "torchfacts",
        "signals", "__init__", "project", "linediff",
    },
    "verify.child": set(),
    "verify": {"verify.child", "run", "registry", "engine", "findings", "settings", "torchfacts", "linediff"},
    "server": {"run", "docs", "registry", "engine", "rule", "gate", "fixes", "findings", "settings", "project", "__init__", "linediff"},
    "cli": {"server", "verify", "run", "docs", "torchfacts", "__init__"},
    "__main__": {"cli"},
    "__init__": set(),
}


def _modules() -> dict[str, Path]:
    """Dotted name -> file, for devlint/ and rules/ (installed as devlint.rules)."""
    found = {}
    for folder, package in ((ROOT / "devlint", "devlint"), (ROOT / "rules", "devlint.rules")):
        for path in folder.rglob("*.py"):
            parts = list(path.relative_to(folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join([package, *parts])] = path
    return found


MODULES = _modules()


def _resolve(name: str) -> str | None:
    """The module of ours that importing ``name`` loads (the longest known prefix)."""
    while name:
        if name in MODULES:
            return name
        name = name.rpartition(".")[0]
    return None


def _imports(module: str, path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    targets: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            # ``from devlint import rules`` imports a module; ``from x import name`` a name of x.
            names = [f"{base}.{alias.name}" if _resolve(f"{base}.{alias.name}") == f"{base}.{alias.name}" else base for alias in node.names]
        else:
            continue
        for name in names:
            target = _resolve(name)
            if target is not None and target != module:
                targets.add(target)
    return targets


GRAPH = {module: _imports(module, path) for module, path in MODULES.items()}


def layer(module: str) -> str:
    """``devlint.engine.lint`` -> ``engine``; ``devlint.verify.child.harness`` -> ``verify.child``."""
    if module.startswith("devlint.rules"):
        return "rules"
    parts = module.split(".")[1:] or ["__init__"]
    if parts[:2] == ["verify", "child"]:
        return "verify.child"
    return parts[0]


def test_every_module_has_a_layer() -> None:
    assert {layer(module) for module in MODULES} <= set(ALLOWED)


def test_no_import_cycles() -> None:
    state: dict[str, int] = {}
    cycles: list[list[str]] = []

    def visit(module: str, stack: list[str]) -> None:
        state[module] = 1
        stack.append(module)
        for target in sorted(GRAPH[module]):
            if state.get(target) == 1:
                cycles.append(stack[stack.index(target):] + [target])
            elif target not in state:
                visit(target, stack)
        stack.pop()
        state[module] = 2

    for module in sorted(GRAPH):
        if module not in state:
            visit(module, [])
    assert cycles == []


def test_each_layer_imports_only_the_layers_below_it() -> None:
    upward = sorted(
        f"{module} -> {target}"
        for module, targets in GRAPH.items()
        for target in targets
        if layer(target) != layer(module) and layer(target) not in ALLOWED[layer(module)]
    )
    assert upward == []


def test_the_layer_table_has_no_cycle_either() -> None:
    """The table itself must be a stack: no layer may be allowed to import one that may import it."""
    def reach(start: str) -> set[str]:
        seen: set[str] = set()
        todo = [start]
        while todo:
            for below in ALLOWED[todo.pop()]:
                if below not in seen:
                    seen.add(below)
                    todo.append(below)
        return seen

    assert [name for name in ALLOWED if name in reach(name)] == []


def test_at_most_a_dozen_modules_at_the_top() -> None:
    top = sorted(path.name for path in (ROOT / "devlint").glob("*.py"))
    assert len(top) <= 12, top


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("from devlint.engine.lint import lint_text", {"devlint.engine.lint"}),
        ("if TYPE_CHECKING:\n    from devlint.rule import Rule", {"devlint.rule"}),
        ("def f():\n    import devlint.run.cache", {"devlint.run.cache"}),
        ("from devlint import rules", {"devlint.rules"}),
        ("from .. import fixes", {"devlint.fixes"}),
    ],
)
def test_the_graph_sees_every_kind_of_import(tmp_path: Path, source: str, expected: set[str]) -> None:
    path = tmp_path / "probe.py"
    path.write_text(source)
    assert _imports("devlint.run.probe", path) == expected


def test_a_cycle_would_be_found() -> None:
    """The cycle search itself can fail: a graph with a loop is reported."""
    saved = dict(GRAPH)
    try:
        GRAPH["devlint.findings"] = {"devlint.fixes"}
        with pytest.raises(AssertionError):
            test_no_import_cycles()
    finally:
        GRAPH.clear()
        GRAPH.update(saved)
