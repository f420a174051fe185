"""How checking grows with the file, in one run: time and Python calls for a generated file of N
and 4N blocks (every rule's INVALID examples, as tests/test_linear_cost.py builds them), and the
worst file of torch's own sources against its own LibCST parse.

    .venv/bin/python bench/scaling.py [--blocks 2] [--worst PATH]

Prints a Markdown table; no test (the machine is shared: see the load average printed). The
deterministic check of the same property is tests/test_linear_cost.py.
"""

from __future__ import annotations

import argparse
import gc
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from test_linear_cost import SHAPES, _block, _calls  # noqa: E402 - the tests' generators, one definition

from devlint.engine.lint import fix_text, lint_text  # noqa: E402
from devlint.gate.nesting import call_with_deep_stack  # noqa: E402
from devlint.registry import all_rules  # noqa: E402


def check_seconds(path: Path, env: dict[str, str] | None = None) -> float:
    """CPU seconds of `devlint check --no-cache --jobs 1 PATH` (the child's user + system time)."""
    before = os.times()
    command = [sys.executable, "-m", "devlint", "check", "--no-cache", "--jobs", "1", str(path)]
    subprocess.run(command, capture_output=True, check=False, env=env)
    after = os.times()
    return (after.children_user - before.children_user) + (after.children_system - before.children_system)


def parse_seconds(path: Path) -> float:
    """CPU seconds of LibCST parsing the file whole, in a process of its own."""
    code = "import libcst, sys, time; t = time.process_time(); libcst.parse_module(open(sys.argv[1], 'rb').read()); print(time.process_time() - t)"
    done = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, check=True)
    return float(done.stdout)


def synthetic_growth(blocks: int, env: dict[str, str] | None = None) -> list[tuple[str, float, float, int, int]]:
    """For module-level and function-level blocks of every rule's INVALID examples: check CPU
    seconds and Python calls at N and at 4N blocks, as (shape, seconds N, seconds 4N, calls N,
    calls 4N)."""
    rules = all_rules()
    rows = []
    for shape in ("module", "function"):
        block = _block(rules, shape)
        with tempfile.TemporaryDirectory() as folder:
            seconds = []
            calls = []
            for n in (blocks, 4 * blocks):
                text = "\n".join([block] * n)
                path = Path(folder) / f"generated_{n}.py"
                path.write_text(text)
                seconds.append(check_seconds(path, env))
                calls.append(_calls(lambda: lint_text(text, str(path), rules)))
        rows.append((shape, seconds[0], seconds[1], calls[0], calls[1]))
    return rows


def cpu_seconds(work: Callable[..., object], *args: object) -> float:
    """CPU seconds of ``work(*args)`` in this process, best of two, on a deep stack."""
    best = float("inf")
    for _ in range(2):
        # As a run checks a file (devlint.run.pool): the collector paused, what earlier
        # measurements left collected first (its passes over them grew with the process).
        gc.collect()
        gc.disable()
        try:
            started = time.process_time()
            call_with_deep_stack(work, *args)
            best = min(best, time.process_time() - started)
        finally:
            gc.enable()
    return best


def shape_growth(n: int = 200) -> list[tuple[str, float, float]]:
    """For each of tests/test_linear_cost.py's shapes whose parts reach across the file (an
    ``elif`` chain, an attribute read in every class...): CPU seconds of
    checking and fixing it in this process (best of two) at N and 4N, as (shape, seconds N,
    seconds 4N). In process: an interpreter's start would hide the growth at these sizes."""
    rules = all_rules()

    def check_and_fix(text: str) -> None:
        lint_text(text, "generated.py", rules)
        fix_text(text, "generated.py", rules)

    def seconds(text: str) -> float:
        return cpu_seconds(check_and_fix, text)

    return [(shape, seconds(SHAPES[shape](n)), seconds(SHAPES[shape](4 * n))) for shape in sorted(SHAPES)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--blocks", type=int, default=2, help="N: blocks in the smaller file")
    parser.add_argument("--worst", type=Path, default=None, help="default: torch's distributed_test.py")
    args = parser.parse_args(argv)
    import torch

    worst = args.worst or Path(torch.__file__).parent / "testing/_internal/distributed/distributed_test.py"
    print(f"load average: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores\n")
    print("| measure | N | 4N | ratio (target) |\n|---|---|---|---|")
    for shape, seconds_n, seconds_4n, calls_n, calls_4n in synthetic_growth(args.blocks):
        print(f"| {shape}-level blocks: check CPU s | {seconds_n:.2f} | {seconds_4n:.2f} | {seconds_4n / seconds_n:.2f}x (<= 5x) |")
        print(f"| {shape}-level blocks: Python calls | {calls_n:,} | {calls_4n:,} | {calls_4n / calls_n:.2f}x (<= 4.5x) |")
    for shape, seconds_n, seconds_4n in shape_growth():
        print(f"| {shape}: check and fix CPU s | {seconds_n:.2f} | {seconds_4n:.2f} | {seconds_4n / seconds_n:.2f}x (<= 5x) |")
    started = time.perf_counter()
    check, parse = check_seconds(worst), parse_seconds(worst)
    print("\n| worst file | check CPU s | its LibCST parse s | ratio (target <= 3x) |\n|---|---|---|---|")
    print(f"| {worst.name} ({worst.stat().st_size // 1024} KB) | {check:.2f} | {parse:.2f} | {check / parse:.2f}x |")
    print(f"\n({time.perf_counter() - started:.0f} s for the worst file)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
