"""A batch check prints only the statements that hold its findings and finds them in the text
(devlint.engine.positions._InPlace): every span must be the one a print of the whole module
gives, whatever repeats, however the statement is decorated, commented or nested."""

from __future__ import annotations

import ast
from pathlib import Path

import libcst as cst
import pytest

from devlint.analysis.tree import children
from devlint.engine.lint import parse
from devlint.engine.positions import positions, top_rows
from devlint.fixes import LineIndex

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


def code_of(module: cst.Module, node: cst.CSTNode) -> str:
    return module.code_for_node(node)


@pytest.mark.parametrize("name", TEXTS)
def test_statements_printed_alone_give_the_spans_of_one_print(name: str) -> None:
    text = TEXTS[name]
    assert _compare(text, top_rows(ast.parse(text))) > 5
    # Without CPython's rows, a repeated top-level statement is placed by one print.
    assert _compare(text, None) > 5


def test_rows_that_do_not_match_the_module_are_not_used() -> None:
    # Rows of another text: too few are ignored, and a row whose text is not the statement's
    # print is checked against the text and not trusted. (CPython and LibCST read the same
    # grammar, so rows of the text itself always match its statements.)
    text = DECORATED
    rows = top_rows(ast.parse(text))
    assert _compare(text, rows[:-1]) > 5
    assert _compare(text, tuple(row + 1 for row in rows)) > 5


def test_top_rows_join_statements_on_one_line_and_start_at_decorators() -> None:
    assert top_rows(ast.parse("a = 1; b = 2\n\n\n@d\n\n@e\ndef f():\n    pass\nc = 3\n")) == (1, 4, 9)


def test_torch_sources_give_the_spans_of_one_print() -> None:
    torch = pytest.importorskip("torch")
    root = Path(torch.__file__).parent
    files = [root / "cuda" / "memory.py", root / "amp" / "grad_scaler.py", root / "nn" / "parallel" / "data_parallel.py"]
    for path in files:
        text = path.read_text()
        assert _compare(text, top_rows(ast.parse(text))) > 100
