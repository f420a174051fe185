"""What leaving function bodies out of LibCST's parse would save, by three rules of thumb for
which bodies cannot matter: issue 29's regions, measured before they are built.

    .venv/bin/python bench/elision.py FOLDER...

For every file the gate sends to LibCST (default rules), a function body is left out, replaced
by a stand-in over the same rows, when it holds no import, ``global`` or ``nonlocal`` and:

- ``words``: none of the triggers of the rules the gate chose for the file;
- ``bound``: nor any name bound (imported, assigned, defined) by a statement that holds one;
- ``transitively``: nor any name bound by a statement that reads such a name, and so on.

Only ``bound`` and ``transitively`` keep every site of a finding (a trigger can reach a body
through a name: ``from torch.utils.data import DataLoader as DL``); even they leave out facts
that other parts of the file read (callers, attribute stores, name uses), which
docs/regions/ lists. Prints the share of the gated bytes left out and LibCST's parse of the
files before and after, CPU seconds in this process. No test: the machine is shared.
"""

from __future__ import annotations

import argparse
import ast
import gc
import re
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from devlint.engine.lint import parse
from devlint.gate.prefilter import triggers
from devlint.gate.screen import screened
from devlint.registry import select_rules
from devlint.run.source import SourceError, decode

IDENTIFIER = re.compile(r"[A-Za-z_]\w*")
KEEPERS = (ast.Import, ast.ImportFrom, ast.Global, ast.Nonlocal)
RULES_OF_THUMB = ("words", "bound", "transitively")


class Offsets:
    """Character offsets of CPython's (row, UTF-8 column) positions."""

    def __init__(self, text: str) -> None:
        self.lines = text.splitlines(keepends=True)
        self.starts = [0]
        for line in self.lines:
            self.starts.append(self.starts[-1] + len(line))

    def __call__(self, row: int, column: int) -> int:
        return self.starts[row - 1] + len(self.lines[row - 1].encode()[:column].decode(errors="replace"))

    def span(self, node: ast.AST) -> tuple[int, int]:
        return self(node.lineno, node.col_offset), self(node.end_lineno, node.end_col_offset)  # type: ignore[attr-defined]


def _bindings(tree: ast.Module) -> Iterator[tuple[list[str], ast.AST]]:
    """Each binding statement anywhere: the names it binds and the node whose text binds them."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield [(alias.asname or alias.name).split(".")[0] for alias in node.names], node
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            yield [node.name], node
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.NamedExpr, ast.For, ast.AsyncFor)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = [n.id if isinstance(n, ast.Name) else n.attr for t in targets for n in ast.walk(t) if isinstance(n, (ast.Name, ast.Attribute))]
            yield names, node


def _tainted(text: str, tree: ast.Module, trigger: re.Pattern[str], offsets: Offsets, transitively: bool) -> set[str]:
    """The names bound by a statement holding a trigger (and, transitively, by one reading them)."""
    bindings = [(names, text.__getitem__(slice(*offsets.span(node)))) for names, node in _bindings(tree)]
    tainted = {name for names, source in bindings if trigger.search(source) for name in names}
    if not transitively:
        return tainted
    readers: dict[str, list[list[str]]] = {}
    for names, source in bindings:
        for word in set(IDENTIFIER.findall(source)):
            readers.setdefault(word, []).append(names)
    pending = list(tainted)
    while pending:
        for names in readers.get(pending.pop(), ()):
            fresh = [name for name in names if name not in tainted]
            tainted.update(fresh)
            pending.extend(fresh)
    return tainted


def elided(text: str, tree: ast.Module, trigger: re.Pattern[str], rule_of_thumb: str) -> str:
    """``text`` with the bodies ``rule_of_thumb`` leaves out replaced by ``(...)`` over the same rows."""
    offsets = Offsets(text)
    tainted = set() if rule_of_thumb == "words" else _tainted(text, tree, trigger, offsets, rule_of_thumb == "transitively")
    cuts: list[tuple[int, int, int]] = []

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) and child.body[0].lineno > child.lineno:
                first, last = child.body[0], child.body[-1]
                decorators = [d.lineno for d in getattr(first, "decorator_list", [])]
                row = min([first.lineno, *decorators])
                line = offsets.lines[row - 1]
                start = offsets(row, 0) + len(line) - len(line.lstrip())
                end = offsets.span(last)[1]
                body = text[start:end]
                # The body must start a row of its own (not `) -> int: ...` after a long header).
                own_row = text.startswith("@", start) if decorators else start == offsets(first.lineno, first.col_offset)
                if own_row and not (
                    trigger.search(body)
                    or tainted.intersection(IDENTIFIER.findall(body))
                    or any(isinstance(n, KEEPERS) for statement in child.body for n in ast.walk(statement))
                ):
                    rows = last.end_lineno - row  # type: ignore[operator]
                    cuts.append((start, end, rows))
                    continue
            visit(child)

    visit(tree)
    pieces, at = [], 0
    for start, end, rows in sorted(cuts):
        pieces += [text[at:start], "(" + "\n" * rows + "...)"]
        at = end
    return "".join([*pieces, text[at:]])


def parse_seconds(text: str) -> float:
    gc.collect()
    start = time.process_time()
    parse(text)
    seconds = time.process_time() - start
    gc.collect()
    return seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folders", nargs="+", type=Path)
    args = parser.parse_args(argv)
    rules = select_rules()
    gated = []
    for folder in args.folders:
        for path in sorted(folder.rglob("*.py")):
            try:
                text = decode(path.read_bytes()).text
            except (OSError, SourceError):
                continue
            screen = screened(text, rules)
            if screen.rules and screen.tree is not None:
                trigger = re.compile("|".join(re.escape(str(token)) for token in triggers(screen.rules)))
                gated.append((text, screen.tree, trigger))
    total = sum(len(text) for text, _, _ in gated)
    print(f"{len(gated)} files the gate sends to LibCST, {total / 2**20:.2f} MiB")
    print("| rule of thumb | bytes left out | LibCST parse (s) | with bodies left out (s) | ratio |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for rule_of_thumb in RULES_OF_THUMB:
        left = whole = part = 0.0
        for text, tree, trigger in gated:
            shorter = elided(text, tree, trigger, rule_of_thumb)
            left += len(text) - len(shorter)
            whole += parse_seconds(text)
            part += parse_seconds(shorter)
        print(f"| {rule_of_thumb} | {left / total:.1%} | {whole:.2f} | {part:.2f} | {part / whole:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
