"""Code actions: a quick fix per finding with a fix, a quick fix that adds `# noqa: CODE`, and
`source.fixAll.devlint` (the safe fixes of the whole document, as `devlint fix` applies them).

Every edit is computed against the snapshot the findings came from, and a workspace edit names
the version of each document it applies to, so a client never applies it to other text."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from lsprotocol import types

from devlint.server.diagnostics import finding_diagnostic
from devlint.server.model import Change, Item
from devlint.server.snapshot import Checked, Snapshot

FIX_ALL = "source.fixAll.devlint"
FIX_ALL_TITLE = "devlint: fix all safe fixes"


def wanted(kind: str, only: Sequence[str] | None) -> bool:
    """Whether the client asked for actions of ``kind`` (``only`` lists kinds or their parents)."""
    return only is None or any(kind == parent or kind.startswith(parent + ".") for parent in only)


def _on_lines(finding: types.Range, asked: types.Range) -> bool:
    """Whether the finding shares a line with the requested range: a client asks with the cursor
    (an empty range) wherever it is on the line, and expects the line's fixes."""
    return finding.start.line <= asked.end.line and asked.start.line <= finding.end.line


def _sent(diagnostic: types.Diagnostic, sent: Sequence[types.Diagnostic]) -> bool:
    """Whether the client sent this diagnostic back in the request's context."""
    return any(
        d.code == diagnostic.code and d.range == diagnostic.range and d.source in (None, diagnostic.source) for d in sent
    )


def workspace_edit(snapshot: Snapshot, changes: Iterable[Change], encoding: str, versioned: bool) -> types.WorkspaceEdit:
    by_text: dict[int, list[types.TextEdit]] = {}
    for change in changes:
        lines = snapshot.lines[change.text]
        assert lines is not None, "a change in a cell that is not Python"
        by_text.setdefault(change.text, []).append(
            types.TextEdit(range=lines.range(change.start, change.end, encoding), new_text=change.content)
        )
    if versioned:
        return types.WorkspaceEdit(
            document_changes=[
                types.TextDocumentEdit(
                    text_document=types.OptionalVersionedTextDocumentIdentifier(
                        uri=snapshot.uris[text], version=snapshot.versions[text]
                    ),
                    edits=edits,
                )
                for text, edits in sorted(by_text.items())
            ]
        )
    return types.WorkspaceEdit(changes={snapshot.uris[text]: edits for text, edits in sorted(by_text.items())})


def _fix_title(item: Item) -> str:
    fix = item.finding.fix
    assert fix is not None
    unsafe = ", unsafe fix" if fix.applicability == "unsafe" else ""
    return f"{fix.message} ({item.finding.code}{unsafe})"


def quick_fixes(
    checked: Checked,
    text: int,
    span: types.Range,
    sent: Sequence[types.Diagnostic],
    encoding: str,
    versioned: bool,
    unsafe: bool,
) -> list[types.CodeAction]:
    """The fix and the noqa action of every finding of text ``text`` on the lines of ``span``,
    and of every finding the client ``sent`` in the request's context (as ruff's server does)."""
    snapshot = checked.snapshot
    lines = snapshot.lines[text]
    if lines is None:
        return []
    fixes: list[types.CodeAction] = []
    # One noqa action per line and code, however many findings of that code the line has.
    silences: dict[tuple[Change, ...], types.CodeAction] = {}
    for item in checked.analysis.items:
        if item.text != text:
            continue
        diagnostic = finding_diagnostic(item, lines, encoding)
        if not (_on_lines(diagnostic.range, span) or _sent(diagnostic, sent)):
            continue
        fix = item.finding.fix
        if item.fix and fix is not None and (fix.applicability == "safe" or unsafe):
            fixes.append(
                types.CodeAction(
                    title=_fix_title(item),
                    kind=types.CodeActionKind.QuickFix,
                    diagnostics=[diagnostic],
                    edit=workspace_edit(snapshot, item.fix, encoding, versioned),
                    is_preferred=fix.applicability == "safe",
                )
            )
        if item.noqa and item.noqa not in silences:
            silences[item.noqa] = types.CodeAction(
                title=f"Add `# noqa: {item.finding.code}` to this line",
                kind=types.CodeActionKind.QuickFix,
                diagnostics=[diagnostic],
                edit=workspace_edit(snapshot, item.noqa, encoding, versioned),
            )
    return fixes + list(silences.values())


def has_safe_fixes(checked: Checked) -> bool:
    return any(item.fix and item.finding.fix is not None and item.finding.fix.applicability == "safe" for item in checked.analysis.items)


def fix_all_action(data: object = None, edit: types.WorkspaceEdit | None = None) -> types.CodeAction:
    return types.CodeAction(title=FIX_ALL_TITLE, kind=FIX_ALL, edit=edit, data=data)
