"""Each file's check against its own LibCST parse, over whole code bases: the files a bench's
corpus does not hold (a text without a final newline, one dense with findings) are where a slow
path shows.

    .venv/bin/python bench/file_ratios.py FOLDER... [--min-kib 8] [--worst 15]

For every `.py` file of at least ``--min-kib`` that holds a finding: CPU seconds of checking it
(`lint_text`, the collector paused as a run pauses it) against LibCST parsing it, both in this
process, best of two. Prints the worst ratios (target <= 3x) and how many files miss it. No test:
the machine is shared (the load average is printed).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import libcst as cst
from scaling import cpu_seconds

from devlint.engine.lint import lint_text
from devlint.gate.nesting import call_with_deep_stack
from devlint.registry import select_rules
from devlint.run.source import SourceError, decode
from devlint.settings import FixSettings


def ratios(folders: list[Path], min_bytes: int) -> list[tuple[float, float, float, int, Path]]:
    """(check / parse, check seconds, parse seconds, findings, path), worst first."""
    rules = select_rules()
    settings = FixSettings()
    rows = []
    for folder in folders:
        for path in sorted(folder.rglob("*.py")):
            try:
                # as a run reads it: a BOM or a PEP 263 cookie decoded, the BOM not in the text
                text = decode(path.read_bytes()).text
            except (OSError, SourceError):
                continue
            if len(text) < min_bytes:
                continue
            try:
                findings = call_with_deep_stack(lint_text, text, str(path), rules, settings)
                parse = cpu_seconds(cst.parse_module, text)
            except Exception:  # noqa: BLE001, S112 - a file devlint reports as unreadable has no ratio
                continue
            if not findings:
                continue
            check = cpu_seconds(lint_text, text, str(path), rules, settings)
            rows.append((check / parse, check, parse, len(findings), path))
    return sorted(rows, key=lambda row: -row[0])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="+", type=Path)
    parser.add_argument("--min-kib", type=int, default=8, help="smaller files are left out (their parse is too short to time)")
    parser.add_argument("--worst", type=int, default=15, help="rows printed")
    args = parser.parse_args(argv)
    rows = ratios(args.folders, args.min_kib * 1024)
    print(f"load average: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    print(f"{len(rows)} files with findings; {sum(row[0] > 3 for row in rows)} above 3x their own parse\n")
    print("| check / own parse | check CPU s | parse CPU s | findings | file |\n|---:|---:|---:|---:|---|")
    for ratio, check, parse, found, path in rows[: args.worst]:
        print(f"| {ratio:.2f}x | {check:.3f} | {parse:.3f} | {found} | {path} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
