"""Build LibCST's nodes for less while parsing: set their fields directly, share the whitespace
and punctuation ones, and skip the checks LibCST makes of every node it builds.

LibCST's native parser builds every node by calling the class found on the ``libcst`` module,
by keyword. A node is a frozen dataclass with slots: its generated ``__init__`` sets each field
through ``object.__setattr__`` and then calls ``__post_init__``, which checks the node. Around
each native call the classes on the module are swapped for constructors that make the instance
and set its slots through their descriptors (the dataclass' own defaults where a field is not
given, its own signature, no check): the node is the very one ``__init__`` makes, for 10-15% less
time per parse (measured on torch's 1.3 MiB ``common_methods_invocations.py``). Each is
written from its class' dataclass fields, once per process, when first needed
(``_Constructors``); a class whose shape is not the plain one (its own ``__post_init__`` or
``__init__``, a field that is not a slot) keeps its class.

Most nodes of a file are whitespace and punctuation: a third of a typical file's nodes are
``SimpleWhitespace(" ")`` and ``SimpleWhitespace("")``. Nodes are immutable, these kinds hold only
strings, flags and other such nodes, and nothing in devlint looks them up by identity (the walker
skips them, positions are never asked of them), so equal ones are one object for the whole parse
(a third less memory for the tree).

Every node LibCST builds checks its own fields (``CSTNode._validate``: an identifier is one, a
whitespace node holds only whitespace, parameters stand in a legal order), which catches a tree
put together by hand. A tree the parser built from text obeys them already (its grammar admits
nothing else): the constructors skip them, and so does a class kept, while LibCST parses. Nodes
made outside a parse (a fix's) are checked as before.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import cache
from typing import Any

import libcst as cst

SHARED_KINDS: tuple[type[cst.CSTNode], ...] = (
    cst.SimpleWhitespace, cst.Newline, cst.Comment, cst.TrailingWhitespace, cst.EmptyLine,
    cst.ParenthesizedWhitespace, cst.Comma, cst.Dot, cst.Colon, cst.Semicolon, cst.AssignEqual,
    cst.LeftParen, cst.RightParen, cst.LeftSquareBracket, cst.RightSquareBracket,
    cst.LeftCurlyBrace, cst.RightCurlyBrace,
)

Parse = Callable[[str], cst.Module]


class _Constructors:
    """The replaced classes, by their names on ``libcst``, and their constructors, each written
    the first time a parse builds a node of its class (~0.1 ms each: a small file's parse needs a
    few dozen of the 172, which would take ~20 ms to write at once); the tables through which the
    shared kinds' constructors hand out one node per distinct value (emptied after each parse:
    they hold the nodes)."""

    def __init__(self) -> None:
        self.kinds = {name: kind for name, kind in vars(cst).items() if _plain_node_class(kind) and kind.__name__ == name}
        shared = set(SHARED_KINDS)
        self.tables: dict[str, dict[tuple[Any, ...], cst.CSTNode]] = {name: {} for name, kind in self.kinds.items() if kind in shared}
        self._written: dict[str, Callable[..., cst.CSTNode]] = {}
        self._first_use = {name: self._writer(name) for name in self.kinds}

    def installed(self) -> Iterator[tuple[str, Callable[..., cst.CSTNode]]]:
        """What stands on ``libcst`` while the native parser runs."""
        for name in self.kinds:
            yield name, self._written.get(name) or self._first_use[name]

    def _writer(self, name: str) -> Callable[..., cst.CSTNode]:
        def first_use(*args: Any, **fields: Any) -> cst.CSTNode:
            make = self._written[name] = _constructor(self.kinds[name], self.tables.get(name))
            setattr(cst, name, make)
            return make(*args, **fields)

        return first_use


@cache
def _constructors() -> _Constructors:
    # One for the process: what it writes is a pure function of the installed LibCST's classes.
    return _Constructors()


def _plain_node_class(kind: object) -> bool:
    """A concrete node class whose ``__init__`` is the dataclass' and sets slots, checked by
    ``CSTNode.__post_init__`` alone: what ``_constructor`` rebuilds."""
    # The MRO, not issubclass: LibCST's classes are ABCs, whose first subclass checks cost ~30 us.
    if not (isinstance(kind, type) and cst.CSTNode in kind.__mro__ and dataclasses.is_dataclass(kind)):
        return False
    if inspect.isabstract(kind) or kind.__post_init__ is not cst.CSTNode.__post_init__:  # type: ignore[attr-defined]
        return False
    init = kind.__dict__.get("__init__")
    if init is None or init.__qualname__ != f"{kind.__qualname__}.__init__" or init.__code__.co_filename != "<string>":
        return False
    fields = dataclasses.fields(kind)
    return all(type(kind.__dict__.get(field.name, getattr(kind, field.name, None))) is _SLOT for field in fields)


_SLOT = type(cst.Name.value)  # type: ignore[attr-defined]


def _constructor(kind: type[cst.CSTNode], table: dict[tuple[Any, ...], cst.CSTNode] | None) -> Callable[..., cst.CSTNode]:
    """A function taking what ``kind.__init__`` takes and returning the node it makes, unchecked;
    with ``table``, the node already made from the same fields where there is one."""
    fields = dataclasses.fields(kind)
    names = [field.name for field in fields]
    space: dict[str, Any] = {"new": object.__new__, "kind": kind, "table": table, "MISSING": dataclasses.MISSING}
    parameters = []
    keyword_only = False
    body = []
    for index, field in enumerate(fields):
        if field.kw_only and not keyword_only:
            parameters.append("*")
            keyword_only = True
        if field.default is not dataclasses.MISSING:
            space[f"default{index}"] = field.default
            parameters.append(f"{field.name}=default{index}")
        elif field.default_factory is not dataclasses.MISSING:
            space[f"factory{index}"] = field.default_factory
            parameters.append(f"{field.name}=MISSING")
            body.append(f"    if {field.name} is MISSING:\n        {field.name} = factory{index}()")
        else:
            parameters.append(field.name)
    lines = [f"def make({', '.join(parameters)}):", *body]
    if table is not None:
        space["key_of"] = _key
        lines += [
            f"    key = ({''.join(name + ', ' for name in names)})",
            "    try:",
            "        node = table.get(key)",
            "    except TypeError:",
            "        key = key_of(key)",
            "        node = table.get(key)",
            "    if node is not None:",
            "        return node",
        ]
    lines.append("    node = new(kind)")
    for index, name in enumerate(names):
        space[f"set{index}"] = getattr(kind, name).__set__
        lines.append(f"    set{index}(node, {name})")
    if table is not None:
        lines.append("    table[key] = node")
    lines.append("    return node")
    exec("\n".join(lines), space)  # noqa: S102 - our own text, from the dataclass' fields
    return space["make"]  # type: ignore[no-any-return]


def _key(values: tuple[Any, ...]) -> tuple[Any, ...]:
    # Children are shared nodes themselves: identity (a node's hash) tells equal ones apart; a
    # list (of empty lines), unhashable, is keyed by its items.
    return tuple([tuple(value) if type(value) is list else value for value in values])


@contextmanager
def direct_nodes() -> Iterator[Callable[[Parse], Parse]]:
    """Within the block, ``wrap(parse)`` is ``parse`` (``libcst.parse_module`` or a caller's
    parser of sections) building its nodes directly, the shared kinds shared across every call.
    The classes are swapped only while LibCST's native parser runs: code between two parses
    (stitching sections) sees the real classes."""
    built = _constructors()

    def wrap(parse: Parse) -> Parse:
        def parsed(source: str) -> cst.Module:
            for name, make in built.installed():
                setattr(cst, name, make)
            try:
                return parse(source)
            finally:
                for name, kind in built.kinds.items():
                    setattr(cst, name, kind)

        return parsed

    try:
        with parser_nodes_unchecked():
            yield wrap
    finally:
        for table in built.tables.values():
            table.clear()


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
