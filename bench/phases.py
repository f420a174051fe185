"""Where one cold, single-process check spends its time: read, prefilter, CPython's parse, the
gate, LibCST's parse, walk, findings.

    python bench/phases.py PATH [--select CODES]

Runs the same steps as ``devlint.engine.lint.lint_text`` one by one on every ``.py`` file under PATH,
in one process with the garbage collector handled as devlint's executor does (paused during a
file, the file's garbage collected after it), and prints the seconds spent in each step. Use it
with ``python -m cProfile`` or pyinstrument to look inside a step.
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from collections import defaultdict
from pathlib import Path

from devlint.engine.context import FileContext
from devlint.engine.lint import ParseError, parse
from devlint.engine.walk import walk
from devlint.gate.decision import passing
from devlint.gate.prefilter import matching_rules
from devlint.gate.syntax import cpython_tree
from devlint.registry import select_rules
from devlint.run.source import SourceError, decode


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", type=Path)
    parser.add_argument("--select", default=None, help="comma-separated codes (default: the default rules)")
    args = parser.parse_args(argv)
    rules = select_rules(args.select.split(",") if args.select else None)
    spent: dict[str, float] = defaultdict(float)
    counts: dict[str, int] = defaultdict(int)
    clock = time.perf_counter

    def timed(step: str, work):
        start = clock()
        value = work()
        spent[step] += clock() - start
        return value

    gc.disable()
    for path in sorted(args.path.rglob("*.py")):
        timed("collect garbage", lambda: gc.collect(0))
        counts["files"] += 1
        data = timed("read", path.read_bytes)
        try:
            text = timed("decode", lambda: decode(data).text)
        except SourceError:
            counts["undecodable"] += 1
            continue
        selected = timed("prefilter", lambda: matching_rules(text, rules))
        tree = timed("CPython parse" + ("" if selected else " (syntax check only)"), lambda: cpython_tree(text))
        if tree is not None and selected:
            selected = timed("gate", lambda: passing(tree, selected))
        if not selected:
            if tree is None:
                counts["syntax errors"] += 1
            continue
        counts["parsed"] += 1
        try:
            # devlint.engine.lint.parse: the nesting scan, then LibCST (in sections for a large file).
            module = timed("parse (nesting scan + LibCST)", lambda: parse(text))
        except ParseError:
            counts["syntax errors"] += 1
            continue
        ctx = FileContext(str(path), text, module)
        timed("walk + rules", lambda: walk(ctx, [rule(ctx) for rule in selected]))
        findings = timed("findings (positions, fixes)", ctx.findings)
        counts["files with findings"] += bool(findings)
        counts["findings"] += len(findings)
    total = sum(spent.values())
    for step, seconds in spent.items():
        print(f"{step:<32} {seconds:8.2f} s  {100 * seconds / total:5.1f} %")
    print(f"{'total':<32} {total:8.2f} s")
    print(", ".join(f"{name}: {count}" for name, count in counts.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
