"""A statement put under a guard (`if torch.accelerator.is_available():`, below torch 2.6 `if
torch.cuda.is_available():`) joins an identical guard block right next to it, so that `devlint
fix` leaves one block over consecutive guarded statements, as a reviewer would write it.

Each finding keeps a fix of its own, which guards its own statement only: a statement whose fix
is not applied (unsafe, not selected, `# noqa`) is never moved under a guard by a neighbour's fix.
A fix is written for the text as it stands: where the statement right before is such a block, the
statement goes at its end; where the one right after is, the statement opens it in place of its
header line; otherwise it gets a block of its own. Fixes of neighbouring statements conflict
(``Replace.whole_lines``), so `devlint fix` applies them in turn, each on the text the last one
left: a run of guarded statements ends as one block after two rounds, and so does any order of
quick fixes in the editor.

Neighbours are statements of the same block with nothing between them: a blank line or a comment
line ends a run, and so does a comment on a block's header line or after its last statement,
which joining would have to move (a comment at the end of a statement's own line stays there).

The same holds for a whole guard block whose check DEV604 rewrites (``checked_block``): right
after an identical block it drops its header line and continues that block; right before one it
takes that block's header line away. Two checks become one, which is exact only when the first
block cannot change the answer of the second (devlint.rulekit.steady_checks).
"""

from __future__ import annotations

import libcst as cst

from devlint.fixes import Replace
from devlint.rule import RuleContext
from devlint.rulekit.device_checks import exits
from devlint.rulekit.siblings import siblings
from devlint.rulekit.steady_checks import keeps_availability


def guarded(ctx: RuleContext, statement: cst.Expr, test: str, new: str) -> Replace:
    """``new`` (``statement`` as the fix writes it) under ``if <test>:``, in the guard block next
    to it where there is one (``test`` is a call without arguments, such as
    ``torch.accelerator.is_available()``)."""
    line = ctx.parent(statement)
    block = ctx.parent(line) if line is not None else None
    indent = ctx.module.default_indent
    if not isinstance(line, cst.SimpleStatementLine) or not isinstance(block, (cst.IndentedBlock, cst.Module)):
        return Replace(statement, (f"if {test}:", indent + new), whole_lines=True)
    body, at = siblings(ctx, block, line)
    before = body[at - 1] if at > 0 and not line.leading_lines else None
    after = body[at + 1] if at + 1 < len(body) and not body[at + 1].leading_lines else None
    holds = tuple(g.test for g in (before, after) if isinstance(g, cst.If) and _may_become(ctx, g, test))
    head = () if isinstance(before, cst.If) and _ends_open(ctx, before, test) else (f"if {test}:",)
    plain = not isinstance(statement.semicolon, cst.Semicolon)
    if isinstance(after, cst.If) and _opens_plainly(ctx, after, test) and plain:
        # the replaced text runs through the end of the line: the statement's comment is written back
        trailing = line.trailing_whitespace
        comment = trailing.whitespace.value + trailing.comment.value if trailing.comment is not None else ""
        first = after.body.body[0]  # type: ignore[union-attr]
        return Replace(statement, (*head, indent + new + comment, indent), until=first, whole_lines=True, holds=holds)
    return Replace(statement, (*head, indent + new), whole_lines=True, holds=holds)


def checked_block(ctx: RuleContext, guard: cst.If, old: str, new: str) -> list[Replace]:
    """The edits that turn ``guard``, ``if <old>:``, into ``if <new>:`` (both calls without
    arguments), joined with an identical guard block right next to it where that is exact.

    ``if <new>: A`` then ``if <new>: B`` runs as ``if <new>: A; B``: where the check fails, both
    skip; where it holds, A runs and then B, unless the second check answers differently after A
    (``keeps_availability``) or A leaves (then B would be unreachable code in the joined block,
    ``_ends_open``). The header line that goes must be exactly ``if <test>:`` with its block on
    the next lines (``_opens_plainly``), so that no comment or spacing is lost; both blocks are in
    the file's indentation, so the joined one is too. Between two such blocks ``guard`` loses
    its header and the next block's goes too: three blocks become one. A neighbour whose check
    may become ``new`` in the same run is waited for (``Replace.holds``), then joined in the
    next round."""
    line_block = ctx.parent(guard)
    if not isinstance(line_block, (cst.IndentedBlock, cst.Module)) or not isinstance(guard.test, cst.Call):
        return [Replace(guard.test, new)]
    body, at = siblings(ctx, line_block, guard)
    before = body[at - 1] if at > 0 and not guard.leading_lines else None
    after = body[at + 1] if at + 1 < len(body) and not body[at + 1].leading_lines else None
    opens, ends = _opens_plainly(ctx, guard, old), _ends_open(ctx, guard, old)
    holds = tuple(
        g.test for g, fits in ((before, opens), (after, ends)) if fits and isinstance(g, cst.If) and _may_become(ctx, g, new)
    )
    indent = ctx.module.default_indent
    # the header line of ``guard`` goes, or its test changes; the one of the block after it may go too
    if opens and isinstance(before, cst.If) and _ends_open(ctx, before, new) and keeps_availability(ctx, before.body):
        own = Replace(guard, indent, until=guard.body.body[0], whole_lines=True, holds=holds)  # type: ignore[union-attr]
    else:
        own = Replace(guard.test, new, holds=holds)
    if ends and isinstance(after, cst.If) and _opens_plainly(ctx, after, new) and keeps_availability(ctx, guard.body):
        return [own, Replace(after, indent, until=after.body.body[0], whole_lines=True)]  # type: ignore[union-attr]
    return [own]


def _is_test(ctx: RuleContext, node: cst.BaseExpression, test: str) -> bool:
    """``node`` is the call ``test`` (``torch.x.is_available()``), through any import of torch."""
    return (
        isinstance(node, cst.Call)
        and not node.args
        and not node.lpar
        and ctx.model.qualname(node.func) == test.removesuffix("()")
    )


def _may_become(ctx: RuleContext, guard: cst.If, test: str) -> bool:
    """``guard`` is an `if` on another availability check (`torch.cuda.is_available()`), which
    DEV604 may turn into ``test`` in the same round: the guard waits for it, to join the block."""
    if not isinstance(guard.test, cst.Call) or guard.test.args:
        return False
    qual = ctx.model.qualname(guard.test.func) or ""
    return qual.startswith("torch.") and qual.endswith(".is_available") and qual != test.removesuffix("()")


def _ends_open(ctx: RuleContext, guard: cst.If, test: str) -> bool:
    """A statement put after ``guard``'s last line, one level deeper, runs as the last of its
    block: the same test, no ``else``, a block in the file's indentation that ends with no
    comment lines and does not leave (after a ``return`` the statement would never run)."""
    block = guard.body
    return (
        _is_test(ctx, guard.test, test)
        and guard.orelse is None
        and isinstance(block, cst.IndentedBlock)
        and block.indent is None
        and not block.footer
        and not exits(block)
    )


def _opens_plainly(ctx: RuleContext, guard: cst.If, test: str) -> bool:
    """``guard``'s header line is exactly ``if <test>:`` and its first statement follows on the
    next line in the file's indentation: dropping the header loses nothing."""
    block = guard.body
    return (
        _is_test(ctx, guard.test, test)
        and guard.orelse is None
        and isinstance(block, cst.IndentedBlock)
        and block.indent is None
        and block.header.comment is None
        and not block.header.whitespace.value
        and not block.body[0].leading_lines
        and guard.whitespace_before_test.value == " "
        and not guard.whitespace_after_test.value
    )
