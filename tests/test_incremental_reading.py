"""What the screen reads of a document again after an edit (devlint.gate.incremental) is what a
whole reading gives: CPython's tree (positions included, or None exactly where a whole compile
fails), the gate's facts, the nesting verdict and the project-imports scan."""

from __future__ import annotations

import ast
import random
from pathlib import Path

import pytest

from devlint.gate import incremental
from devlint.gate.facts import collect
from devlint.gate.incremental import CPythonTrees, StatementMemo
from devlint.gate.nesting import call_with_deep_stack, nesting_problem
from devlint.gate.syntax import cpython_tree
from devlint.run.project_imports import _merged, scan_imports

ROOT = Path(__file__).resolve().parent.parent

BASE = '''\
import torch


def first(x):
    y = x.cuda()
    return y


@decorated
def second(a,
           b):
    if a:
        return b
    return a


x = 1; y = 2
z = (x +
     y)


class Model:
    def forward(self, x):
        return x
'''


def dump(tree: ast.AST | None) -> str | None:
    return None if tree is None else ast.dump(tree, include_attributes=True)


def rebuilt(before: str, after: str) -> ast.Module | None:
    trees = CPythonTrees()
    assert trees.tree("doc", before) is not None
    return trees.tree("doc", after)


def edited(old: str, new: str, text: str = BASE) -> str:
    assert text.count(old) == 1, old
    return text.replace(old, new)


# Each edit is one a part compiled alone could get wrong, were the cuts or the checks wrong.
EDITS = {
    "inside a function": edited("y = x.cuda()", "y = x.to('cuda')"),
    "a row added inside a function": edited("    return y\n", "    y = y + 1\n    return y\n"),
    "rows removed": edited("    if a:\n        return b\n", ""),
    "an indented row in the empty rows after a function continues it": edited(
        "    return y\n\n\n", "    return y\n\n    y = 2\n\n"
    ),
    "an indented comment between functions": edited("    return y\n\n\n", "    return y\n    # note\n\n"),
    "else after the if of a function": edited("        return b\n    return a\n", "        return b\n    else:\n        return a\n"),
    "else at the top level after a function": edited("    return a\n\n\n", "    return a\nelse:\n    pass\n\n"),
    "a decorator added": edited("\n\nclass Model:", "\n\n@dataclass\nclass Model:"),
    "a decorator removed": edited("@decorated\n", ""),
    "an unclosed bracket": edited("y = x.cuda()", "y = x.cuda("),
    "a bracket closed elsewhere": edited("z = (x +\n     y)", "z = (x +\n     y"),
    "an unterminated string": edited("return y\n", 'return """y\n'),
    "a triple-quoted string opened and closed": edited("y = x.cuda()", 'y = """\n\ndef g():\n"""'),
    "a statement on the row of two": edited("x = 1; y = 2", "x = 1; y = 3"),
    "a backslash joining the next row": edited("    return y\n", "    return y \\\n"),
    "a backslash on the last row of a statement": edited("x = 1; y = 2\n", "x = 1; y = 2 + \\\n0\n"),
    "a statement joined onto the row before": edited("x = 1; y = 2\nz = (", "x = 1; y = 2; z = ("),
    "a new statement between functions": edited("\n\n@decorated", "\nw = 3\n\n@decorated"),
    "a new last statement": BASE + "print(first)\n",
    "text typed onto the next statement's row": edited("    return y\n\n\n@", "    return y\n\n\nq = (\n@"),
    "a new first statement": "import os\n" + BASE,
    "the last newline removed": BASE.rstrip("\n"),
    "everything removed": "",
    "only a comment left": "# nothing\n",
    "windows line ends": BASE.replace("\n", "\r\n"),
    "a class body edited": edited("        return x\n", "        return x.cuda()\n"),
    "dedented into the top level": edited("    return y\n", "return y\n"),
    "a tab for indentation": edited("    return y\n", "\treturn y\n"),
    "a null byte": edited("y = x.cuda()", "y = x.cuda()\0"),
    "a non-ASCII name": edited("y = x.cuda()", "é = x.cuda()"),
}


@pytest.mark.parametrize("name", list(EDITS))
def test_an_edit_gives_the_tree_a_whole_compile_gives(name: str) -> None:
    after = EDITS[name]
    assert dump(rebuilt(BASE, after)) == dump(cpython_tree(after))


@pytest.mark.parametrize("name", list(EDITS))
def test_an_edit_undone_gives_the_first_tree_again(name: str) -> None:
    trees = CPythonTrees()
    trees.tree("doc", BASE)
    trees.tree("doc", EDITS[name])
    assert dump(trees.tree("doc", BASE)) == dump(cpython_tree(BASE))


def test_a_statement_typed_on_the_empty_row_a_backslash_joins_is_joined() -> None:
    before = edited("x = 1; y = 2\n", "x = 1; y = 2 \\\n\n")
    after = edited("x = 1; y = 2 \\\n\n", "x = 1; y = 2 \\\nw = 0\n", before)
    assert cpython_tree(before) is not None
    assert dump(rebuilt(before, after)) == dump(cpython_tree(after))


def test_an_edit_inside_a_function_compiles_only_that_function(monkeypatch: pytest.MonkeyPatch) -> None:
    trees = CPythonTrees()
    trees.tree("doc", BASE)
    compiled: list[str] = []
    real = incremental.compile_quietly

    def spy(source: str, flags: int) -> object:
        compiled.append(source)
        return real(source, flags)

    monkeypatch.setattr(incremental, "compile_quietly", spy)
    monkeypatch.setattr(incremental, "cpython_tree", lambda text: pytest.fail("compiled the whole text"))
    after = EDITS["inside a function"]
    assert dump(trees.tree("doc", after)) == dump(cpython_tree(after))
    assert compiled == ["\n\ndef first(x):\n    y = x.to('cuda')\n    return y\n"]


