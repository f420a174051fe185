"""A check or fix run from top to bottom: discover files, process each, report, exit status."""

from __future__ import annotations

import json
import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, TextIO

from devlint.findings import FileError, Finding
from devlint.formats import RunReport, concise_line, fixable, fixed_count, where, writers
from devlint.formats.baseline import Baseline, BaselineError
from devlint.formats.baseline import load as load_baseline
from devlint.formats.baseline import write as write_baseline
from devlint.registry import UnknownCodeError, select_infos
from devlint.run.cache import Cache
from devlint.run.config import ConfigError, FileSettings, Overrides, Resolver
from devlint.run.diff_base import DiffBase, DiffBaseError, read_diff_base
from devlint.run.discovery import discover
from devlint.run.file_job import process_source
from devlint.run.job import FileResult, Job
from devlint.run.pool import Executor, execute  # noqa: F401 - tests patch devlint.run.command.execute
from devlint.run.progress import run_with_progress
from devlint.run.settings_view import show_settings
from devlint.run.source import SourceError
from devlint.run.suppressions import add_noqa_to_file
from devlint.run.writer import WriteError

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
    torch_version: tuple[int, int] | None = None
    config: str | None = None
    no_cache: bool = False
    jobs: int | None = None
    baseline: str | None = None
    write_baseline: str | None = None
    add_noqa: bool = False
    stdin_filename: str | None = None
    # --diff-base REF: report (and fix) only what the change against REF touched
    diff_base: str | None = None
    show_settings: bool = False


def default_format(out: TextIO) -> str:
    return "full" if out.isatty() else "concise"


def run_check(
    options: Options, out: TextIO | None = None, err: TextIO | None = None, stdin: BinaryIO | None = None
) -> int:
    """A check or fix run: check the options, process the files (or stdin), conclude; the exit status."""
    out = out or sys.stdout
    err = err or sys.stderr
    from_stdin = options.paths == ["-"]
    # `devlint fix -` prints the fixed source on stdout; the findings go to stderr.
    report = err if from_stdin and options.fix and not options.diff else out
    try:
        output = _checked_output(options, out, err, report)
        resolver = Resolver(_overrides(options), Path(options.config) if options.config else None)
        if options.show_settings:
            return show_settings(resolver, options.paths, out)
        known = load_baseline(Path(options.baseline)) if options.baseline else None
        changes = read_diff_base(options.diff_base) if options.diff_base is not None else None
        job_for = _jobs(resolver, options, changes)
        if from_stdin:
            processed = _process_stdin(options, job_for, stdin, output)
        else:
            processed = _process_files(options, resolver, job_for, err)
    except (_Refused, ConfigError, BaselineError) as error:
        err.write(f"devlint: error: {error}\n")
        return EXIT_ERROR
    except DiffBaseError as error:
        err.write(f"devlint: error: --diff-base: {error}\n")
        return EXIT_ERROR
    return _conclude(processed, known, options, output, changes)


class _Refused(Exception):
    """The options cannot make a run; the message says why."""


@dataclass(frozen=True)
class _Output:
    """Where the run writes: stdout, stderr, and the stream and format of the findings."""

    out: TextIO
    err: TextIO
    report: TextIO
    fmt: str


@dataclass(frozen=True)
class _Processed:
    """Each file's result, the names of the files checked, and the errors discovery met."""

    results: list[FileResult]
    files: list[str]
    errors: list[FileError]


def _checked_output(options: Options, out: TextIO, err: TextIO, report: TextIO) -> _Output:
    """Checked before any file is read: the rule codes exist, the options go together, and the
    format is known."""
    try:
        select_infos(options.select, options.ignore, options.extend_select)
    except UnknownCodeError as error:
        raise _Refused(str(error)) from None
    usage = _usage_error(options)
    if usage:
        raise _Refused(usage)
    fmt = options.output_format or default_format(report)
    if fmt not in writers():
        raise _Refused(f"unknown output format {fmt!r}")
    return _Output(out, err, report, fmt)


