"""CPython's own parser, which devlint asks first: it costs a twentieth of LibCST's and needs no
import. LibCST has the last word only where CPython rejects a file (the syntax may be newer than
this interpreter knows)."""

from __future__ import annotations

import ast

# Top-level `await` is valid in notebooks and in what LibCST accepts.
FLAGS = ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT


class ParseError(Exception):
    def __init__(self, message: str, row: int | None = None, column: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.row = row
        self.column = column


def cpython_tree(text: str) -> ast.Module | None:
    """CPython's tree of ``text``; None when CPython cannot read it."""
    try:
        return compile(text, "<devlint>", "exec", FLAGS, dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def cpython_error(text: str, whole: bool = False) -> ParseError | None:
    """CPython's message and position for a file LibCST rejects: usually the more precise.
    ``whole`` compiles to bytecode, which also rejects what only the compiler checks (a keyword
    argument repeated, ``return`` outside a function): what a fixed file must pass."""
    try:
        compile(text, "<devlint>", "exec", 0 if whole else ast.PyCF_ONLY_AST, dont_inherit=True)
    except SyntaxError as error:
        return ParseError(f"syntax error: {error.msg}", error.lineno, error.offset)
    except (ValueError, RecursionError, MemoryError):
        return None
    return None
