"""A check or fix run from top to bottom: discover files, process each, report, exit status."""

from __future__ import annotations

import sys
from collections import Counter
from dataclasses import dataclass, field
from typing import TextIO

from devlint.context import FixSettings
from devlint.discovery import discover
from devlint.findings import FileError, Finding
from devlint.formats import RunReport, where, writers
from devlint.execute import execute
from devlint.process import FileResult, Job
from devlint.registry import UnknownCodeError, select_rules

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


@dataclass
class Options:
    paths: list[str] = field(default_factory=lambda: ["."])
    select: list[str] | None = None
    ignore: list[str] = field(default_factory=list)
    extend_select: list[str] = field(default_factory=list)
    output_format: str | None = None
    fix: bool = False
    diff: bool = False
    unsafe_fixes: bool = False
    statistics: bool = False
    exit_zero: bool = False
    quiet: bool = False
    # None: take the value from the configuration file, else the built-in default.
    device_name: str | None = None
    device_expression: str | None = None
    config: str | None = None
    no_cache: bool = False
    jobs: int | None = None
    baseline: str | None = None
    write_baseline: str | None = None
    add_noqa: bool = False
    stdin_filename: str | None = None


def default_format(out: TextIO) -> str:
    return "full" if out.isatty() else "concise"


def run_check(options: Options, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    try:
        rules = select_rules(options.select, options.ignore, options.extend_select)
    except UnknownCodeError as error:
        err.write(f"devlint: error: {error}\n")
        return EXIT_ERROR
    fmt = options.output_format or default_format(out)
    write = writers().get(fmt)
    if write is None:
        err.write(f"devlint: error: unknown output format {fmt!r}\n")
        return EXIT_ERROR
    job = Job(
        codes=tuple(rule.code for rule in rules),
        settings=FixSettings(options.device_name or "device", options.device_expression or "default"),
        fix=options.fix or options.diff,
        diff=options.diff,
        unsafe=options.unsafe_fixes,
    )
    found = discover(options.paths)
    results = execute([(path, job) for path in found.files])
    errors: list[FileError] = list(found.errors) + [r.error for r in results if r.error is not None]
    findings: list[Finding] = sorted((f for r in results for f in r.findings), key=Finding.sort_key)
    for error in errors:
        err.write(f"devlint: error: {error}\n")
    if options.diff:
        return _report_diff(results, errors, out, err, options)
    report = RunReport(
        findings,
        errors,
        fixes_applied=sum(r.fixes_applied for r in results),
        files_checked=len(found.files),
    )
    if options.quiet and fmt == "full":
        report.show_fixes = False
    _write(write, fmt, report, options, out)
    if options.statistics:
        _statistics(findings, out)
    return _exit_status(findings, errors, options)


def _write(write, fmt: str, report: RunReport, options: Options, out: TextIO) -> None:
    if fmt == "full" and options.quiet:
        # --quiet: the findings only, no summary line or "All checks passed!"
        for finding in report.findings:
            out.write(f"{where(finding)}: {finding.code} {finding.message}\n")
        return
    write(report, out)


def _statistics(findings: list[Finding], out: TextIO) -> None:
    counts = Counter((f.code, f.name, f.fix is not None and f.fix.applicability == "safe") for f in findings)
    for (code, name, fixable), count in sorted(counts.items(), key=lambda item: (-item[1], item[0])):
        out.write(f"{count:>5}\t{code}\t{'[*] ' if fixable else '    '}{name}\n")


def _report_diff(results: list[FileResult], errors: list[FileError], out: TextIO, err: TextIO, options: Options) -> int:
    diffs = [r.diff for r in results if r.diff]
    for diff in diffs:
        out.write(diff)
    fixes = sum(r.fixes_applied for r in results)
    if not options.quiet:
        err.write(f"Would fix {fixes} finding{'s' if fixes != 1 else ''} in {len(diffs)} file{'s' if len(diffs) != 1 else ''}.\n")
    if errors:
        return EXIT_ERROR
    return EXIT_FINDINGS if diffs and not options.exit_zero else EXIT_CLEAN


def _exit_status(findings: list[Finding], errors: list[FileError], options: Options) -> int:
    if errors:
        return EXIT_ERROR
    if findings and not options.exit_zero:
        return EXIT_FINDINGS
    return EXIT_CLEAN

