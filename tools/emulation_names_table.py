"""Writes devlint/verify/child/emulation/names_table.py: which of the torch names that emulated CUDA
patches or reads exist in which torch release.

The names come from the emulation package's own sources, read with `ast` (``collect_names``, which
tests/test_emulation_names.py uses too): every ``patches.set(owner, "name", ...)`` and
``replace(owner, "name", ...)`` (a loop variable over a literal tuple or over a module constant's
``.items()`` counts as each of its strings), and every private name reached from ``torch`` (an
attribute chain with a ``_name`` in it, ``from torch.x import _y``, ``getattr(torch.x, "_y", ...)``).
Whether each exists is asked of the torch that runs this script (imported, since most of them are
C functions with no Python source), and merged with the releases already in the table:

    ~/.cache/devlint-bench/torch-2.4.1/bin/python tools/emulation_names_table.py   # add torch 2.4
    .venv/bin/python tools/emulation_names_table.py --check    # exit 1 if the table is out of date

A name's first release is the oldest introspected release that has it, unless FIRST_SEEN below
(read from torch's sources and release notes) names an earlier release between two introspected
ones; its last release is recorded only for a name that the newest introspected release lacks.
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

sys.path.insert(0, str(Path(__file__).resolve().parent))
from torch_releases import differs, exists, load_generated  # noqa: E402 - one way to observe a release

ROOT = Path(__file__).resolve().parent.parent
EMULATION = ROOT / "devlint" / "verify" / "child" / "emulation"
OUTPUT = EMULATION / "names_table.py"
Release = tuple[int, int]

# Names whose first release lies between two introspected releases: read from torch's sources
# (torch/csrc/DeviceAccelerator.cpp binds each ``_accelerator_*`` function in the release that adds
# the ``torch.accelerator`` function calling it; devlint/torchfacts/api_versions.py and
# tools/device_api_table.py record those public functions' first releases). The exchange functions
# serve `torch.accelerator.device_index`, new in 2.8: torch 2.6 lacks them, 2.9 has them.
FIRST_SEEN: dict[str, Release] = {
    "torch._C._accelerator_getAccelerator": (2, 6),
    "torch._C._accelerator_getDeviceIndex": (2, 6),
    "torch._C._accelerator_setDeviceIndex": (2, 6),
    "torch._C._accelerator_exchangeDevice": (2, 8),
    "torch._C._accelerator_maybeExchangeDevice": (2, 8),
    "torch._C._accelerator_synchronizeDevice": (2, 6),
    "torch._C._accelerator_getStream": (2, 6),
    "torch._C._accelerator_setStream": (2, 6),
    "torch._C._accelerator_emptyCache": (2, 9),
    "torch._C._accelerator_getDeviceStats": (2, 9),
    "torch._C._accelerator_resetAccumulatedStats": (2, 9),
    "torch._C._accelerator_resetPeakStats": (2, 9),
    "torch._C._accelerator_getMemoryInfo": (2, 10),
}

def collect_names(package: Path = EMULATION) -> dict[str, bool]:
    """Every torch name the emulation package patches or reads, with whether it is optional (the
    code copes with its absence: ``optional=True`` or ``getattr`` with a default)."""
    trees = {
        path: ast.parse(path.read_text(encoding="utf-8"), str(path))
        for path in sorted(package.glob("*.py"))
        if path.name != OUTPUT.name
    }
    # Module constants by name, for a loop over one that a sibling module defines (LEGACY_NAMES).
    shared = {name: value for tree in trees.values() for name, value in _constants(tree).items()}
    found: dict[str, bool] = {}
    for path, tree in trees.items():
        for name, optional in _Collector(tree, path, shared).names():
            found[name] = found.get(name, True) and optional
    return found


def _constants(tree: ast.Module) -> dict[str, ast.expr]:
    return {
        target.id: node.value
        for node in tree.body
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None
        for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
        if isinstance(target, ast.Name)
    }


class _Collector:
    """One module's names. Aliases (``c = torch._C``, ``from torch.nn.parallel import comm``) are
    resolved by name across the module, unless the name is bound to anything else anywhere in it;
    loop variables by the loops around the call. A patch whose owner or name cannot be resolved is
    an error, so a new shape of code cannot slip past the table."""

    def __init__(self, tree: ast.Module, path: Path, shared: dict[str, ast.expr]) -> None:
        self.tree, self.path = tree, path
        self.constants = {**shared, **_constants(tree)}
        self.aliases: dict[str, str] = {}
        # A name bound to two things (or to something else than a torch object) is no alias.
        self.ambiguous: set[str] = set()
        for node in ast.walk(tree):
            self._learn(node)
        for name in self.ambiguous:
            self.aliases.pop(name, None)

    def _learn(self, node: ast.AST) -> None:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "torch":
                    self.aliases[alias.asname or "torch"] = alias.name if alias.asname else "torch"
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "torch":
            for alias in node.names:
                self.aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name, dotted = node.targets[0].id, self.dotted(node.value)
            if dotted is None or self.aliases.get(name, dotted) != dotted:
                self.ambiguous.add(name)
            else:
                self.aliases[name] = dotted

    def _loop(self, target: ast.expr, source: ast.expr) -> dict[str, list[str]]:
        """``for name in ("a", "b")`` and ``for key, name in CONSTANT.items()``: the strings."""
        if isinstance(source, ast.Name):
            source = self.constants.get(source.id, source)
        if isinstance(target, ast.Name) and isinstance(source, (ast.Tuple, ast.List, ast.Set)):
            return {target.id: [e.value for e in source.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]}
        call = source if isinstance(source, ast.Call) and isinstance(source.func, ast.Attribute) else None
        if call is None or call.func.attr != "items" or not isinstance(call.func.value, ast.Name):
            return {}
        table = self.constants.get(call.func.value.id)
        if not (isinstance(table, ast.Dict) and isinstance(target, ast.Tuple) and len(target.elts) == 2):
            return {}
        bound = {}
        for element, values in zip(target.elts, (table.keys, table.values)):
            strings = [v.value for v in values if isinstance(v, ast.Constant) and isinstance(v.value, str)]
            if isinstance(element, ast.Name) and len(strings) == len(values):
                bound[element.id] = strings
        return bound

    def dotted(self, node: ast.expr) -> str | None:
        """``torch.x.y`` for an expression that names it through torch or an alias, else None."""
        if isinstance(node, ast.Name):
            return self.aliases.get(node.id)
        if isinstance(node, ast.Attribute):
            owner = self.dotted(node.value)
            return None if owner is None else f"{owner}.{node.attr}"
        return None

    def names(self) -> Iterator[tuple[str, bool]]:
        return self._visit(self.tree, {}, frozenset(), None)

    def _visit(
        self, node: ast.AST, loops: dict[str, list[str]], forwarded: frozenset[str], parent: ast.AST | None
    ) -> Iterator[tuple[str, bool]]:
        """``loops``: the strings each enclosing loop's variable takes. ``forwarded``: the
        parameters of the enclosing functions; a helper that patches ``owner.name`` for its
        parameters (cuda_api's ``replace``) is counted at its callers."""
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            arguments = node.args.posonlyargs + node.args.args + node.args.kwonlyargs
            forwarded = forwarded | {a.arg for a in arguments}
        if isinstance(node, (ast.For, ast.comprehension)):
            loops = {**loops, **self._loop(node.target, node.iter)}
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            for generator in node.generators:
                loops = {**loops, **self._loop(generator.target, generator.iter)}
        if isinstance(node, ast.Call):
            yield from self._call(node, loops, forwarded)
        elif isinstance(node, ast.Attribute) and not isinstance(parent, ast.Attribute):
            dotted = self.dotted(node)
            if dotted is not None and _private(dotted):
                yield dotted, False
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "torch":
            for alias in node.names:
                if _private(f"{node.module}.{alias.name}"):
                    yield f"{node.module}.{alias.name}", False
        for child in ast.iter_child_nodes(node):
            yield from self._visit(child, loops, forwarded, node)

    def _call(self, node: ast.Call, loops: dict[str, list[str]], forwarded: frozenset[str]) -> Iterator[tuple[str, bool]]:
        func = node.func
        if isinstance(func, ast.Name) and func.id == "getattr" and len(node.args) >= 2:
            owner = self.dotted(node.args[0])
            for name in self._strings(node.args[1], loops) if owner is not None else ():
                yield f"{owner}.{name}", len(node.args) == 3
            return
        patching = isinstance(func, ast.Name) and func.id == "replace"
        patching = patching or (isinstance(func, ast.Attribute) and func.attr == "set" and _ends_with_patches(func.value))
        if not patching or len(node.args) < 2:
            return
        if isinstance(node.args[0], ast.Name) and node.args[0].id in forwarded:
            return
        owner = self.dotted(node.args[0])
        if owner is None:
            if _is_non_torch(node.args[0], self.aliases):
                return
            raise SyntaxError(f"{self.path}:{node.lineno}: cannot tell which torch object this patch replaces")
        optional = any(k.arg == "optional" and isinstance(k.value, ast.Constant) and k.value.value is True for k in node.keywords)
        strings = self._strings(node.args[1], loops)
        if not strings:
            raise SyntaxError(f"{self.path}:{node.lineno}: cannot tell which name this patch replaces")
        for name in strings:
            yield f"{owner}.{name}", optional

    def _strings(self, node: ast.expr, loops: dict[str, list[str]]) -> list[str]:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return [node.value]
        if isinstance(node, ast.Name):
            return loops.get(node.id, [])
        return []


def _ends_with_patches(node: ast.expr) -> bool:
    name = node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else ""
    return name.lstrip("_") == "patches"


def _is_non_torch(node: ast.expr, aliases: dict[str, str]) -> bool:
    """A patch of the standard library (``threading.Thread``): not torch's, not in the table."""
    root = node
    while isinstance(root, ast.Attribute):
        root = root.value
    return isinstance(root, ast.Name) and root.id not in aliases and root.id in sys.stdlib_module_names


def _private(dotted: str) -> bool:
    return any(part.startswith("_") and not (part.startswith("__") and part.endswith("__")) for part in dotted.split("."))


def observations(table: ModuleType | None) -> dict[Release, set[str]]:
    """The names each introspected release has, read back from the table (a name is present from
    its first release through its last, as render checks when it writes them)."""
    if table is None:
        return {}
    return {
        release: {
            name
            for name, first in table.FIRST.items()
            if first is not None and first <= release and release <= table.LAST.get(name, release)
        }
        for release in table.INTROSPECTED
    }


def render(seen: dict[Release, set[str]], names: list[str]) -> str:
    releases = sorted(seen)
    first: dict[str, Release | None] = {}
    last: dict[str, Release] = {}
    for name in names:
        having = [release for release in releases if name in seen[release]]
        if having and having != [r for r in releases if having[0] <= r <= having[-1]]:
            raise SystemExit(f"{name}: present, absent and present again across {releases}; the table cannot say so")
        lacking = [release for release in releases if having and release < having[0]]
        if name in FIRST_SEEN and lacking and FIRST_SEEN[name] <= lacking[-1]:
            raise SystemExit(f"{name}: FIRST_SEEN says {FIRST_SEEN[name]}, but torch {lacking[-1]} lacks it")
        first[name] = min(FIRST_SEEN.get(name, having[0]), having[0]) if having else None
        if having and having[-1] != releases[-1]:
            last[name] = having[-1]
    lines = [
        '"""Which torch names emulated CUDA patches or reads exist in which torch release; generated by',
        "tools/emulation_names_table.py from the releases in INTROSPECTED (each imported); do not edit by hand.",
        "",
        "FIRST: each name's first release (None: in no introspected release). LAST: the last release of a",
        "name that torch removed. A release between two introspected ones has a name from its FIRST on.",
        '"""',
        "",
        "from __future__ import annotations",
        "",
        f"INTROSPECTED: tuple[tuple[int, int], ...] = {tuple(releases)!r}",
        "FIRST: dict[str, tuple[int, int] | None] = {",
        *(f"    {name!r}: {first[name]!r}," for name in names),
        "}",
        "LAST: dict[str, tuple[int, int]] = {",
        *(f"    {name!r}: {last[name]!r}," for name in names if name in last),
        "}",
        "",
    ]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the committed table differs")
    options = parser.parse_args()
    import torch

    release: Release = tuple(int(part) for part in torch.__version__.split("+")[0].split(".")[:2])  # type: ignore[assignment]
    names = sorted(collect_names())
    table = load_generated(OUTPUT)
    seen = observations(table)
    if table is not None and set(table.FIRST) != set(names):
        # Other releases were never asked about the new names: their answers would be guesses.
        print("the emulation code's names changed: run this script again with each other release's python", file=sys.stderr)
        seen = {}
    seen[release] = {name for name in names if exists(name)}
    text = render(seen, names)
    if options.check:
        if differs(OUTPUT, text):
            print(f"{OUTPUT.relative_to(ROOT)} is out of date for torch {torch.__version__}", file=sys.stderr)
            return 1
        return 0
    OUTPUT.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
