"""LibCST's nodes built directly while devlint parses (devlint.engine.interning): each node is the
one the class' own ``__init__`` makes, the tree is the one a plain parse gives, and the classes
are LibCST's own everywhere but inside its native parser."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import libcst as cst
import pytest

from devlint.engine.interning import SHARED_KINDS, _constructor, _constructors, _plain_node_class, direct_nodes, parser_nodes_unchecked
from devlint.engine.lint import parse

ROOT = Path(__file__).resolve().parent.parent
FILES = sorted((ROOT / "fixtures").rglob("*.py"))[::3]
SOURCES = sorted(path for folder in ("devlint", "rules") for path in (ROOT / folder).rglob("*.py"))


def _nodes(module: cst.Module) -> list[cst.CSTNode]:
    found: list[cst.CSTNode] = []

    class Collect(cst.CSTVisitor):
        def on_visit(self, node: cst.CSTNode) -> bool:
            found.append(node)
            return True

    module.visit(Collect())
    return found


def _slots(node: cst.CSTNode) -> list[tuple[str, object]]:
    return [(field.name, getattr(node, field.name)) for field in dataclasses.fields(node)]


def _same(one: object, other: object) -> bool:
    """Same type and the same value, slot by slot for a node, item by item for a sequence (nodes
    made by a default factory are new objects: equal trees)."""
    if type(one) is not type(other):
        return False
    if isinstance(one, cst.CSTNode):
        return all(_same(mine, theirs) for (_, mine), (_, theirs) in zip(_slots(one), _slots(other)))  # type: ignore[arg-type]
    if isinstance(one, (list, tuple)):
        return len(one) == len(other) and all(map(_same, one, other))  # type: ignore[arg-type]
    return one == other


def test_every_constructor_makes_what_the_class_makes() -> None:
    """Rebuilt from the fields of nodes of real files, by keyword as the parser calls, and with
    each field left to its default: the same type and the same value in every slot."""
    built = _constructors()
    seen: set[type] = set()
    for path in SOURCES[:40]:
        for node in _nodes(cst.parse_module(path.read_text(encoding="utf-8"))):
            kind = type(node)
            if kind.__name__ not in built.kinds or kind in seen:
                continue
            make = _constructor(kind, None)
            seen.add(kind)
            fields = dict(_slots(node))
            direct, plain = make(**fields), kind(**fields)
            assert type(direct) is kind and _same(direct, plain), kind
            required = {
                f.name: fields[f.name]
                for f in dataclasses.fields(kind)
                if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
            }
            with parser_nodes_unchecked():
                # Unchecked: defaults may leave a node LibCST's checks refuse (a bare `try`).
                assert _same(make(**required), kind(**required)), kind
    assert len(seen) > 60


def test_the_direct_parse_gives_the_plain_tree() -> None:
    assert FILES and SOURCES
    for path in [*FILES, *SOURCES[::4]]:
        text = path.read_text(encoding="utf-8")
        try:
            plain = cst.parse_module(text)
        except cst.ParserSyntaxError:
            continue
        direct = parse(text)
        assert direct.deep_equals(plain) and direct.code == text, path
        assert [type(node) for node in _nodes(direct)] == [type(node) for node in _nodes(plain)], path


def test_the_classes_are_libcsts_between_parses_and_after() -> None:
    real = dict(_constructors().kinds)
    seen_between: list[bool] = []

    def sections(source: str) -> cst.Module:
        # A caller's parser of sections runs devlint's code around LibCST's calls.
        seen_between.append(all(getattr(cst, name) is kind for name, kind in real.items()))
        return cst.parse_module(source)

    with direct_nodes() as direct:
        module = direct(sections)("x = 1\n")
        seen_between.append(isinstance(module.body[0], cst.SimpleStatementLine))
    assert seen_between == [False, True]
    assert all(getattr(cst, name) is kind for name, kind in real.items())
    assert all(not table for table in _constructors().tables.values())


def test_shared_nodes_are_shared_within_the_block_only() -> None:
    with direct_nodes() as direct:
        first = direct(cst.parse_module)("a = 1\n")
        second = direct(cst.parse_module)("b = 2\n")
    third = parse("c = 3\n")
    space = lambda module: module.body[0].body[0].targets[0].whitespace_before_equal  # noqa: E731
    assert space(first) is space(second) and space(third) is not space(first)
    assert {kind.__name__ for kind in SHARED_KINDS} == set(_constructors().tables)


def test_a_class_of_another_shape_keeps_its_own_construction() -> None:
    @dataclasses.dataclass(frozen=True)
    class Checked(cst.Name):
        def __post_init__(self) -> None:
            raise AssertionError("checked")

    assert _plain_node_class(cst.Name) and not _plain_node_class(Checked)
    assert not _plain_node_class(cst.BaseExpression) and not _plain_node_class(int)


def test_a_failed_parse_leaves_the_classes_and_the_checks() -> None:
    from devlint.gate.syntax import ParseError

    with pytest.raises(ParseError):
        parse("def f(:\n")
    assert all(isinstance(getattr(cst, name), type) for name in _constructors().kinds)
    with pytest.raises(cst.CSTValidationError):
        cst.Name("not a name")