def test_a_syntax_error_keeps_the_last_good_tree_for_the_next_edit(monkeypatch: pytest.MonkeyPatch) -> None:
    trees = CPythonTrees()
    trees.tree("doc", BASE)
    assert trees.tree("doc", EDITS["an unclosed bracket"]) is None
    monkeypatch.setattr(incremental, "cpython_tree", lambda text: pytest.fail("compiled the whole text"))
    after = EDITS["inside a function"]
    assert dump(trees.tree("doc", after)) == dump(cpython_tree(after))


def test_documents_are_kept_apart_and_only_the_latest_few() -> None:
    trees = CPythonTrees(keep=2)
    for key in ("a", "b", "c"):
        trees.tree(key, BASE.replace("x = 1", f"x = '{key}'"))
    assert dump(trees.tree("b", BASE)) == dump(cpython_tree(BASE))
    assert set(trees._kept) == {"b", "c"}


def _random_edit(text: str, rng: random.Random) -> str:
    lines = text.splitlines(keepends=True) or [""]
    at = rng.randrange(len(text) + 1)
    kind = rng.randrange(5)
    if kind == 0:
        piece = rng.choice(["\n", "\n    ", "x", "(", ")", '"""', "'", "\\\n", "else:\n", "    y = 1\n", "@d\n", "#", "\t", "é", ":"])
        return text[:at] + piece + text[at:]
    if kind == 1:
        return text[:at] + text[at + rng.randrange(1, 40) :]
    row = rng.randrange(len(lines))
    if kind == 2:
        lines[row] = rng.choice(lines)
    elif kind == 3:
        lines.insert(row, rng.choice(lines))
    else:
        del lines[row : row + rng.randrange(1, 4)]
    return "".join(lines)


def _sources() -> list[Path]:
    stdlib = sorted((Path(ast.__file__).parent).glob("json/*.py"))
    own = sorted((ROOT / "devlint" / "engine").glob("*.py")) + sorted((ROOT / "fixtures" / "pairs").rglob("*.fixed.py"))
    return [*stdlib, *own][:60]


@pytest.mark.parametrize("seed", range(3))
def test_random_edits_to_real_files_read_as_a_whole_reading(seed: int) -> None:
    rng = random.Random(seed)
    for path in _sources():
        text = path.read_text(encoding="utf-8")
        trees = CPythonTrees()
        reading, scans = trees.reading("doc"), StatementMemo(scan_imports)
        reading.tree(text)
        for _ in range(6):
            after = _random_edit(text, rng)
            tree = reading.tree(after)
            assert dump(tree) == dump(cpython_tree(after)), (path, after)
            if tree is not None:
                assert reading.facts(tree) == collect(tree), (path, after)
                assert _merged(scans.each(tree.body)) == scan_imports(tree), (path, after)
                assert reading.nesting(after, tree) == nesting_problem(after), (path, after)
            if tree is not None or rng.random() < 0.5:
                text = after


# Statements CPython reads that the nesting scan still weighs: brackets in an f-string's field
# on top of those around it (CPython 3.11 counts them apart), a long logical line, a long chain.
NESTED = {
    "f-string": "q = " + "(" * 150 + "f'{" + "(" * 60 + "1" + ")" * 60 + "}'" + ")" * 150 + "\n",
    "long line": "q = [" + ", ".join(["1"] * 3000) + "]\n",
    "long chain": "q = 1" + " + 1" * 3000 + "\n",
}


@pytest.mark.parametrize("name", list(NESTED))
def test_the_nesting_verdict_read_in_parts_is_the_whole_texts(name: str) -> None:
    def check() -> None:
        trees = CPythonTrees()
        reading = trees.reading("doc")
        texts = [BASE, edited("x = 1; y = 2\n", NESTED[name]), BASE + NESTED[name]]
        texts.append(edited("y = x.cuda()", "y = x.to('cuda')", texts[-1]))
        for text in texts:
            tree = reading.tree(text)
            assert tree is not None
            assert reading.nesting(text, tree) == nesting_problem(text)

    call_with_deep_stack(check)


def test_the_nesting_scan_reads_again_only_the_parts_an_edit_changed(monkeypatch: pytest.MonkeyPatch) -> None:
    trees = CPythonTrees()
    reading = trees.reading("doc")
    reading.nesting(BASE, reading.tree(BASE))
    scanned: list[str] = []
    real = incremental.measure
    monkeypatch.setattr(incremental, "measure", lambda part: scanned.append(part) or real(part))
    after = EDITS["a class body edited"]
    assert reading.nesting(after, reading.tree(after)) is None
    assert scanned == [after[after.index("\n\nclass Model") :]]


def test_facts_are_collected_again_only_for_the_statements_an_edit_changed() -> None:
    collected: list[ast.stmt] = []
    memo = StatementMemo(lambda stmt: collected.append(stmt) or collect(stmt))
    trees = CPythonTrees()
    before = trees.tree("doc", BASE)
    assert before is not None
    memo.each(before.body)
    collected.clear()
    after = trees.tree("doc", EDITS["a class body edited"])
    assert after is not None
    memo.each(after.body)
    assert collected == [after.body[-1]] and isinstance(collected[0], ast.ClassDef)
