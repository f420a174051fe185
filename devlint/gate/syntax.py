"""CPython's own parser, which devlint asks first: it costs a twentieth of LibCST's and needs no
import. LibCST has the last word only where CPython rejects a file (the syntax may be newer than
this interpreter knows)."""

from __future__ import annotations

import ast
import warnings
from typing import Any

# Top-level `await` is valid in notebooks and in what LibCST accepts.
FLAGS = ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT


def compile_quietly(text: str, flags: int) -> Any:
    """``compile(text)`` with ``flags``, its warnings about the user's code (an invalid escape,
    ``1(2)``, ``x is 1``) neither printed as ours under ``<devlint>`` nor, under ``-W error``,
    raised as syntax errors: what the user's own interpreter says of them is its business."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return compile(text, "<devlint>", "exec", flags, dont_inherit=True)


class ParseError(Exception):
    def __init__(self, message: str, row: int | None = None, column: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.row = row
        self.column = column


def cpython_tree(text: str) -> ast.Module | None:
    """CPython's tree of ``text``; None when CPython cannot read it."""
    try:
        return compile_quietly(text, FLAGS)  # type: ignore[no-any-return]
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def cpython_error(text: str, whole: bool = False) -> ParseError | None:
    """CPython's message and position for a file LibCST rejects: usually the more precise.
    ``whole`` compiles to bytecode, which also rejects what only the compiler checks (a keyword
    argument repeated, ``return`` outside a function): what a fixed file must pass."""
    try:
        compile_quietly(text, 0 if whole else ast.PyCF_ONLY_AST)
    except SyntaxError as error:
        return ParseError(f"syntax error: {error.msg}", error.lineno, error.offset)
    except (ValueError, RecursionError, MemoryError):
        return None
    return None
