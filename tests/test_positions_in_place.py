"""A batch check prints only the statements that hold its findings and finds them in the text
(devlint.engine.positions._InPlace): every span must be the one a print of the whole module
gives, whatever repeats, however the statement is decorated, commented or nested."""

from __future__ import annotations

import ast
from pathlib import Path

import libcst as cst
import pytest

from devlint.analysis.tree import children
from devlint.engine.lint import fix_text, lint_text, parse
from devlint.engine.positions import _InPlace, positions, statement_rows, statements_in_order
from devlint.fixes import LineIndex
from devlint.registry import rule_by_code
from devlint.settings import FixSettings

# Two functions of the same lines, then a top-level line twice: every print repeats.
_BLOCK = """

def block_{i}():
    x = y.cuda()
    x = y.cuda()
    if x:
        x = y.cuda()
    elif y:
        x = y.cuda()
    else:
        x = y.cuda()
"""
REPEATED = "import torch\n" + _BLOCK.format(i=0) + _BLOCK.format(i=1) + "x = y.cuda(); z = y.cuda()\n" * 2

DECORATED = """\
# header comment

import torch


# leading comment
@decorator(
    "cuda",
)
# between decorators
@other
def f(x):
    # inside
    return x.cuda()


class A:
    @staticmethod
    def g(x):
        return x.cuda()

    @staticmethod
    def g(x):
        return x.cuda()


@other
def f(x):
    # inside
    return x.cuda()
"""

_INNER = """\
    class Inner:
        def method(self):
            with torch.no_grad():
                for batch in loader:
                    batch = batch.cuda()
                    batch = batch.cuda()
"""
NESTED = "class Outer:\n" + _INNER * 2 + """\
try:
    x = y.cuda()
except Exception:
    x = y.cuda()
finally:
    x = y.cuda()
"""

NO_FINAL_NEWLINE = "import torch\nx = y.cuda()\nx = y.cuda()"
TABS = "if True:\n\tx = y.cuda()\n\tif x:\n\t\tx = y.cuda()\n\tx = y.cuda()\n"
CRLF = "import torch\r\nx = y.cuda()\r\nx = y.cuda()\r\n"

TEXTS = {
    "repeated": REPEATED,
    "decorated": DECORATED,
    "nested": NESTED,
    "no-final-newline": NO_FINAL_NEWLINE,
    "tabs": TABS,
    "crlf": CRLF,
}


def _parents(module: cst.Module) -> dict[cst.CSTNode, cst.CSTNode]:
    parents: dict[cst.CSTNode, cst.CSTNode] = {}
    stack: list[cst.CSTNode] = [module]
    while stack:
        node = stack.pop()
        for child in children(node):
            parents[child] = node
            stack.append(child)
    return parents


def _asked(module: cst.Module, parents: dict[cst.CSTNode, cst.CSTNode]) -> list[cst.CSTNode]:
    """What findings ask for: calls, names and statements at every depth."""
    kinds = (cst.Call, cst.Name, cst.BaseStatement, cst.Decorator, cst.Arg)
    return [node for node in parents if isinstance(node, kinds)]


def _compare(text: str, rows: tuple[int, ...] | None) -> int:
    module = parse(text)
    lines = LineIndex(text)
    parents = _parents(module)
    asked = _asked(module, parents)
    whole = positions(module, lines, [*asked, *module.body])
    # Asked together (the findings of one check), then one at a time (placement's lookups).
    together = positions(module, lines, asked, parent_of=parents.get, rows=rows)
    alone = positions(module, lines, [], parent_of=parents.get, rows=rows)
    for node in asked:
        assert together[node] == whole[node], (type(node).__name__, code_of(module, node))
        assert alone[node] == whole[node], (type(node).__name__, code_of(module, node))
    return len(asked)


def _printed_alone(text: str) -> bool:
    """Whether the statements holding the nodes were placed without printing the module."""
    module = parse(text)
    parents = _parents(module)
    return _InPlace(module, LineIndex(text), parents.get, statement_rows(ast.parse(text), text)).spans(_asked(module, parents)) is not None


