"""Input nested deeper than the parsers can take, turned into an error before it can crash.

LibCST's native parser recurses on the C stack: a few thousand nested brackets overflow the 8 MB
main-thread stack and the interpreter dies with a segfault, which no ``except`` can catch. Two
guards keep that from happening:

- ``nesting_problem`` scans the text (C-speed regex; strings and comments skipped) for bracket
  depth beyond CPython's own limit (deeper is a SyntaxError for the interpreter too), and, for
  the rare file with a very long logical line, asks CPython's parser whether the expressions in
  it are too deep (long operator chains and ``lambda`` towers recurse without brackets).
- ``call_with_deep_stack`` runs the parse and the analysis in a thread with a large stack and a
  raised recursion limit, so what passes the scan has ample room.
"""

from __future__ import annotations

import ast
import re
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TypeVar

from devlint.gate.syntax import FLAGS, compile_quietly, cpython_tree
from devlint.signals import interrupts_deferred

# CPython's tokenizer refuses more than 200 open brackets ("too many nested parentheses").
MAX_BRACKET_DEPTH = 200
# Above this many characters in one logical line, CPython's parser checks the expression depth
# (LibCST takes quadratic time on long operator chains: a few seconds at 5,000 links).
LONG_LOGICAL_LINE = 5_000
# Measured: LibCST needs about 6 KB of stack per nested bracket and under 1 KB per link of an
# operator chain; this stack holds 200 brackets plus chains far deeper than CPython accepts.
STACK_BYTES = 512 * 1024 * 1024
RECURSION_LIMIT = 20_000
CPYTHON_DEFAULT_RECURSION_LIMIT = 1000

_TOKENS = re.compile(
    r"""
    (?P<string>(?P<prefix>[rRbBuUfF]{0,2})
        (?:'''[^'\\]*(?:(?:\\.|'(?!''))[^'\\]*)*'''
          |\"\"\"[^"\\]*(?:(?:\\.|"(?!""))[^"\\]*)*\"\"\"
          |'[^'\\\n]*(?:\\.[^'\\\n]*)*'
          |"[^"\\\n]*(?:\\.[^"\\\n]*)*"))
    |\#[^\r\n]*
    |\\(?:\r\n|\r|\n)
    |[(\[{]
    |[)\]}]
    |\r\n|\r|\n
    """,
    re.VERBOSE | re.DOTALL,
)
_FIELD_BRACKETS = re.compile(r"[(\[{]|[)\]}]")
_NEWLINE = re.compile(r"\r\n|\r|\n")


@dataclass(frozen=True)
class NestingProblem:
    message: str
    row: int | None = None
    column: int | None = None


def _fstring_depth(body: str) -> int:
    """The deepest bracket nesting inside an f-string's replacement fields (an overestimate)."""
    depth = deepest = 0
    for match in _FIELD_BRACKETS.finditer(body.replace("{{", "").replace("}}", "")):
        depth = depth + 1 if match.group() in "([{" else max(depth - 1, 0)
        deepest = max(deepest, depth)
    return deepest


def _position(text: str, offset: int) -> tuple[int, int]:
    starts = [0] + [match.end() for match in _NEWLINE.finditer(text, 0, offset)]
    return len(starts), offset - starts[-1] + 1


@dataclass(frozen=True)
class Nesting:
    """What one scan of a text found: where a bracket first goes deeper than CPython allows
    (None: nowhere), and the length of the longest logical line before that."""

    too_deep: int | None
    longest: int


def measure(text: str) -> Nesting:
    """One scan of ``text`` (nesting_problem's, for one part)."""
    depth = 0
    line_start = longest = 0
    for match in _TOKENS.finditer(text):
        token = match.group()
        first = token[0]
        if match.group("string") is not None:
            if "f" in match.group("prefix").lower() and depth + _fstring_depth(token) > MAX_BRACKET_DEPTH:
                return Nesting(match.start(), longest)
        elif first in "([{":
            depth += 1
            if depth > MAX_BRACKET_DEPTH:
                return Nesting(match.start(), longest)
        elif first in ")]}":
            depth = max(depth - 1, 0)
        elif first in "\r\n" and depth == 0:
            longest = max(longest, match.start() - line_start)
            line_start = match.end()
    return Nesting(None, max(longest, len(text) - line_start))


