"""A large file parsed in sections gives the very tree one parse gives (devlint.engine.sections), and
sharing whitespace nodes while parsing (devlint.engine.interning) changes no tree either."""

from __future__ import annotations

import importlib.util
import random
from pathlib import Path

import libcst as cst
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from devlint.engine.interning import SHARED_KINDS, direct_nodes
from devlint.engine.lint import lint_text, parse
from devlint.engine.sections import parse_in_sections
from devlint.findings import Finding
from devlint.registry import select_rules


def _torch_directory() -> Path | None:
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


TORCH = _torch_directory()
needs_torch = pytest.mark.skipif(TORCH is None, reason="torch is not installed: no real files to cut")


def _assert_same_tree(text: str, section_chars: int, must_cut: bool = True) -> None:
    whole = cst.parse_module(text)
    stitched = parse_in_sections(text, cst.parse_module, section_chars)
    if must_cut:
        assert stitched is not None
    if stitched is not None:
        assert stitched.code == text
        assert whole.deep_equals(stitched)
    # What devlint uses either way: the stitched tree, or one parse where it could not cut.
    assert parse(text, section_chars=max(1, min(section_chars, len(text) // 3))).deep_equals(whole)


TOP_LEVEL = '''#!/usr/bin/env python
# a header comment

"""The module docstring."""
from __future__ import annotations

import torch  # trailing comment


# a comment before a function, after two blank lines
@decorator(1)
@other
def first(x):
    return x.cuda()
def second():  # no blank line before
    pass

    # an indented comment after a block: the block owns it


# a column-0 comment: the next statement owns it
if torch.cuda.is_available():
    device = "cuda"
else:
    device = "cpu"
x = 1; y = 2
z = (1 +
     2)
s = """a
multi-line string
"""
# the footer

'''

CLASS = '''import torch


class Trainer:
    """Many methods: cut between them."""

    scale = 2

    def a(self):
        return torch.ones(2).cuda()

    # a comment owned by b
    @property
    def b(self):
        return 1
    def c(self):
        x = [
            1,
            2,
        ]
        return x

    def d(self):
        pass
        # deeper comment: owned by d's block

    async def e(self):
        await f()

    def last(self):
        return 0
# after the class
'''

DISPLAYS = '''ops = [
    OpInfo("a", dtypes=(1, 2)),  # first
    OpInfo("b"),
    # a comment between elements
    OpInfo("c", skips=(DecorateInfo(device_type="cuda"),)),
    (OpInfo("parenthesized")),
    OpInfo("d"),
    OpInfo("last"),
]
table: dict[str, int] = {
    "a": 1,
    "b": {"nested": [1, 2, 3]},
    "c": (3),
    "d": 4,
    "e": 5,
}
names = {"x", "y", "z", "w"}
async def runner():
    total = 0
    total += 1
    await go(total)
    return total
'''

NESTED = '''class Outer:
    """A docstring and one huge nested class."""
    class Inner(
        Base,  # c
    ):  # header comment
        # leads a

        def a(self):
            return {"k": [1, 2, 3], "j": {"x": 1, "y": 2, "z": 3}}

        def b(self):
            pass
        def c(self): return 1

        class Deeper:
            x = 1

            def y(self):
                pass

            # leads z
            def z(self):
                pass

        def d(self):
            pass


meta = {
    "first": {
        (1, 2): (3, 4),
        (5, 6): (7, 8),
        # comment
        (9, 10): (11, 12),
    },
    "second": [
        [1, 2],
        [3, 4],
        [5, 6],
    ],
    "third": ({"paren": 1, "b": 2, "c": 3}),
    "last": {"a": 1, "b": 2, "c": 3},
}
class Short: pass
def body_on_the_header_line(): return 1
'''

TABS_AND_CRLF = "import torch\r\nclass A:\r\n\tdef f(self):\r\n\t\treturn 1\r\n\r\n\tdef g(self):\r\n\t\treturn 2\r\n\r\n\tdef h(self):\r\n\t\treturn 3\r\nx = [\r\n\t1,\r\n\t2,\r\n\t3,\r\n\t4,\r\n]"


@pytest.mark.parametrize("section_chars", [1, 40, 120, 300])
@pytest.mark.parametrize(
    "text", [TOP_LEVEL, CLASS, DISPLAYS, NESTED, TABS_AND_CRLF], ids=["top", "class", "displays", "nested", "tabs-crlf"]
)
def test_sections_stitch_into_the_tree_one_parse_gives(text: str, section_chars: int) -> None:
    _assert_same_tree(text, section_chars)


def test_form_feeds_and_unicode_do_not_shift_the_cuts() -> None:
    text = "x = 'é€𝄞'\n\x0c\ny = [\n    'ü',  # ß\n    '𝄞',\n    'z',\n]\ndef f():\n    return 1\n"
    _assert_same_tree(text, 1)


def test_a_file_cpython_rejects_is_parsed_whole() -> None:
    assert parse_in_sections("def f(:\n    pass\n" * 3, cst.parse_module, 1) is None


def test_statements_with_nothing_to_cut_still_give_the_same_tree() -> None:
    for text in ("x = 1\n", "x = f(\n" + "    1,\n" * 50 + ")\n", "x = [\n    1,\n    2\n]\n", "class A:\n    x = 1\n"):
        _assert_same_tree(text, 1, must_cut=False)


def test_indentation_that_differs_between_sections_is_never_stitched_wrongly() -> None:
    # The first section has no block (LibCST assumes four spaces), the second indents by two.
    text = "x = 1\n" * 20 + "def f():\n  return 1\n"
    _assert_same_tree(text, 30, must_cut=False)
    assert parse(text, section_chars=30).deep_equals(cst.parse_module(text))


def _module_source(draw: st.DrawFn) -> str:
    trivia = st.sampled_from(["", "\n", "# note\n", "\n\n", "    # indented\n"])
    simple = st.sampled_from(["x = 1\n", "y = torch.ones(2).cuda()\n", "import os\n", "a = b; c = d\n", 's = """x\ny"""\n'])
    element = st.sampled_from(
        ['    "k",\n', "    f(1, 2),\n", "    # c\n    3,\n", "    (4),\n", "    [5, 6],\n", "    [\n        7,\n        [8, 9],\n        10,\n    ],\n"]
    )
    method = st.sampled_from([
        "    def m(self):\n        return 1\n",
        "    @staticmethod\n    def s():\n        pass\n",
        "    v = 2\n",
        "    class N:\n        # n\n        a = 1\n\n        def b(self):\n            pass\n        c = {\n            'd': [1, 2],\n            'e': {'f': 3, 'g': 4},\n        }\n",
    ])
    parts: list[str] = []
    for kind in draw(st.lists(st.sampled_from(["simple", "class", "list", "def"]), min_size=1, max_size=8)):
        parts.append(draw(trivia).replace("    ", "") if not parts else draw(trivia).replace("    # indented\n", "# top\n"))
        if kind == "simple":
            parts.append(draw(simple))
        elif kind == "class":
            body = draw(st.lists(st.tuples(st.sampled_from(["", "\n", "    # c\n"]), method), min_size=1, max_size=6))
            parts.append("class C:\n" + "".join(a + b for a, b in body))
        elif kind == "list":
            parts.append("v = [\n" + "".join(draw(st.lists(element, min_size=1, max_size=8))) + "]\n")
        else:
            parts.append("def g():\n    x = 1\n\n    return x\n")
    return "".join(parts)


@settings(max_examples=60, deadline=None)
@given(source=st.composite(_module_source)(), section_chars=st.integers(min_value=1, max_value=200))
def test_any_cut_gives_the_same_tree(source: str, section_chars: int) -> None:
    try:
        whole = cst.parse_module(source)
    except cst.ParserSyntaxError:
        return
    assert parse(source, section_chars=section_chars).deep_equals(whole)


@needs_torch
def test_real_files_cut_into_small_sections_give_the_same_tree() -> None:
    assert TORCH is not None
    files = sorted(path for path in TORCH.rglob("*.py") if 2_000 < path.stat().st_size < 120_000)
    cut = 0
    for path in random.Random(20261121).sample(files, 25):
        text = path.read_text(encoding="utf-8")
        _assert_same_tree(text, 700, must_cut=False)
        cut += parse_in_sections(text, cst.parse_module, 700) is not None
    assert cut >= 20


@needs_torch
@pytest.mark.parametrize(
    "name",
    [
        "sparse/_triton_ops_meta.py",  # one dict of dicts: cut between elements
        "testing/_internal/distributed/distributed_test.py",  # one huge class: cut between methods
    ],
)
def test_torchs_largest_statements_give_the_same_tree(name: str) -> None:
    assert TORCH is not None
    path = TORCH / name
    if not path.exists():
        pytest.skip(f"{name} is not in this torch version")
    _assert_same_tree(path.read_text(encoding="utf-8"), 16 * 1024)


def test_a_tree_that_does_not_print_back_is_dropped_for_one_parse(monkeypatch: pytest.MonkeyPatch) -> None:
    # Large enough to be parsed in sections by default.
    text = "import torch\n" + f"x = '{'a' * 300_000}'\n" + "y = torch.ones(2).cuda()\n"
    rules = select_rules()
    expected = lint_text(text, "m.py", rules)

    def broken(text: str, parse: object, section_chars: int, tree: object = None) -> cst.Module:
        # A stitching bug: one statement lost.
        module = cst.parse_module(text)
        return module.with_changes(body=module.body[1:])

    monkeypatch.setattr("devlint.engine.lint.parse_in_sections", broken)
    found: list[Finding] = lint_text(text, "m.py", rules)
    assert [(f.code, f.location) for f in found] == [(f.code, f.location) for f in expected] and expected


def test_shared_trivia_gives_the_same_tree_and_puts_the_classes_back() -> None:
    text = CLASS + DISPLAYS + TOP_LEVEL
    with direct_nodes() as direct:
        shared = direct(cst.parse_module)(text)
    assert shared.deep_equals(cst.parse_module(text))
    assert all(getattr(cst, kind.__name__) is kind for kind in SHARED_KINDS)
    spaces = [n for n in _whitespace(shared) if n.value == " "]
    assert len(spaces) > 10 and len({id(n) for n in spaces}) == 1


def test_shared_trivia_puts_the_classes_back_after_an_error() -> None:
    with pytest.raises(cst.ParserSyntaxError):
        with direct_nodes() as direct:
            direct(cst.parse_module)("def f(:\n")
    assert all(isinstance(getattr(cst, kind.__name__), type) for kind in SHARED_KINDS)


def _whitespace(module: cst.Module) -> list[cst.SimpleWhitespace]:
    found: list[cst.SimpleWhitespace] = []

    class Collect(cst.CSTVisitor):
        def visit_SimpleWhitespace(self, node: cst.SimpleWhitespace) -> None:
            found.append(node)

    module.visit(Collect())
    return found


@pytest.mark.parametrize("path", sorted((Path(__file__).resolve().parent.parent / "fixtures").rglob("*.py")), ids=lambda p: p.stem)
def test_the_screen_keeps_the_tree_it_read(path: Path) -> None:
    """The engine screens through ``screened`` to keep CPython's tree for cutting sections: the
    tree must be the text's, and the rules ``screen``'s."""
    import ast

    from devlint.gate.screen import screen, screened

    text = path.read_text()
    rules = select_rules()
    for gate in (True, False):
        found = screened(text, rules, gate)
        assert found.rules == screen(text, rules, gate)
        if found.tree is not None:
            assert ast.dump(found.tree) == ast.dump(ast.parse(text))
