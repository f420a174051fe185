"""One file's text through the pipeline: prefilter, parse once, one walk, findings, fix rounds."""

from __future__ import annotations

import ast
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import libcst as cst

from devlint.engine.chains import CHAIN_LINKS, Unstitchable, long_chains, parse_with_chains
from devlint.engine.context import FileContext, FixSettings
from devlint.engine.interning import direct_nodes
from devlint.engine.positions import StatementPrints, TreeMismatch, lone_carriage_return, statement_rows
from devlint.engine.reuse import EarlierChecks
from devlint.engine.sections import SECTION_CHARS, Parser, parse_in_sections
from devlint.engine.walk import walk
from devlint.findings import Finding
from devlint.fixes import applicable, apply_fixes
from devlint.gate.prefilter import matching_rules
from devlint.gate.screen import FRESH, Reading, screened
from devlint.gate.syntax import ParseError, cpython_error, cpython_tree
from devlint.project import NONE, Imports
from devlint.rule import Rule

# Fixes that overlap (a `.cuda()` inside another `.cuda()` receiver) land over several rounds.
MAX_FIX_ROUNDS = 10


def parse(text: str, section_chars: int = SECTION_CHARS) -> cst.Module:
    """LibCST's tree of ``text``; a large file is parsed in sections (devlint.engine.sections)."""
    return _parse(text, section_chars)[0]


def _parse(
    text: str,
    section_chars: int,
    parser: Parser = cst.parse_module,
    held: list[ast.Module] | None = None,
    reading: Reading = FRESH,
    chained: int | None = None,
) -> tuple[cst.Module, bool]:
    """The tree, and whether it was stitched from sections (each parsed by ``parser``; ``held``:
    CPython's tree of ``text`` when the caller has it, which cutting it into sections reads,
    handed over in a list so that it is dropped once read, before LibCST parses; ``chained``:
    the gate's count of chained operations in that tree, which says whether a chain long enough
    to parse in batches may be there, devlint.engine.chains)."""
    tree = held.pop() if held else None
    problem = reading.nesting(text, tree)
    if problem is not None:
        # Checked first: LibCST's native parser would overflow the C stack on such input.
        raise ParseError(f"syntax error: {problem.message}", problem.row, problem.column)
    chains = long_chains(text, tree) if tree is not None and chained is not None and chained >= CHAIN_LINKS - 1 else []
    cuts = [tree] if tree is not None and len(text) > 2 * section_chars and not chains else []
    del tree

    def whole(source: str, direct: Callable[[Parser], Parser], cpython: ast.Module | None = None) -> tuple[cst.Module, bool]:
        # A tree stitched from sections must print back to its text, which no tree of a text
        # with a lone `\r` does: it would be parsed again whole, and walked twice.
        if len(source) > 2 * section_chars and not lone_carriage_return(source):
            module = parse_in_sections(source, direct(parser), section_chars, cpython)
            if module is not None:
                return module, True
        return direct(cst.parse_module)(source), False

    try:
        with direct_nodes() as direct:
            if chains:
                try:
                    return parse_with_chains(text, chains, direct(cst.parse_module), lambda source: whole(source, direct)[0]), True
                except (Unstitchable, cst.ParserSyntaxError, RecursionError):
                    # Parsed whole, as without batches (a stitched chain is as deep as it is long).
                    pass
            return whole(text, direct, cuts.pop() if cuts else None)
    except cst.ParserSyntaxError as error:
        raise cpython_error(text) or ParseError(
            f"syntax error: {error.message}", error.raw_line, error.raw_column + 1
        ) from None
    except (RecursionError, MemoryError):
        raise ParseError("too deeply nested to parse") from None


def check_syntax(text: str) -> None:
    """A file skipped by the prefilter must still be reported when it does not parse.

    CPython's own parser is ~20x cheaper than LibCST; LibCST decides only when CPython rejects
    the file (it may be newer syntax than this interpreter knows)."""
    if cpython_tree(text) is None:
        parse(text)


def lint_text(
    text: str,
    filename: str,
    rules: Sequence[type[Rule]],
    settings: FixSettings = FixSettings(),
    prefilter: bool = True,
    gate: bool = True,
    sections: tuple[Parser, int] | None = None,
    prints: StatementPrints | None = None,
    earlier: EarlierChecks | None = None,
    imported: Imports | Callable[[ast.Module | None], Imports] = NONE,
    reading: Reading = FRESH,
    tree: ast.Module | None = None,
    chained: int | None = None,
) -> list[Finding]:
    """The findings of ``rules`` on ``text``. ``prefilter``: only the rules that may report walk
    the tree, and a file where none may is not parsed (devlint.gate.screen); ``gate``: that decision
    reads CPython's tree too, not only the text (devlint.gate); ``sections``: the parser of each
    section and their size, for a caller that keeps the trees of sections it parsed before (the
    tree stitched from them is the one a single parse gives, devlint.engine.sections); ``prints``:
    the statements printed by earlier checks, for a caller that checks the same file again
    (devlint.engine.positions); ``earlier``: the last checks of the files a caller checks again
    and again, whose fixes are reused where an edit cannot have changed them (devlint.engine.reuse);
    ``imported``: the constants the file imports from other modules of its project, which the
    caller read (devlint.project), or how to read them from CPython's tree of the text (None
    where the screen read none), for a caller that would otherwise parse the text again;
    ``reading``: how the text is read before LibCST parses it, for a caller that keeps what it
    read of a document's last version and reads again only what an edit changed
    (devlint.gate.incremental); ``tree``: CPython's tree of ``text``, for a caller that screened
    it itself (``prefilter`` False), so that it is not compiled again; ``chained``: what its
    screen counted of that tree's chained operations (devlint.gate.screen.Screened)."""
    if prefilter:
        screen = screened(text, rules, gate, reading, settings.torch_version)
        tree, chosen, chained = screen.tree, screen.rules, screen.chained
        del screen
        if chosen is None:
            # CPython cannot read the text: LibCST parses it (for the rules whose triggers it
            # holds, or only to report the error or accept syntax newer than this Python's).
            rules = matching_rules(text, rules)
            if not rules:
                parse(text)
                return []
        elif not chosen:
            return []
        else:
            rules = chosen
    parser, section_chars = sections or (cst.parse_module, SECTION_CHARS)
    constants = imported(tree) if callable(imported) else imported
    rows = statement_rows(tree, text) if tree is not None else None
    # CPython's tree of a large file is ~100 MB: handed over, dropped once the sections are cut.
    held = [tree] if tree is not None else []
    del tree
    try:
        parsed = _parse(text, section_chars, parser, held, reading, chained)
        return _lint_module(parsed, text, filename, rules, settings, prints, constants, earlier, rows)
    except TreeMismatch:
        # A tree stitched from sections that does not print back to its text: parse it whole.
        return _lint_module(_parse(text, len(text)), text, filename, rules, settings, imported=constants)


