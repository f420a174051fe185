"""Each table of torch's names has one home, devlint/torchfacts/names.py: the gate and the rules
import it, and no other module writes it again.

Read with ``ast`` from the source: a set, frozenset, tuple, list or dict literal of two or more
strings, anywhere in devlint/ (outside torchfacts) or rules/, whose strings all stand in one table
of names.py is a copy of that table or of part of it, and the reader should import the table (or
derive its view from it). A module-level name bound to one of names.py's string constants is a
copy too. That each entry of a table reaches both the gate and its rule is
tests/test_gate.py's ``test_every_entry_of_a_shared_table_passes_the_gate``.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from devlint.torchfacts import names

ROOT = Path(__file__).resolve().parent.parent
HOME = ROOT / "devlint" / "torchfacts"


def _defined() -> dict[str, object]:
    """What names.py itself binds at module level (not what it imports), by name."""
    tree = ast.parse((HOME / "names.py").read_text())
    bound = [
        target.id
        for statement in tree.body
        if isinstance(statement, (ast.Assign, ast.AnnAssign))
        for target in (statement.targets if isinstance(statement, ast.Assign) else [statement.target])
        if isinstance(target, ast.Name)
    ]
    return {name: getattr(names, name) for name in bound}


def _tables() -> dict[str, frozenset[str]]:
    """names.py's tables of strings, by name: the keys of a mapping, the items of a set or tuple."""
    tables = {}
    for name, value in _defined().items():
        if isinstance(value, Mapping):
            value = tuple(value)
        if isinstance(value, (frozenset, tuple)) and value and all(isinstance(item, str) for item in value):
            tables[name] = frozenset(value)
    return tables


TABLES = _tables()
CONSTANTS = {value: name for name, value in _defined().items() if isinstance(value, str)}
def _strings(node: ast.AST) -> frozenset[str] | None:
    """The strings of a literal made of two or more string constants, else None. A dict whose
    values are all methods (``Rule._handle``) is a dispatch table: it says what a rule does with
    each name, it holds no copy of the names' facts."""
    if isinstance(node, (ast.Set, ast.Tuple, ast.List)):
        items = node.elts
    elif isinstance(node, ast.Dict) and not all(isinstance(value, ast.Attribute) for value in node.values):
        items = node.keys
    else:
        return None
    strings = [item.value for item in items if isinstance(item, ast.Constant) and isinstance(item.value, str)]
    return frozenset(strings) if len(items) >= 2 and len(strings) == len(items) else None


def copies(source: str) -> Iterator[tuple[int, str]]:
    """(line, name in names.py) for each copy of a table or string constant of names.py in
    ``source``."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        strings = _strings(node)
        if strings is not None:
            yield from ((node.lineno, name) for name, table in TABLES.items() if strings <= table)
    for statement in tree.body:
        if isinstance(statement, (ast.Assign, ast.AnnAssign)) and isinstance(statement.value, ast.Constant):
            if statement.value.value in CONSTANTS:
                yield statement.lineno, CONSTANTS[statement.value.value]


def _readers() -> list[Path]:
    """Every module but torchfacts' and the verify child's: the rules, the gate and every other
    reader of the tables. The child runs in the user's interpreter and imports nothing of devlint
    (tests/test_layers.py): its emulation models torch.cuda for itself (which counter each memory
    reader reads), from its own per-release table."""
    child = ROOT / "devlint" / "verify" / "child"
    paths = [*(ROOT / "devlint").rglob("*.py"), *(ROOT / "rules").rglob("*.py")]
    return sorted(path for path in paths if HOME not in path.parents and child not in path.parents)


def test_the_scan_knows_the_tables() -> None:
    """Were names.py's tables not read, every module would pass the scan."""
    for name in ("LEGACY_TENSOR_TYPES", "DATA_PARALLEL", "DEPRECATED_AMP", "CUDA_RUNTIME_API", "CUDA_SUBMODULES"):
        assert name in TABLES
    assert "CUDA_VISIBLE_DEVICES" in CONSTANTS


@pytest.mark.parametrize("path", _readers(), ids=lambda path: str(path.relative_to(ROOT)))
def test_no_module_writes_a_table_of_names_again(path: Path) -> None:
    found = [f"line {line}: names.{name}" for line, name in copies(path.read_text())]
    assert found == [], f"{path.relative_to(ROOT)} copies these: import them from devlint.torchfacts.names"


@pytest.mark.parametrize(
    "source",
    [
        '_NAMES = frozenset({"synchronize", "device_count", "current_device"})\n',  # part of a table
        'def f(q):\n    return q in ("torch.nn.DataParallel", "torch.nn.parallel.DataParallel")\n',
        'DTYPES = {"FloatTensor": "float32", "HalfTensor": "float16"}\n',  # a mapping's keys
        'VARIABLE = "CUDA_VISIBLE_DEVICES"\n',
        'AMP = {"torch.amp.autocast": AUTOCAST, "torch.autocast": AUTOCAST}\n',  # not a dispatch table
    ],
)
def test_a_copy_would_be_found(source: str) -> None:
    assert list(copies(source))


@pytest.mark.parametrize(
    "source",
    [
        'x = ("to", "cuda", "cpu")\n',  # more than a table holds: another table
        'x = ("device",)\n',  # one string is a name, not a table
        'x = (DEVICE_KEYWORDS, "type")\n',
        'def f(environ):\n    return environ.get("CUDA_VISIBLE_DEVICES")\n',
        'HANDLERS = {"synchronize": Rule._synchronize, "device_count": Rule._count}\n',  # a dispatch table
        'triggers = ("autocast", "GradScaler")\n',  # within device_api_table.AMP, which names.py only imports
    ],
)
def test_what_is_no_copy_is_not_found(source: str) -> None:
    assert list(copies(source)) == []


def test_names_imports_no_libcst_and_nothing_of_devlint_outside_torchfacts() -> None:
    tree = ast.parse((HOME / "names.py").read_text())
    imported = [node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)]
    imported += [alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names]
    ours = [name for name in imported if name.startswith("devlint")]
    assert all(name.startswith("devlint.torchfacts.") for name in ours)
    assert not any(name.split(".")[0] in ("libcst", "torch") for name in imported)
