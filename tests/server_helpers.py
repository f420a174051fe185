"""What the language server tests share: starting a session, finding ranges in a text, and the
diagnostics devlint's own engine gives for a text (what the server must publish)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from lsp_client import LspClient, utf16_position

SYNTAX_ERROR = "syntax-error"

from devlint.run.config import Resolver
from devlint.run.file_job import process_source
from devlint.run.job import Job


@contextmanager
def session(root: Path, **initialize: Any) -> Iterator[LspClient]:
    client = LspClient(root)
    try:
        client.initialize(root, **initialize)
        yield client
        assert client.shutdown() == 0
    finally:
        client.kill()


def workers_of(pid: int) -> set[int]:
    """The worker processes of the server ``pid`` (Linux /proc; empty elsewhere)."""
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            command = (stat.parent / "cmdline").read_bytes()
        except (OSError, IndexError):
            continue
        if int(fields[1]) == pid and b"spawn_main" in command:
            found.add(int(stat.parent.name))
    return found


def span(text: str, needle: str, occurrence: int = 0) -> dict[str, Any]:
    """The LSP range (UTF-16) of the ``occurrence``-th ``needle`` in ``text``."""
    starts = [m.start() for m in re.finditer(re.escape(needle), text)]
    start = starts[occurrence]
    return {"start": utf16_position(text, start), "end": utf16_position(text, start + len(needle))}


def at(text: str, needle: str, delta: int = 0) -> dict[str, Any]:
    """The position ``delta`` characters into the first ``needle``."""
    return utf16_position(text, text.index(needle) + delta)


def _position(lines: list[str], row: int, column: int) -> dict[str, int]:
    line = lines[row - 1] if row - 1 < len(lines) else ""
    return {"line": row - 1, "character": sum(2 if ord(c) > 0xFFFF else 1 for c in line[: column - 1])}


def engine_diagnostics(text: str, path: Path) -> list[tuple[str | None, dict[str, Any]]]:
    """(code, range) of each finding devlint's CLI path reports for ``text`` as the file
    ``path``; a file that does not parse gives (None, the error's position)."""
    settings = Resolver(cwd=path.parent).settings_for(path)
    result, _ = process_source(text.encode("utf-8"), str(path), Job(settings.codes, settings.fix))
    lines = re.split(r"\r\n|\r|\n", text)
    if result.error is not None:
        return [(None, {"start": _position(lines, result.error.row or 1, result.error.column or 1)})]
    return sorted(
        (
            (
                f.code,
                {
                    "start": _position(lines, f.location.row, f.location.column),
                    "end": _position(lines, f.end_location.row, f.end_location.column),
                },
            )
            for f in result.findings
        ),
        key=repr,
    )


def published(diagnostics: list[dict[str, Any]]) -> list[tuple[str | None, dict[str, Any]]]:
    """The same shape from what the server published (a syntax error: no code, its start only)."""
    return sorted(
        (
            (None, {"start": d["range"]["start"]}) if d.get("code", SYNTAX_ERROR) == SYNTAX_ERROR else (d["code"], d["range"])
            for d in diagnostics
        ),
        key=repr,
    )
