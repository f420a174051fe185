"""Share LibCST's whitespace and punctuation nodes while parsing, and skip the checks LibCST
makes of every node it builds: fewer objects, faster parses.

LibCST's native parser builds every node by calling the class found on the ``libcst`` module,
and most nodes of a file are whitespace and punctuation: a third of a typical file's nodes are
``SimpleWhitespace(" ")`` and ``SimpleWhitespace("")``. Nodes are immutable, these kinds hold
only strings, flags and other such nodes, and nothing in devlint looks them up by identity (the
walker skips them, positions are never asked of them), so equal ones can be one object. While a
parse runs, the classes on the module are swapped for factories that hand out one instance per
distinct value.

Every node LibCST builds checks its own fields (``CSTNode._validate``: an identifier is one, a
whitespace node holds only whitespace, parameters stand in a legal order), which catches a tree
put together by hand. A tree the parser built from text obeys them already (its grammar admits
nothing else): the checks are 7% of a parse with the nodes above shared, and are skipped while
LibCST parses. Nodes made outside a parse (a fix's) are checked as before.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import libcst as cst

SHARED_KINDS: tuple[type[cst.CSTNode], ...] = (
    cst.SimpleWhitespace, cst.Newline, cst.Comment, cst.TrailingWhitespace, cst.EmptyLine,
    cst.ParenthesizedWhitespace, cst.Comma, cst.Dot, cst.Colon, cst.Semicolon, cst.AssignEqual,
    cst.LeftParen, cst.RightParen, cst.LeftSquareBracket, cst.RightSquareBracket,
    cst.LeftCurlyBrace, cst.RightCurlyBrace,
)


def _factory(kind: type[cst.CSTNode]) -> Callable[..., cst.CSTNode]:
    made: dict[tuple[Any, ...], cst.CSTNode] = {}
    # The parser passes fields by keyword, and almost always hashable ones: ~300,000 calls a
    # megabyte (two thirds of them ``SimpleWhitespace(value=...)``), keyed by the fields as given.
    by_fields: dict[tuple[tuple[str, Any], ...], cst.CSTNode] = {}

    def make(*args: Any, **fields: Any) -> cst.CSTNode:
        if not args:
            given = tuple(fields.items())
            try:
                node = by_fields.get(given)
            except TypeError:  # a list among the fields
                pass
            else:
                if node is None:
                    node = by_fields[given] = kind(**fields)
                return node
        # Children are shared nodes themselves: identity (a node's hash) tells equal ones apart.
        key = (
            tuple([tuple(value) if type(value) is list else value for value in args]),
            tuple([(name, tuple(value) if type(value) is list else value) for name, value in fields.items()]),
        )
        node = made.get(key)
        if node is None:
            node = made[key] = kind(*args, **fields)
        return node

    return make


@contextmanager
def parser_nodes_unchecked() -> Iterator[None]:
    """Within the block, nodes skip ``CSTNode._validate`` (only ``CSTNode`` defines
    ``__post_init__``, which calls it)."""
    checked = cst.CSTNode.__post_init__
    cst.CSTNode.__post_init__ = _unchecked  # type: ignore[method-assign]
    try:
        yield
    finally:
        cst.CSTNode.__post_init__ = checked  # type: ignore[method-assign]


def _unchecked(node: cst.CSTNode) -> None:
    return None


@contextmanager
def shared_trivia() -> Iterator[None]:
    """Within the block, ``libcst.parse_module`` shares equal whitespace and punctuation nodes."""
    saved = {kind.__name__: kind for kind in SHARED_KINDS}
    try:
        for name, kind in saved.items():
            setattr(cst, name, _factory(kind))
        yield
    finally:
        for name, kind in saved.items():
            setattr(cst, name, kind)
