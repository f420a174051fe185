"""The work the server sends to its worker process, named without importing it: the engine
(LibCST, the rules) loads in the worker, never in the server, which answers `initialize`
before any of it is needed."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from devlint.server.model import Analysis, Change, Source


def analyze(source: Source) -> Analysis:
    from devlint.server.analysis import analyze as run

    return run(source)


def fix_all(source: Source) -> tuple[Change, ...]:
    from devlint.server.analysis import fix_all as run

    return run(source)


def reads(source: Source) -> frozenset[str]:
    """The files of its project the document reads constants from (or looked for them in)."""
    from devlint.server.importers import reads as run

    return run(source)


def documentation() -> dict[str, str]:
    """Every rule's documentation (what hover shows), by code."""
    from devlint.docs import rule_markdown
    from devlint.registry import all_rules

    return {rule.code: rule_markdown(rule) for rule in all_rules()}
