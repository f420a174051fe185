"""What a file's top-level statements say about torch: which lines import it, under which name,
and whether the module carries on without it; and new code spelled with the file's own name for
torch. Placement (devlint.engine.placement) decides from these where inserted code goes."""

from __future__ import annotations

import io
import tokenize

import libcst as cst

from devlint.analysis.semantic import dotted_name
from devlint.fixes import LineIndex


def is_import_line(stmt: cst.CSTNode) -> bool:
    """An import line, or a `try:` whose body only imports (``except ImportError`` fallbacks)."""
    if isinstance(stmt, cst.Try):
        return all(is_import_line(inner) for inner in stmt.body.body)
    return isinstance(stmt, cst.SimpleStatementLine) and all(
        isinstance(s, (cst.Import, cst.ImportFrom)) for s in stmt.body
    )


def imports_torch(stmt: cst.CSTNode) -> bool:
    """``import torch...`` or ``from torch... import ...`` (an import line, see is_import_line)."""
    if not isinstance(stmt, cst.SimpleStatementLine):
        return False
    for small in stmt.body:
        if isinstance(small, cst.Import):
            names = [dotted_name(alias.name) for alias in small.names]
        elif isinstance(small, cst.ImportFrom) and not small.relative and small.module is not None:
            names = [dotted_name(small.module)]
        else:
            continue
        if any(name is not None and name.split(".")[0] == "torch" for name in names):
            return True
    return False


def tolerates_missing_torch(stmt: cst.CSTNode) -> bool:
    """A `try:` import block with a handler that lets the module go on without torch (one that
    does not end by raising or exiting)."""
    if not isinstance(stmt, cst.Try):
        return False
    for handler in stmt.handlers:
        last = handler.body.body[-1] if handler.body.body else None
        small = last.body[-1] if isinstance(last, cst.SimpleStatementLine) and last.body else None
        if isinstance(small, cst.Raise):
            continue
        call = small.value if isinstance(small, cst.Expr) else None
        if isinstance(call, cst.Call) and dotted_name(call.func) in ("exit", "quit", "sys.exit", "os._exit"):
            continue
        return True
    return False


def torch_names(stmt: cst.CSTNode) -> set[str]:
    """The names an import line (or a `try:` block of them) binds to the torch module itself:
    ``import torch`` binds ``torch``, ``import torch as th`` binds ``th``."""
    if isinstance(stmt, cst.Try):
        return {name for inner in stmt.body.body for name in torch_names(inner)}
    if not isinstance(stmt, cst.SimpleStatementLine):
        return set()
    names = set()
    for small in stmt.body:
        if not isinstance(small, cst.Import):
            continue
        for alias in small.names:
            name = dotted_name(alias.name)
            if name is None or name.split(".")[0] != "torch":
                continue
            if alias.asname is None:
                names.add("torch")
            elif name == "torch" and isinstance(alias.asname.name, cst.Name):
                names.add(alias.asname.name.value)
    return names


def renamed_torch(code: str, alias: str) -> str:
    """``code`` with the module name ``torch`` (a name followed by a dot, not inside a string or
    comment) spelled ``alias``; unchanged when it does not tokenize."""
    try:
        # newline="": lines end at \r, \n or \r\n, as LineIndex counts them
        tokens = list(tokenize.generate_tokens(io.StringIO(code, newline="").readline))
    except (tokenize.TokenError, SyntaxError):
        return code
    index = LineIndex(code)
    offsets = [
        index.offset(*token.start)
        for token, following in zip(tokens, tokens[1:])
        if token.type == tokenize.NAME and token.string == "torch" and following.string == "."
    ]
    for offset in reversed(offsets):
        code = code[:offset] + alias + code[offset + len("torch"):]
    return code