def _lint_module(
    parsed: tuple[cst.Module, bool],
    text: str,
    filename: str,
    rules: Sequence[type[Rule]],
    settings: FixSettings,
    prints: StatementPrints | None = None,
    imported: Imports = NONE,
    earlier: EarlierChecks | None = None,
    rows: tuple[int, ...] | None = None,
) -> list[Finding]:
    ctx = FileContext(filename, text, parsed[0], settings, stitched=parsed[1], prints=prints, imported=imported, rows=rows)
    ctx.rule_codes = tuple(rule.code for rule in rules)
    ctx.keep_check = earlier is not None
    try:
        walk(ctx, [rule(ctx) for rule in rules])
        findings = ctx.findings(earlier.get(filename) if earlier is not None else None)
        if earlier is not None:
            earlier.put(filename, ctx.check)
    except RecursionError:
        raise ParseError("too deeply nested to analyse") from None
    finally:
        ctx.close()
    return findings


@dataclass
class FixResult:
    text: str
    applied: int
    remaining: list[Finding]
    # Of ``applied``, those of rounds after the first: findings a fix revealed, and fixes held
    # back by an overlapping one. `check` counts what the first round offers, so the summary
    # says these apart.
    later: int = 0
    # The rounds that applied a fix.
    rounds: int = 0


def fix_text(
    text: str,
    filename: str,
    rules: Sequence[type[Rule]],
    settings: FixSettings = FixSettings(),
    unsafe: bool = False,
    keep: Callable[[str, list[Finding]], list[Finding]] | None = None,
    gate: bool = True,
    screened: Sequence[type[Rule]] | None = None,
    imported: Imports = NONE,
    tree: ast.Module | None = None,
    reading: Reading = FRESH,
    chained: int | None = None,
) -> FixResult:
    """Apply fixes until none is left to apply; the findings that remain come back too.
    ``keep(text, findings)`` drops findings that must be neither fixed nor reported (noqa);
    ``screened``: the rules the screen already chose for ``text`` (the first round walks them
    without screening the same text again; later rounds screen the rewritten text); ``imported``:
    as for lint_text (a fix never edits another module, so every round reads the same); ``tree``:
    CPython's tree of ``text`` that the screen read, for the first round; ``reading``: how the
    screen read it (devlint.gate.screen), for the first round; ``chained``: what the screen
    counted of the tree's chained operations, for the first round."""
    applied = later = rounds = 0
    original = text
    # Handed over to the first round, not kept here through the walk (~100 MB for a large file).
    held = [tree] if screened is not None else []
    del tree
    if screened is None:
        findings = lint_text(text, filename, rules, settings, gate=gate, imported=imported)
    else:
        findings = lint_text(
            text, filename, screened, settings, prefilter=False, imported=imported, reading=reading, tree=held.pop(), chained=chained
        )
    findings = keep(text, findings) if keep is not None else findings
    for _ in range(MAX_FIX_ROUNDS):
        fixes = [f.fix for f in findings if applicable(f, unsafe) and f.fix is not None]
        if not fixes:
            break
        new_text, count = apply_fixes(text, fixes)
        try:
            findings = lint_text(new_text, filename, rules, settings, gate=gate, imported=imported)
            findings = keep(new_text, findings) if keep is not None else findings
        except ParseError as error:
            # A fix must never leave code that does not parse: keep the last good text.
            raise ParseError(f"internal error: a fix produced code that does not parse ({error.message}); file left unchanged") from None
        text = new_text
        applied += count
        later += count if rounds else 0
        rounds += 1
    if applied:
        _refuse_what_cpython_rejects(original, text)
    return FixResult(text, applied, findings, later, rounds)


def _refuse_what_cpython_rejects(original: str, fixed: str) -> None:
    """LibCST accepts syntax newer than the running interpreter (quotes reused inside an
    f-string, PEP 701), and leaves to the compiler what CPython's parser lets through (a keyword
    repeated): a fix must not turn a file this Python compiles into one it rejects."""
    error = cpython_error(fixed, whole=True)
    if error is not None and cpython_error(original, whole=True) is None:
        where = f" at line {error.row}" if error.row is not None else ""
        raise ParseError(f"internal error: a fix produced code this Python rejects ({error.message}{where}); file left unchanged")