def _process_stdin(options: Options, job_for: Callable[[Path], Job], stdin: BinaryIO | None, output: _Output) -> _Processed:
    name = options.stdin_filename or "-"
    data = (stdin or sys.stdin.buffer).read()
    result, new = process_source(data, name, job_for(Path(name)))
    if output.report is output.err:
        _write_source(new if new is not None else data, output.out)
    return _Processed([result], [name], [])


def _process_files(options: Options, resolver: Resolver, job_for: Callable[[Path], Job], err: TextIO) -> _Processed:
    found = discover(options.paths, exclude=(), skip=resolver.excluded)
    if not found.files and not found.errors:
        err.write("warning: No Python files found under the given path(s)\n")
    work = [(path, job_for(path)) for path in found.files]
    with Executor(options.jobs, None if options.no_cache else Cache()) as run:
        results = run_with_progress(run, work, err)
    return _Processed(results, [str(path) for path in found.files], list(found.errors))


def _conclude(processed: _Processed, known: Baseline | None, options: Options, output: _Output, changes: DiffBase | None = None) -> int:
    """Report the errors, then do what the options ask with the findings: print the diff, record a
    baseline, add noqa comments, or report the findings the baseline does not know (and, with
    ``--diff-base``, the change touched)."""
    errors: list[FileError] = processed.errors + [r.error for r in processed.results if r.error is not None]
    findings: list[Finding] = sorted((f for r in processed.results for f in r.findings), key=Finding.sort_key)
    if known is not None and not options.fix and (stale := known.stale(findings)):
        output.err.write(
            f"warning: {stale} baseline entr{'ies' if stale != 1 else 'y'} of {options.baseline} match no finding "
            "(fixed, or the line edited); --write-baseline records the findings as they are\n"
        )
    if changes is not None:
        findings = changes.report(findings, _text_now)
    for error in errors:
        output.err.write(f"devlint: error: {error}\n")
    if options.diff:
        return _report_diff(processed.results, errors, output.out, output.err, options)
    if options.write_baseline:
        return _write_baseline(Path(options.write_baseline), findings, errors, output.err)
    if known is not None:
        findings = known.new(findings)
    if options.add_noqa:
        return _add_noqa(findings, errors, output.err)
    report = RunReport(
        findings,
        errors,
        fixes_applied=sum(r.fixes_applied for r in processed.results),
        fixes_later=sum(r.fixes_later for r in processed.results),
        fix_rounds=max((r.fix_rounds for r in processed.results), default=0),
        files_checked=len(processed.files),
        files=processed.files,
        unsafe_fixes=options.unsafe_fixes,
    )
    if options.quiet and output.fmt == "full":
        report.show_fixes = False
    if options.statistics:
        # ruff's --statistics: the table in place of the findings
        _statistics(findings, output.report, options.unsafe_fixes, output.fmt)
    else:
        _write(writers()[output.fmt], output.fmt, report, options, output.report)
    return _exit_status(findings, errors, options)


def _write(write, fmt: str, report: RunReport, options: Options, out: TextIO) -> None:
    if fmt in ("full", "concise") and options.quiet:
        # --quiet: the findings only, no summary line or "All checks passed!"; the machine
        # formats (json, sarif, ...) never print one
        for finding in report.findings:
            out.write(concise_line(finding, options.unsafe_fixes) + "\n")
        return
    write(report, out)


def _statistics(findings: list[Finding], out: TextIO, unsafe_fixes: bool, fmt: str) -> None:
    """A count of findings per rule, most first: a table, or a JSON list with ``json``."""
    counts = Counter((f.code, f.name, fixable(f, unsafe_fixes)) for f in findings)
    rows = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    if fmt == "json":
        table = [{"code": code, "name": name, "count": count, "fixable": fix} for (code, name, fix), count in rows]
        out.write(json.dumps(table, indent=2) + "\n")
        return
    for (code, name, fix), count in rows:
        out.write(f"{count:>5}\t{code}\t{'[*] ' if fix else '    '}{name}\n")


