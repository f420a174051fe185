"""CUDA device strings as CPython's tree writes them: what the gate's conditions and the scan of a
file's project imports look for, without importing the conditions."""

from __future__ import annotations

import ast


def is_cuda_literal(node: ast.AST) -> bool:
    """What devlint.rules.hardcoded_device_string.cuda_literal accepts (and more): ``"cuda"``,
    ``"cuda:N"``, an f-string starting with ``cuda:``, such a string formatted with ``%``, ``+``
    or ``.format``."""
    if type(node) is ast.Constant:
        value = node.value
        return type(value) is str and (value == "cuda" or value.startswith("cuda:"))
    if type(node) is ast.JoinedStr and node.values:
        first = node.values[0]
        return type(first) is ast.Constant and type(first.value) is str and first.value.startswith("cuda:")
    # `"cuda:%d" % i`, `"cuda:" + str(i)`, `"cuda:{}".format(i)`
    if type(node) is ast.BinOp and type(node.op) in (ast.Mod, ast.Add):
        return _starts_cuda_index(node.left)
    if type(node) is ast.Call and type(node.func) is ast.Attribute and node.func.attr == "format":
        return _starts_cuda_index(node.func.value)
    return False


def _starts_cuda_index(node: ast.AST) -> bool:
    return type(node) is ast.Constant and type(node.value) is str and node.value.startswith("cuda:")
