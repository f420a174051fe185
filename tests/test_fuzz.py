"""Generated programs that embed the patterns devlint rewrites, in varied syntax.

For every program: the fix parses and compiles, fixing again changes nothing, a file without an
applicable fix stays byte-identical, and the BOM and line endings survive. Strings, comments and
docstrings that merely mention the patterns are never findings.

The default example count keeps this file at a few seconds; for a deep run:

    DEVLINT_FUZZ_EXAMPLES=2000 .venv/bin/python -m pytest tests/test_fuzz.py
"""

from __future__ import annotations

import codecs
import os
from dataclasses import dataclass

import libcst as cst
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from devlint.registry import all_rules
from devlint.run.file_job import process_source
from devlint.run.job import Job
from devlint.run.source import decode

EXAMPLES = int(os.environ.get("DEVLINT_FUZZ_EXAMPLES", "20"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    derandomize=EXAMPLES <= 20,
)
CODES = tuple(rule.code for rule in all_rules())


@dataclass(frozen=True)
class Style:
    torch: str  # the name torch is imported as ("" when the file has no `import torch`)
    quote: str


# -- expressions and statements with a pattern in them ---------------------------------------------

RECEIVERS = ("model", "x", "self.net", "batch[0]", "{T}.ones(3)", "(a + b)", "Net()", "get()[0].weight", "xs[i:j]")

# (template, simple): a simple template fits on one line with no comment or backslash, so it
# may go inside an f-string replacement field.
EXPRESSIONS: tuple[tuple[str, bool], ...] = (
    ("{R}.cuda()", True),
    ("{R}.cuda(0)", True),
    ("{R}.cuda(non_blocking=True)", True),
    ("{R}.cuda(device=1)", True),
    ("{R}.cuda(\n)", False),
    ("{R}.cuda(  # on the GPU\n)", False),
    ("{R}.cuda().cuda()", True),
    ("{R}.cuda(0).to({Q}cuda{Q})", True),
    ("({R}\n    .cuda()\n    .float())", False),
    ("(\n  {R}  # comment between tokens\n  .cuda()\n)", False),
    ("{R} \\\n    .cuda()", False),
    ("{T}.cuda.FloatTensor(3, 4)", True),
    ("{T}.cuda.LongTensor([1, 2])", True),
    ("{R}.type({T}.cuda.HalfTensor)", True),
    ("{T}.device({Q}cuda{Q})", True),
    ("{T}.device({Q}cuda:1{Q})", True),
    ("{T}.zeros(2, device={Q}cuda{Q})", True),
    ("{R}.to({Q}cuda{Q})", True),
    ("{R}.to({Q}cuda:0{Q}, non_blocking=True)", True),
    ("{T}.load({Q}w.pt{Q})", True),
    ("{T}.cuda.amp.GradScaler()", True),
    ("{T}.nn.DataParallel({R})", True),
    ("{T}.nn.CrossEntropyLoss(weight={T}.ones(3))", True),
    ("{R}.cpu(non_blocking=True).numpy()", True),
    ("{R}.cuda().numpy()", True),
    ("[{R}.cuda() for {R2} in range(2)]", True),
    ("{R}.cuda({R}.get_device())", True),
    ("{R}.cuda({R}.device.index, non_blocking=True)", True),
    ("[{R}.cuda(i) for i in range(2)]", True),
    ("{T}.device({Q}cuda{Q}, 1)", True),
    ("[{T}.device({Q}cuda{Q}, i) for i in ids]", True),
    ("{T}.load({Q}w.pt{Q}, map_location=lambda s, loc: s.cuda())", True),
    ("{T}.cuda.synchronize()", True),
    ("{T}.cuda.memory_allocated()", True),
    ("{T}.autocast({Q}cuda{Q}, enabled=flag)", True),
    ("{T}.amp.GradScaler()", True),
)

# Statements that are findings themselves.
PATTERN_STATEMENTS = (
    "{T}.set_default_tensor_type({T}.cuda.FloatTensor)",
    "{T}.set_default_tensor_type({Q}torch.cuda.DoubleTensor{Q})",
    "{T}.set_default_tensor_type({T}.FloatTensor)",
    "os.environ[{Q}CUDA_VISIBLE_DEVICES{Q}] = {Q}0{Q}",
    "os.environ.update(CUDA_VISIBLE_DEVICES={Q}1{Q})",
    "os.putenv({Q}CUDA_VISIBLE_DEVICES{Q}, {Q}0,1{Q})",
    "{T}.cuda.set_device(0)",
    "with {T}.cuda.device(1):\n>pass",
    "with {T}.cuda.amp.autocast():\n>y = {E}",
    "for xb, yb in loader:\n>xb = xb.cuda()\n>yb = yb.to(device)",
    "loader = {T}.utils.data.DataLoader(ds, batch_size=4)\nfor xb in loader:\n>xb = xb.to(device)",
)

# Statements around an expression E; `>` at a line start is one level of indentation.
WRAPPERS = (
    "v = {E}",
    "v: {T}.Tensor = {E}",
    "v = \\\n>{E}",
    "f({E}, key={E2})",
    "vs = [{E} for _ in range(2)]",
    "vs = {{k: {E} for k in ks}}",
    "if (w := {E}) is not None:\n>pass",
    "g = lambda t: {E}",
    "a = 1; b = {E}",
    "a, *rest = {E}, {E2}",
    "print({E}, end={Q}{Q})",
    "assert {E} is not None",
    "v = {E} if flag else {E2}",
    "v = cache[{E}]",
    "v = {{**opts, {Q}k{Q}: {E}}}",
    "v = (yield_ := {E})",
    "if t.is_cuda:\n>v = {E}\nelse:\n>v = {E2}",
    "if TORCH_VERSION >= (2, 4):\n>v = {E2}\nelse:\n>v = {E}",
    "try:\n>v = {E}\nexcept RuntimeError:\n>v = None",
)
FSTRING = "s = f{Q2}{{{E}!r:>10}}{Q2}"
IN_FUNCTION = ("return {E}", "yield {E}")
IN_ASYNC = ("await consume({E})", "async with lock:\n>v = {E}", "async for item in stream:\n>v = {E}")

# Code that mentions the patterns only in strings, comments and docstrings, or comes close.
NEAR_MISSES = (
    '"""Call x.cuda() or torch.cuda.FloatTensor(3) first."""',
    "x = 1  # model.cuda(); torch.set_default_tensor_type(torch.cuda.FloatTensor)",
    "hint = {Q}use .cuda() and CUDA_VISIBLE_DEVICES=0{Q}",
    "ok = {T}.cuda.is_available()",
    # torch.accelerator exists from 2.6: DEV605 flags it unguarded below that torch-version
    "n = {T}.accelerator.device_count() if hasattr({T}, {Q}accelerator{Q}) else 0",
    "dev = {T}.device({Q}cuda{Q} if {T}.cuda.is_available() else {Q}cpu{Q})",
    "cuda = 3",
    "name = {Q}cuda{Q}",
    "msg = f{Q2}{{name}} on cuda{Q2}",
    "env = os.environ.get({Q}CUDA_VISIBLE_DEVICES{Q})",
    "pass",
)
FILLER = ("pass", "y = [i for i in range(3)]", "z = {{1: 2}}", "del y", "import os", "total += 1")


def other(quote: str) -> str:
    return "'" if quote == '"' else '"'


@st.composite
def expressions(draw: st.DrawFn, style: Style, simple: bool = False) -> str:
    choices = [template for template, is_simple in EXPRESSIONS if is_simple or not simple]
    template = draw(st.sampled_from(choices))
    receiver = draw(st.sampled_from(RECEIVERS))
    return template.format(
        R=receiver.format(T=style.torch or "torch"), R2="r", T=style.torch or "torch", Q=style.quote
    )


@st.composite
def statements(draw: st.DrawFn, style: Style, depth: int, in_function: bool = False, in_async: bool = False) -> list[str]:
    """One statement (possibly compound), as lines with `>` marking indentation levels."""
    T, Q = style.torch or "torch", style.quote
    kind = draw(st.sampled_from(("wrap", "wrap", "wrap", "fstring", "pattern", "near", "filler", "compound", "compound")))
    if kind == "compound" and depth >= 3:
        kind = "wrap"
    if kind == "wrap":
        pool = WRAPPERS + (IN_FUNCTION if in_function else ()) + (IN_ASYNC if in_async else ())
        template = draw(st.sampled_from(pool))
        text = template.format(E=draw(expressions(style)), E2=draw(expressions(style)), T=T, Q=Q)
    elif kind == "fstring":
        text = FSTRING.format(E=draw(expressions(style, simple=True)), Q2=other(Q))
    elif kind == "pattern":
        text = draw(st.sampled_from(PATTERN_STATEMENTS)).format(T=T, Q=Q, E=draw(expressions(style)))
    elif kind == "near":
        text = draw(st.sampled_from(NEAR_MISSES)).format(T=T, Q=Q, Q2=other(Q))
    elif kind == "filler":
        text = draw(st.sampled_from(FILLER))
    else:
        return draw(compound(style, depth, in_function, in_async))
    return text.split("\n")


def indented(lines: list[str]) -> list[str]:
    return [">" + line for line in lines]


@st.composite
def body(draw: st.DrawFn, style: Style, depth: int, in_function: bool = False, in_async: bool = False) -> list[str]:
    lines: list[str] = []
    for _ in range(draw(st.integers(1, 3))):
        lines += draw(statements(style, depth + 1, in_function, in_async))
    return indented(lines)


@st.composite
def compound(draw: st.DrawFn, style: Style, depth: int, in_function: bool, in_async: bool) -> list[str]:
    T, Q = style.torch or "torch", style.quote
    n = draw(st.integers(0, 99))
    kind = draw(st.sampled_from(
        ("def", "async", "class", "decorated", "if", "try", "while", "for", "with", "match", "nonlocal", "global")
    ))
    if kind == "def":
        return [f"def fn{n}(x, *args, scale: float = 1.0, **kwargs):"] + draw(body(style, depth, True))
    if kind == "async":
        return [f"async def afn{n}(x):"] + draw(body(style, depth, True, True))
    if kind == "class":
        method = ["def forward(self, x):"] + draw(body(style, depth + 1, True))
        return [f"class C{n}({T}.nn.Module):", '>"""A module."""'] + indented(method)
    if kind == "decorated":
        return ["@functools.lru_cache(maxsize=None)", f"@{T}.no_grad()", f"def cached{n}(x):"] + draw(body(style, depth, True))
    if kind == "if":
        return ["if cond:"] + draw(body(style, depth, in_function, in_async)) + ["elif other:", ">pass", "else:"] + draw(
            body(style, depth, in_function, in_async)
        )
    if kind == "try":
        return ["try:"] + draw(body(style, depth, in_function, in_async)) + [
            "except (ValueError, RuntimeError) as error:", ">raise", "finally:", ">pass"
        ]
    if kind == "while":
        return ["while flag:"] + draw(body(style, depth, in_function, in_async)) + [">break", "else:", ">pass"]
    if kind == "for":
        return ["for i, item in enumerate(items):"] + draw(body(style, depth, in_function, in_async))
    if kind == "with":
        return [f"with open({Q}f{Q}) as fh, ctx() as (a, b):"] + draw(body(style, depth, in_function, in_async))
    if kind == "match":
        return ["match cfg:", f">case {{{Q}k{Q}: 1, **rest}}:"] + indented(draw(body(style, depth + 1, in_function, in_async))) + [
            ">case [first, *_] if first:", ">>pass", f">case Point(x=0) | {Q}origin{Q}:", ">>pass", ">case _:", ">>pass",
        ]
    if kind == "nonlocal":
        # Not `v`: the body may annotate `v`, which a nonlocal name must not be.
        inner = ["def inner():", ">nonlocal counter", f">counter = {draw(expressions(style))}"] + draw(body(style, depth + 1, True))
        return [f"def outer{n}():", ">counter = 0"] + indented(inner) + [">return inner"]
    return [f"def set_global{n}():", f">global G{n}", f">G{n} = {draw(expressions(style))}"]


HEADERS = (
    "import torch",
    "import torch as {T}",
    "import os\nimport functools\nimport torch as {T}\nfrom torch import nn",
    "from __future__ import annotations\n\nimport os, functools\nimport torch as {T}",
    '"""A training script."""\nimport torch as {T}  # the framework\nimport os',
    "from torch import nn",
    "import numpy as np",
)


@dataclass(frozen=True)
class Program:
    data: bytes
    newline: str  # "\n", "\r\n", "\r", or "mixed" ("\n" and "\r\n")

    def __repr__(self) -> str:  # hypothesis shows the program readably when a case fails
        return f"Program({self.data!r})"


@st.composite
def programs(draw: st.DrawFn, near_misses_only: bool = False) -> Program:
    alias = draw(st.sampled_from(("torch", "t", "th")))
    header = draw(st.sampled_from(HEADERS))
    imports_torch = "import torch" in header
    style = Style(torch=(alias if "{T}" in header else "torch") if imports_torch else "", quote=draw(st.sampled_from(("'", '"'))))
    lines = header.format(T=style.torch).split("\n") + [""]
    for _ in range(draw(st.integers(1, 5))):
        if near_misses_only:
            lines += draw(st.sampled_from(NEAR_MISSES + FILLER[:3])).format(T=style.torch or "torch", Q=style.quote, Q2=other(style.quote)).split("\n")
        else:
            lines += draw(statements(style, 0))
        lines += draw(st.sampled_from(([], [""], ["", ""], ["# a comment"])))
    unit = draw(st.sampled_from(("    ", "  ", "\t")))
    text_lines = [unit * (len(line) - len(line.lstrip(">"))) + line.lstrip(">") for line in lines]
    # Trailing whitespace, except after a backslash continuation (where it is a syntax error).
    text_lines = [
        line + draw(st.sampled_from(("", "", "", "  ", "\t"))) if line.strip() and not line.endswith("\\") else line
        for line in text_lines
    ]
    newline = draw(st.sampled_from(("\n", "\r\n", "mixed", "\r")))
    ends = [newline if newline != "mixed" else draw(st.sampled_from(("\n", "\r\n"))) for _ in text_lines]
    # The last line may lack its line ending.
    if draw(st.booleans()):
        ends[-1] = ""
    text = "".join(line + end for line, end in zip(text_lines, ends))
    encoding = draw(st.sampled_from(("utf-8", "utf-8", "bom", "latin-1")))
    if encoding == "latin-1":
        data = ("# -*- coding: latin-1 -*-" + (ends[0] or "\n") + "# caf\xe9 cr\xe8me" + (ends[0] or "\n") + text).encode("latin-1")
    else:
        data = text.encode("utf-8")
        if encoding == "bom":
            data = codecs.BOM_UTF8 + data
    return Program(data, newline)


# -- properties ----------------------------------------------------------------------------------


def fix(data: bytes, unsafe: bool) -> tuple[bytes, object]:
    result, new = process_source(data, "fuzz.py", Job(codes=CODES, fix=True, unsafe=unsafe))
    assert result.error is None, str(result.error)
    return (new if new is not None else data), result


def line_endings(data: bytes) -> set[bytes]:
    """The kinds of line ending in ``data``."""
    rest = data.replace(b"\r\n", b"")
    return {ending for ending, found in ((b"\r\n", rest != data), (b"\n", b"\n" in rest), (b"\r", b"\r" in rest)) if found}


def check_fix(program: Program, unsafe: bool) -> None:
    data = program.data
    compile(data, "fuzz.py", "exec", dont_inherit=True)  # the generator makes valid Python
    lint, _ = process_source(data, "fuzz.py", Job(codes=CODES))
    assert lint.error is None, str(lint.error)
    fixed, result = fix(data, unsafe)
    applicable = [f for f in lint.findings if f.fix is not None and (unsafe or f.fix.applicability == "safe")]
    if not applicable:
        assert fixed == data, "a file without an applicable fix changed"
    # The fix parses (LibCST and CPython), and fixing again changes nothing.
    cst.parse_module(decode(fixed).text)
    compile(fixed, "fuzz.py", "exec", dont_inherit=True)
    again, _ = fix(fixed, unsafe)
    assert again == fixed, "fixing twice differs from fixing once"
    # Encoding, BOM and line-ending style survive.
    assert fixed.startswith(codecs.BOM_UTF8) == data.startswith(codecs.BOM_UTF8)
    assert decode(fixed).encoding == decode(data).encoding
    if program.newline != "mixed":
        # A one-line file without a line ending may gain "\n" lines; any other keeps its style.
        assert line_endings(fixed) <= (line_endings(data) or {b"\n"}), "a line ending of another style appeared"


@FUZZ
@given(programs())
def test_safe_fix_parses_is_idempotent_and_keeps_untouched_files(program: Program) -> None:
    check_fix(program, unsafe=False)


@FUZZ
@given(programs())
def test_unsafe_fix_parses_is_idempotent_and_keeps_untouched_files(program: Program) -> None:
    check_fix(program, unsafe=True)


@FUZZ
@given(programs(near_misses_only=True))
def test_patterns_in_strings_comments_and_docstrings_are_no_findings(program: Program) -> None:
    result, new = process_source(program.data, "fuzz.py", Job(codes=CODES, fix=True, unsafe=True))
    assert result.error is None, str(result.error)
    assert result.findings == [] and new is None