def _report_diff(results: list[FileResult], errors: list[FileError], out: TextIO, err: TextIO, options: Options) -> int:
    diffs = [r.diff for r in results if r.diff]
    for diff in diffs:
        out.write(diff)
    fixes = fixed_count(
        sum(r.fixes_applied for r in results), sum(r.fixes_later for r in results), max((r.fix_rounds for r in results), default=0)
    )
    if not options.quiet:
        err.write(f"Would fix {fixes} in {len(diffs)} file{'s' if len(diffs) != 1 else ''}.\n")
    if errors:
        return EXIT_ERROR
    return EXIT_FINDINGS if diffs and not options.exit_zero else EXIT_CLEAN


def _usage_error(options: Options) -> str | None:
    if "-" in options.paths and len(options.paths) > 1:
        return "`-` (read stdin) cannot be combined with other paths"
    if options.stdin_filename and options.paths != ["-"]:
        return "--stdin-filename needs `-` as the path"
    if options.add_noqa and (options.fix or options.diff):
        return "--add-noqa cannot be combined with --fix or --diff"
    if options.add_noqa and options.paths == ["-"]:
        return "--add-noqa cannot write to stdin"
    if options.diff_base is not None and options.paths == ["-"]:
        return "--diff-base compares files with a git revision, not stdin"
    return None


def _overrides(options: Options) -> Overrides:
    return Overrides(
        select=tuple(options.select) if options.select is not None else None,
        ignore=tuple(options.ignore),
        extend_select=tuple(options.extend_select),
        device_name=options.device_name,
        device_expression=options.device_expression,
        torch_version=options.torch_version,
    )


def _text_now(filename: str) -> str | None:
    try:
        return Path(filename).read_bytes().decode("utf-8", errors="replace")
    except OSError:
        return None


def _jobs(resolver: Resolver, options: Options, changes: DiffBase | None = None) -> Callable[[Path], Job]:
    """The Job of each file; files whose settings resolve alike share one."""
    made: dict[tuple[FileSettings, Path], Job] = {}

    def job_for(path: Path) -> Job:
        settings = resolver.settings_for(path)
        root = resolver.config_for(path).root
        if (settings, root) not in made:
            made[settings, root] = Job(
                codes=settings.codes,
                settings=settings.fix,
                fix=options.fix or options.diff,
                diff=options.diff,
                unsafe=options.unsafe_fixes,
                root=str(root),
                diff_base=changes if options.fix or options.diff else None,
            )
        return made[settings, root]

    return job_for


def _write_source(data: bytes, out: TextIO) -> None:
    buffer = getattr(out, "buffer", None)
    if buffer is None:
        out.write(data.decode("utf-8", "surrogateescape"))
        return
    out.flush()
    buffer.write(data)
    buffer.flush()


def _write_baseline(path: Path, findings: list[Finding], errors: list[FileError], err: TextIO) -> int:
    try:
        write_baseline(path, findings)
    except BaselineError as error:
        err.write(f"devlint: error: {error}\n")
        return EXIT_ERROR
    err.write(f"Recorded {len(findings)} finding{'s' if len(findings) != 1 else ''} in {path}.\n")
    return EXIT_ERROR if errors else EXIT_CLEAN


def _add_noqa(findings: list[Finding], errors: list[FileError], err: TextIO) -> int:
    by_file: dict[str, list[Finding]] = {}
    for finding in findings:
        if finding.cell is not None:
            err.write(f"devlint: warning: {where(finding)}: --add-noqa does not edit notebooks; not added\n")
            continue
        by_file.setdefault(finding.filename, []).append(finding)
    added, changed, failed = 0, 0, False
    for filename, found in by_file.items():
        try:
            count = add_noqa_to_file(Path(filename), found)
        except (OSError, SourceError, WriteError) as error:
            err.write(f"devlint: error: {filename}: {getattr(error, 'message', None) or error}\n")
            failed = True
            continue
        added += count
        changed += 1 if count else 0
    err.write(f"Added {added} noqa directive{'s' if added != 1 else ''} to {changed} file{'s' if changed != 1 else ''}.\n")
    return EXIT_ERROR if errors or failed else EXIT_CLEAN


def _exit_status(findings: list[Finding], errors: list[FileError], options: Options) -> int:
    if errors:
        return EXIT_ERROR
    if findings and not options.exit_zero:
        return EXIT_FINDINGS
    return EXIT_CLEAN

