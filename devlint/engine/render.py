"""Rendering a replacement node as it reads where it stands in the file.

``Module.code_for_node`` renders a node outside its blocks: the continuation lines of a call
written over several lines would lose the indentation of the enclosing blocks."""

from __future__ import annotations

import libcst as cst

from devlint.engine.torch_imports import renamed_torch


def code_at_indent(module: cst.Module, new: cst.CSTNode, indent: str) -> str:
    code = module.code_for_node(new)
    # The nodes re-indented here always print a line break: code on one line has none of them,
    # and the transform (which rebuilds every node) would give the same code back.
    if not indent or ("\n" not in code and "\r" not in code):
        return code
    return module.code_for_node(new.visit(_BlockIndent(indent)))


class _BlockIndent(cst.CSTTransformer):
    def __init__(self, indent: str) -> None:
        super().__init__()
        self.indent = indent

    def leave_ParenthesizedWhitespace(
        self, original_node: cst.ParenthesizedWhitespace, updated_node: cst.ParenthesizedWhitespace
    ) -> cst.ParenthesizedWhitespace:
        if not updated_node.indent:
            return updated_node
        last_line = cst.SimpleWhitespace(self.indent + updated_node.last_line.value)
        return updated_node.with_changes(indent=False, last_line=last_line)

    def leave_EmptyLine(self, original_node: cst.EmptyLine, updated_node: cst.EmptyLine) -> cst.EmptyLine:
        if not updated_node.indent:
            return updated_node
        whitespace = cst.SimpleWhitespace(self.indent + updated_node.whitespace.value)
        return updated_node.with_changes(indent=False, whitespace=whitespace)


def in_file_style(module: cst.Module, code: str, torch_as: str | None) -> str:
    """``code``, new top-level lines written with four-space indents, ``\\n`` and ``torch.``, as
    the file writes code: its indentation, its line ending and its name for torch."""
    lines = []
    for line in code.split("\n"):
        stripped = line.lstrip(" ")
        lines.append(module.default_indent * ((len(line) - len(stripped)) // 4) + stripped)
    styled = module.default_newline.join(lines)
    return styled if torch_as is None or torch_as == "torch" else renamed_torch(styled, torch_as)