def nesting_problem(
    text: str, cuts: Sequence[int] = (), scan: Callable[[str], Nesting] = measure, within_default_depth: bool = False
) -> NestingProblem | None:
    """Why ``text`` is nested too deeply to parse safely, or None. ``cuts``: offsets where the
    text may be scanned in parts (rows that start a top-level statement, after a row that does
    not continue with a backslash: no bracket is open and no logical line goes on there), each
    part by ``scan``, for a caller that keeps the scans of parts it saw before;
    ``within_default_depth``: CPython has read the text within its default depth
    (``tree_within_default_depth``), which is all CPython's verdict on a long line asks, and
    leaves nothing to scan for: CPython's tokenizer refuses more than ``MAX_BRACKET_DEPTH`` open
    brackets (before Python 3.12 each f-string's fields get a tokenizer and an allowance of their
    own, and quotes limit how deep f-strings nest: a few allowances, which the deep stack holds)."""
    if within_default_depth:
        return None
    longest = 0
    for start, end in zip((0, *cuts), (*cuts, len(text))):
        found = scan(text[start:end])
        if found.too_deep is not None:
            return NestingProblem("too many nested parentheses", *_position(text, start + found.too_deep))
        longest = max(longest, found.longest)
    if longest > LONG_LOGICAL_LINE and not within_default_depth:
        return _cpython_verdict(text)
    return None


def tree_within_default_depth(text: str) -> tuple[ast.Module | None, bool]:
    """CPython's tree of ``text`` (None where it cannot read it), and whether it read it within
    its default depth: first as ``_cpython_verdict`` does, then, where that runs out of depth,
    with the room this thread has (as ``cpython_tree``). A text read within the default depth
    needs no verdict: its compile is the verdict's, flags aside (top-level ``await`` only matters
    when compiling to bytecode)."""
    try:
        with _recursion_limit(_depth() + CPYTHON_DEFAULT_RECURSION_LIMIT):
            return compile_quietly(text, FLAGS), True
    except (RecursionError, MemoryError):
        return cpython_tree(text), False
    except (SyntaxError, ValueError):
        return None, False


def _cpython_verdict(text: str) -> NestingProblem | None:
    """CPython's parser on a file with a very long logical line: it refuses expressions deeper
    than it can handle, safely. Its ordinary syntax errors are left to LibCST, which may accept
    syntax newer than the running interpreter."""
    try:
        # CPython's default allowance, whatever thread this runs in: the deep-stack thread's
        # raised limit would let through chains LibCST takes minutes (quadratic) to parse.
        with _recursion_limit(_depth() + CPYTHON_DEFAULT_RECURSION_LIMIT):
            compile_quietly(text, ast.PyCF_ONLY_AST)
    except (RecursionError, MemoryError):
        return NestingProblem("expression too deeply nested to parse")
    except (SyntaxError, ValueError):
        return None
    return None


T = TypeVar("T")


def _depth() -> int:
    """How many Python frames deep the caller is."""
    depth, frame = 0, sys._getframe(1)
    while frame is not None:
        depth, frame = depth + 1, frame.f_back
    return depth


@contextmanager
def _recursion_limit(limit: int) -> Iterator[None]:
    previous = sys.getrecursionlimit()
    sys.setrecursionlimit(limit)
    try:
        yield
    finally:
        sys.setrecursionlimit(previous)


def call_with_deep_stack(function: Callable[..., T], *args: object) -> T:
    """``function(*args)`` in a thread with a large stack; its exception, if any, is re-raised."""
    outcome: list[tuple[bool, object]] = []
    done = threading.Event()

    def target() -> None:
        try:
            with _recursion_limit(max(sys.getrecursionlimit(), RECURSION_LIMIT)):
                outcome.append((True, function(*args)))
        except BaseException as error:  # handed to the calling thread as it is
            outcome.append((False, error))
        finally:
            done.set()

    try:
        previous_size = threading.stack_size(STACK_BYTES)
    except (ValueError, RuntimeError):
        # No settable thread stack on this platform: run in place, guarded by the scan alone.
        return function(*args)
    # The native parser cannot be stopped, and an interpreter that exits while it runs in another
    # thread aborts (SIGABRT): the thread is not a daemon (exit waits for it), and Ctrl-C waits
    # for the file in hand. Waiting on an Event rather than join(): in Python 3.11 a join()
    # interrupted by Ctrl-C can mark the thread stopped while it still runs.
    thread = threading.Thread(target=target, name="devlint-deep-stack", daemon=False)
    interrupted = False
    try:
        with interrupts_deferred():
            thread.start()
    except KeyboardInterrupt:
        if thread.ident is None:
            raise
        interrupted = True
    finally:
        threading.stack_size(previous_size)
    while True:
        try:
            done.wait()
            break
        except KeyboardInterrupt:
            interrupted = True
    thread.join()
    if interrupted:
        raise KeyboardInterrupt
    ok, value = outcome[0]
    if not ok:
        raise value  # type: ignore[misc]
    return value  # type: ignore[return-value]
