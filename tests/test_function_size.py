"""No function in the core is over 60 lines: a longer one holds steps that want names of their own.

A function is counted with ``ast`` from its ``def`` line to its last line (decorators left out;
its docstring, comments and nested functions counted). Methods and nested functions are checked
too, each on its own.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MOST_LINES = 60


def long_functions(source: str, filename: str) -> list[str]:
    """``file:line name (N lines)`` for each function in ``source`` over MOST_LINES."""
    found = []
    for node in ast.walk(ast.parse(source, filename)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            length = node.end_lineno - node.lineno + 1
            if length > MOST_LINES:
                found.append(f"{filename}:{node.lineno} {node.name} ({length} lines)")
    return found


def test_no_function_in_the_core_is_over_60_lines() -> None:
    found = [
        line
        for path in sorted((ROOT / "devlint").rglob("*.py"))
        for line in long_functions(path.read_text(encoding="utf-8"), path.relative_to(ROOT).as_posix())
    ]
    assert found == []


def _function(name: str, lines: int, indent: str = "") -> str:
    body = "".join(f"{indent}    x{i} = {i}\n" for i in range(lines - 1))
    return f"{indent}def {name}():\n{body}"


def test_a_long_function_would_be_found() -> None:
    """The check itself can fail: 61 lines are reported, 60 are not."""
    source = _function("fits", 60) + _function("too_long", 61)
    assert long_functions(source, "probe.py") == ["probe.py:61 too_long (61 lines)"]


def test_long_methods_and_nested_functions_are_found_too() -> None:
    method = "class C:\n" + _function("method", 61, indent="    ")
    nested = "def outer():\n" + _function("inner", 61, indent="    ")
    assert long_functions(method, "m.py") == ["m.py:2 method (61 lines)"]
    # The outer function is over the limit as well: both are reported.
    assert long_functions(nested, "n.py") == ["n.py:1 outer (62 lines)", "n.py:2 inner (61 lines)"]