def code_of(module: cst.Module, node: cst.CSTNode) -> str:
    return module.code_for_node(node)


@pytest.mark.parametrize("name", TEXTS)
def test_statements_printed_alone_give_the_spans_of_one_print(name: str) -> None:
    text = TEXTS[name]
    assert _compare(text, statement_rows(ast.parse(text), text)) > 5
    # Placed by rows, not printed whole (but where the text has `\r` or no final newline).
    assert _printed_alone(text) or "\r" in text or not text.endswith("\n")
    # Without CPython's rows, the module is printed whole.
    assert _compare(text, None) > 5


def test_rows_that_do_not_match_the_module_are_not_used() -> None:
    # Rows of another text: too few are ignored, and a row whose text is not the statement's
    # print is checked against the text and not trusted. (CPython and LibCST read the same
    # grammar, so rows of the text itself always match its statements.)
    text = DECORATED
    rows = statement_rows(ast.parse(text), text)
    assert _compare(text, rows[:-1]) > 5
    assert _compare(text, tuple(row + 1 for row in rows)) > 5


ROWS = """\
a = 1; b = 2
if a: b = 3
else: b = 4


@d

@e
def f():
    if a:
        pass
    elif b:
        pass
    else:
        x = 1; y = 2
    try: pass
    except E: pass
    return (
        1)
c = 3
"""


def test_statement_rows_pair_with_libcsts_statements() -> None:
    # `;` and one-line suites are one statement; a decorated def starts at its first decorator;
    # an `elif` is no statement of its own.
    rows = statement_rows(ast.parse(ROWS), ROWS)
    assert rows == (1, 2, 6, 10, 11, 13, 15, 16, 18, 20)
    assert len(statements_in_order(parse(ROWS))) == len(rows)


def test_torch_sources_give_the_spans_of_one_print() -> None:
    torch = pytest.importorskip("torch")
    root = Path(torch.__file__).parent
    files = [root / "cuda" / "memory.py", root / "amp" / "grad_scaler.py", root / "nn" / "parallel" / "data_parallel.py"]
    for path in files:
        text = path.read_text()
        assert _compare(text, statement_rows(ast.parse(text), text)) > 100
        assert _printed_alone(text)


# The `)` of each `from m import (...)` that ends alike is one shared node: a range that ends at
# it must end where its own statement prints it. No final newline: the module is printed whole.
SHARED_ENDS = "from a import (\n    b,\n)\nfrom c import (\n    d,\n)\n\ndef f():\n    from e import (\n        g,\n    )\n    from h import (\n        i,\n    )\n    return i"


@pytest.mark.parametrize("text", [SHARED_ENDS, SHARED_ENDS + "\n"])
def test_nodes_nobody_asked_for_end_where_their_statement_prints_them(text: str) -> None:
    module = parse(text)
    found = positions(module, LineIndex(text), [])
    inner = module.body[2].body.body  # type: ignore[attr-defined]
    rows = [(found[s].start.line, found[s].end.line) for s in (*module.body[:2], *inner[:2])]
    assert rows == [(1, 3), (4, 6), (9, 11), (12, 14)]


def test_a_crlf_text_is_placed_by_rows_where_libcst_does_not_print_it_back() -> None:
    # LibCST's print drops a line that holds only a `\` continuation: a whole print of the
    # module is not the text, its rows shift, and the fix was refused. `\r\n` is a line ending
    # like `\n`: statements are placed by CPython's rows and checked against the text.
    text = "import torch\r\nx = 1\r\n\\\r\ny = torch.ones(2).cuda()\r\n"
    assert _printed_alone(text)
    (finding,) = lint_text(text, "t.py", [rule_by_code("DEV101")])
    assert (finding.location.row, finding.location.column) == (4, 18)
    fixed = fix_text(text, "t.py", [rule_by_code("DEV101")], FixSettings()).text
    assert fixed.endswith("\\\r\ny = torch.ones(2).to(device)\r\n")
