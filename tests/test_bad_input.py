"""Input devlint cannot (or can only just) handle: each gets one line naming the file, no
traceback, exit status 2, and the other files of the run are still checked and fixed.

Notebook input errors (not JSON, no ``cells``, another kernel language) are covered in
tests/test_notebooks.py.
"""

from __future__ import annotations

import codecs
import os
import random
import subprocess
import sys
import time
from pathlib import Path

import pytest

from devlint.cli import main
from devlint.gate.nesting import call_with_deep_stack
from devlint.run.file_job import process_file
from devlint.run.job import Job

CUDA = "import torch\nmodel = torch.nn.Linear(2, 2).cuda()\n"
# after the imports, a blank line first (as isort leaves code there)
DEVICE = '\ndevice = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'
FIXED = "import torch\n" + DEVICE + "model = torch.nn.Linear(2, 2).to(device)\n"
ROOT = Path(__file__).resolve().parent.parent


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main([*args, "--output-format", "concise", "--no-cache"])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def error_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("devlint: error:")]


def assert_reported(err: str, path: Path | str, message: str, row: int | None = None) -> None:
    """Exactly one error line for ``path``; it names the file (and row) and says ``message``."""
    assert "Traceback" not in err
    mine = [line for line in error_lines(err) if line.startswith(f"devlint: error: {path}:")]
    assert len(mine) == 1, err
    where = f"{path}:{row}:" if row is not None else f"{path}:"
    assert mine[0].startswith(f"devlint: error: {where}"), mine[0]
    assert message in mine[0], mine[0]


@pytest.fixture
def good(tmp_path: Path) -> Path:
    """A healthy file beside the bad one: the run must go on and fix it."""
    path = tmp_path / "good.py"
    path.write_text(CUDA)
    return path


def check_and_fix(capsys: pytest.CaptureFixture[str], bad: Path, good: Path, message: str, row: int | None = None) -> None:
    before = bad.read_bytes() if bad.is_file() else None
    code, out, err = run(capsys, "check", str(bad.parent))
    assert code == 2
    assert_reported(err, bad, message, row)
    assert f"{good}:2:30: DEV101" in out
    code, out, err = run(capsys, "fix", str(bad.parent))
    assert code == 2
    assert_reported(err, bad, message, row)
    assert good.read_text() == FIXED
    if before is not None:
        assert bad.read_bytes() == before


# -- files that are not Python source ------------------------------------------------------------


def test_syntax_error(tmp_path: Path, good: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("import torch\nx = torch.ones(2).cuda()\ndef f(:\n    pass\n")
    check_and_fix(capsys, bad, good, "syntax error", row=3)


def test_nul_byte(tmp_path: Path, good: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "nul.py"
    bad.write_bytes(b"import torch\n\nx = torch.ones(2).cuda()\x00\n")
    check_and_fix(capsys, bad, good, "NUL byte", row=3)


def test_not_utf8_without_a_coding_cookie(tmp_path: Path, good: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "latin.py"
    bad.write_bytes(b"import torch\nname = 'caf\xe9'\nx = torch.ones(2).cuda()\n")
    check_and_fix(capsys, bad, good, "not valid utf-8 (byte 0xe9)", row=2)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_binary_file_named_py(tmp_path: Path, good: Path, capsys: pytest.CaptureFixture[str], seed: int) -> None:
    bad = tmp_path / "blob.py"
    data = random.Random(seed).randbytes(4096)
    # Seed 3: no NUL at all, so the UTF-8 check is the one that must catch it.
    bad.write_bytes(data.replace(b"\x00", b"\x80") if seed == 3 else data)
    check_and_fix(capsys, bad, good, "NUL byte" if seed != 3 else "not valid utf-8")


def test_utf16_file(tmp_path: Path, good: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "wide.py"
    bad.write_bytes(codecs.BOM_UTF16_LE + CUDA.encode("utf-16-le"))
    check_and_fix(capsys, bad, good, "UTF-16", row=1)


@pytest.mark.parametrize("cookie", ["foobar", "rot13"])
def test_unknown_or_non_text_encoding_cookie(tmp_path: Path, good: Path, capsys: pytest.CaptureFixture[str], cookie: str) -> None:
    bad = tmp_path / "cookie.py"
    bad.write_bytes(f"#!/usr/bin/env python\n# -*- coding: {cookie} -*-\n".encode() + CUDA.encode())
    check_and_fix(capsys, bad, good, "bad encoding declaration", row=2)


# -- unusual but valid files: they work, and a fix keeps every byte it does not change -----------


def test_latin1_coding_cookie_works_and_the_fix_keeps_latin1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "latin.py"
    head = b"# -*- coding: latin-1 -*-\nimport torch\n"
    body = b"name = 'caf\xe9 cr\xe8me'  # \xa9 \xe0 la carte\nmodel = torch.nn.Linear(2, 2).cuda()\n"
    path.write_bytes(head + body)
    code, out, _ = run(capsys, "check", str(path))
    assert code == 1 and f"{path}:4:30: DEV101" in out
    code, _, err = run(capsys, "fix", str(path))
    assert code == 0, err
    assert path.read_bytes() == head + DEVICE.encode() + body.replace(b".cuda()", b".to(device)")


def test_an_encoding_that_does_not_round_trip_is_checked_but_never_rewritten(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """UTF-7 may spell one character several ways (`+AGE-` is `a`): writing the fixed text back
    would change bytes the fix never touched, so the fix is refused."""
    path = tmp_path / "seven.py"
    data = b"# coding: utf-7\nname = '+AGE-'\n" + CUDA.encode()
    path.write_bytes(data)
    code, out, _ = run(capsys, "check", str(path))
    assert code == 1 and f"{path}:4:30: DEV101" in out
    code, _, err = run(capsys, "fix", str(path))
    assert code == 2
    assert_reported(err, path, "do not survive decoding and encoding again; not rewritten")
    assert path.read_bytes() == data


def test_a_fix_that_needs_a_character_the_encoding_lacks_is_refused() -> None:
    from devlint.run.source import SourceError, decode

    decoded = decode(b"# coding: latin-1\nname = 'caf\xe9'\n")
    assert decoded.encode(decoded.text) == b"# coding: latin-1\nname = 'caf\xe9'\n"
    with pytest.raises(SourceError, match="cannot encode"):
        decoded.encode(decoded.text + "euro = '\u20ac'\n")


def test_utf8_bom_works_and_is_kept(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bom.py"
    path.write_bytes(codecs.BOM_UTF8 + CUDA.encode())
    code, out, _ = run(capsys, "check", str(path))
    assert code == 1 and f"{path}:2:30: DEV101" in out
    assert run(capsys, "fix", str(path))[0] == 0
    assert path.read_bytes() == codecs.BOM_UTF8 + FIXED.encode()


def test_bom_and_utf8_cookie_together(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "both.py"
    path.write_bytes(codecs.BOM_UTF8 + b"# coding: utf-8\n" + "s = 'ü'\n".encode() + CUDA.encode())
    assert run(capsys, "fix", str(path))[0] == 0
    assert path.read_bytes() == codecs.BOM_UTF8 + b"# coding: utf-8\n" + "s = 'ü'\n".encode() + FIXED.encode()


@pytest.mark.parametrize(
    ("endings", "name"),
    [(("\r\n",) * 5, "crlf"), (("\n", "\r\n", "\n", "\r\n", "\r\n"), "mixed"), (("\r",) * 5, "cr")],
)
def test_line_endings_are_kept(tmp_path: Path, capsys: pytest.CaptureFixture[str], endings: tuple[str, ...], name: str) -> None:
    lines = ["import torch", "def f(x):", "    return x.cuda()", "", "y = f(torch.ones(2))"]
    path = tmp_path / f"{name}.py"
    path.write_bytes("".join(line + end for line, end in zip(lines, endings)).encode())
    code, out, err = run(capsys, "fix", str(path))
    assert code == 0, err
    data = path.read_bytes().decode()
    # Every original line keeps its own ending; the inserted definition, and the two blank lines
    # before the function after it, take their neighbour's.
    expected = ["import torch" + endings[0], endings[0], DEVICE.strip("\n") + endings[0], endings[0], endings[0], "def f(x):" + endings[1],
                "    return x.to(device)" + endings[2], endings[3], "y = f(torch.ones(2))" + endings[4]]
    assert data == "".join(expected)


def test_no_newline_at_end_of_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "tail.py"
    path.write_text(CUDA.rstrip("\n"))
    assert run(capsys, "fix", str(path))[0] == 0
    assert path.read_text() == FIXED.rstrip("\n")


@pytest.mark.parametrize("content", [b"", b"\n", b"   \n\t\n", b"# only a comment", codecs.BOM_UTF8])
def test_empty_files_are_fine(tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes) -> None:
    path = tmp_path / "empty.py"
    path.write_bytes(content)
    for command in ("check", "fix"):
        code, out, err = run(capsys, command, str(path))
        assert (code, out, err) == (0, "All checks passed!\n", "")
    assert path.read_bytes() == content


# -- paths that are not files ----------------------------------------------------------------------


def test_missing_path(tmp_path: Path, good: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "check", str(tmp_path / "gone.py"), str(good))
    assert code == 2
    assert error_lines(err) == [f"devlint: error: {tmp_path / 'gone.py'}: no such file or directory"]
    assert f"{good}:2:30: DEV101" in out


def test_a_folder_named_like_a_python_file_is_walked_as_a_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "x.py"
    folder.mkdir()
    (folder / "inner.py").write_text(CUDA)
    for target in (tmp_path, folder):
        code, out, err = run(capsys, "check", str(target))
        assert (code, err) == (1, "")
        assert out.startswith(f"{folder / 'inner.py'}:2:30: DEV101")


def test_a_folder_met_where_a_file_was_expected_is_reported(tmp_path: Path) -> None:
    """Replaced by a folder between discovery and reading: reported, not a crash."""
    folder = tmp_path / "x.py"
    folder.mkdir()
    result = process_file(folder, Job(codes=("DEV101",), fix=True))
    assert result.error is not None and str(result.error) == f"{folder}: is a directory, not a file"


def test_dangling_symlink_and_symlink_loop(tmp_path: Path, good: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "dangling.py").symlink_to(tmp_path / "nowhere.py")
    (tmp_path / "loop_a.py").symlink_to(tmp_path / "loop_b.py")
    (tmp_path / "loop_b.py").symlink_to(tmp_path / "loop_a.py")
    for target in ([str(tmp_path)], [str(tmp_path / "dangling.py"), str(tmp_path / "loop_a.py"), str(good)]):
        code, out, err = run(capsys, "check", *target)
        assert code == 2
        assert_reported(err, tmp_path / "dangling.py", "dangling symbolic link")
        assert_reported(err, tmp_path / "loop_a.py", "symbolic link loop")
        assert f"{good}:2:30: DEV101" in out


def test_a_symlink_to_a_file_is_fixed_through_the_link(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    real = tmp_path / "real.py"
    real.write_text(CUDA)
    link = tmp_path / "link.py"
    link.symlink_to(real)
    assert run(capsys, "fix", str(link))[0] == 0
    assert link.is_symlink() and real.read_text() == FIXED


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_a_fifo_named_py_is_skipped_not_read(tmp_path: Path, good: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Reading it would block forever.
    os.mkfifo(tmp_path / "pipe.py")
    code, out, err = run(capsys, "check", str(tmp_path))
    assert code == 2
    assert_reported(err, tmp_path / "pipe.py", "not a regular file")
    assert f"{good}:2:30: DEV101" in out


@pytest.mark.skipif(os.geteuid() == 0 if hasattr(os, "geteuid") else False, reason="root reads files without read permission; see the simulated test below")
def test_unreadable_file(tmp_path: Path, good: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "secret.py"
    bad.write_text(CUDA)
    bad.chmod(0)
    try:
        code, out, err = run(capsys, "check", str(tmp_path))
    finally:
        bad.chmod(0o644)
    assert code == 2
    assert_reported(err, bad, "Permission denied")
    assert f"{good}:2:30: DEV101" in out


def test_unreadable_file_simulated(tmp_path: Path, good: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """The same as root, where chmod 0 does not stop reads: ``Path.read_bytes`` is made to fail
    with EACCES for that one file, as it does for an ordinary user."""
    bad = tmp_path / "secret.py"
    bad.write_text(CUDA)
    real_read_bytes = Path.read_bytes

    def read_bytes(self: Path) -> bytes:
        if self.name == "secret.py":
            raise PermissionError(13, "Permission denied", str(self))
        return real_read_bytes(self)

    monkeypatch.setattr(Path, "read_bytes", read_bytes)
    for command in ("check", "fix"):
        code, _, err = run(capsys, command, str(tmp_path))
        assert code == 2
        assert_reported(err, bad, "cannot read: Permission denied")
    assert good.read_text() == FIXED
    assert real_read_bytes(bad) == CUDA.encode()


def test_file_name_that_is_not_utf8(tmp_path: Path) -> None:
    """Such a name reaches Python as lone surrogates; it is printed as the bytes it has, even
    where stdout is strict UTF-8 (PYTHONIOENCODING=utf-8)."""
    path = tmp_path / os.fsdecode(b"caf\xe9.py")
    path.write_text(CUDA)
    env = {**os.environ, "PYTHONIOENCODING": "utf-8"}

    def devlint(command: str) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(
            [sys.executable, "-m", "devlint", command, "--no-cache", "--output-format", "concise", str(tmp_path)],
            capture_output=True, env=env, cwd=ROOT, timeout=60,
        )

    check = devlint("check")
    assert check.returncode == 1 and b"Traceback" not in check.stderr, check.stderr
    assert check.stdout.startswith(os.fsencode(path) + b":2:30: DEV101")
    fix = devlint("fix")
    assert fix.returncode == 0, fix.stderr
    assert path.read_text() == FIXED


# -- size and depth ------------------------------------------------------------------------------


def test_deep_nesting_never_crashes_the_interpreter(tmp_path: Path) -> None:
    """LibCST's native parser overflows the C stack (a segfault) on a few thousand nested
    brackets; devlint refuses those before parsing. Run in a subprocess: a crash must show as
    a signal exit status here, not take pytest down."""
    cases = {
        "parens.py": "import torch\nx = " + "(" * 5000 + "torch.ones(1).cuda()" + ")" * 5000 + "\n",
        "lists.py": "import torch\nx = " + "[" * 100_000 + "torch.ones(1).cuda()" + "]" * 100_000 + "\n",
        "fstring.py": "import torch\nx = f'{" + "(" * 3000 + "torch.ones(1).cuda()" + ")" * 3000 + "}'\n",
        "unary.py": "import torch\nx = " + "-" * 200_000 + "torch.ones(1).cuda()\n",
        "chain.py": "import torch\nx = torch.ones(1).cuda()" + " + 1" * 50_000 + "\n",
        "lambdas.py": "import torch\nf = " + "lambda: " * 20_000 + "torch.ones(1).cuda()\n",
        "nots.py": "import torch\nx = " + "not " * 50_000 + "torch.ones(1).cuda()\n",
        "blocks.py": "import torch\n" + "".join(" " * i + "if x:\n" for i in range(150)) + " " * 150 + "y.cuda()\n",
    }
    for name, text in cases.items():
        (tmp_path / name).write_text(text)
    # Deep but valid: CPython compiles it, so devlint must fix it.
    (tmp_path / "ok.py").write_text("import torch\nx = " + "(" * 150 + "1" + ")" * 150 + " + torch.ones(1).cuda()" + " + 1" * 1000 + "\n")
    done = subprocess.run(
        [sys.executable, "-m", "devlint", "fix", "--no-cache", "--output-format", "concise", str(tmp_path)],
        capture_output=True, text=True, timeout=240, cwd=ROOT,
    )
    assert done.returncode == 2, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    lines = error_lines(done.stderr)
    assert sorted(Path(line.removeprefix("devlint: error: ").split(":")[0]).name for line in lines) == sorted(cases)
    assert all("nested" in line or "indentation" in line or "syntax error" in line for line in lines), lines
    for name, text in cases.items():
        assert (tmp_path / name).read_text() == text
    assert ".to(device)" in (tmp_path / "ok.py").read_text()


IMPORTS = "import torch\nfrom torch import nn\n"
BLOCK = '''
class Block{i}(nn.Module):
    """Residual block number {i}."""

    def __init__(self, width: int = 64) -> None:
        super().__init__()
        self.fc = nn.Linear(width, width)
        self.norm = nn.LayerNorm(width)

    def forward(self, x):
        # the residual path stays cheap
        return x + torch.relu(self.norm(self.fc(x))) * {i}.5


def make_{i}(batch):
    values = [v * 2 for v in range({i} % 7 + 3)]
    return {{"batch": batch, "values": values, "name": f"block-{{batch}}-{i}"}}
'''


def realistic_module(size: int) -> str:
    """Ordinary model code of about ``size`` bytes, with one finding on its last line."""
    parts = [IMPORTS]
    total, i = 0, 0
    while total < size:
        parts.append(BLOCK.format(i=i))
        total += len(parts[-1])
        i += 1
    return "".join(parts) + "model = Block0().cuda()\n"


def check_big_file(capsys: pytest.CaptureFixture[str], path: Path, text: str, seconds: float) -> None:
    path.write_text(text)
    start = time.perf_counter()
    code, out, err = run(capsys, "check", str(path))
    rows = text.count("\n")
    assert (code, err) == (1, "") and out.startswith(f"{path}:{rows}:"), (code, out[:500], err)
    assert run(capsys, "fix", str(path))[0] == 0
    elapsed = time.perf_counter() - start
    assert path.read_text() == text.replace(IMPORTS, IMPORTS + DEVICE, 1).replace(
        "model = Block0().cuda()\n", "model = Block0().to(device)\n"
    )
    assert elapsed < seconds, f"check and fix of {len(text) / 1e6:.1f} MB took {elapsed:.0f} s"


def test_a_5_mb_file_of_mostly_docstrings_and_comments(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """5 MB that parse quickly (one huge docstring, many comments) around ordinary code: the
    reading, decoding, depth scan, positions and writing of a 5 MB file: 4 to 12 s on the
    2-core development machine."""
    prose = "Call x.cuda() in prose; torch.cuda.FloatTensor too; CUDA_VISIBLE_DEVICES=0.\n"
    code = realistic_module(100_000).removeprefix(IMPORTS)
    docstring = '"""' + prose * 50_000 + '"""\n'
    comments = "".join(f"# note {i}: model.cuda() would pin the GPU here\n" for i in range(20_000))
    check_big_file(capsys, tmp_path / "big.py", IMPORTS + docstring + comments + code, seconds=60)


@pytest.mark.skipif(os.environ.get("DEVLINT_SLOW_TESTS") != "1", reason="about 3 minutes (LibCST parses ~100 KB/s here); set DEVLINT_SLOW_TESTS=1")
def test_a_5_mb_file_of_ordinary_code(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    check_big_file(capsys, tmp_path / "big.py", realistic_module(5_000_000), seconds=600)


def test_a_text_cpython_read_within_its_default_depth_needs_no_second_compile(monkeypatch: pytest.MonkeyPatch) -> None:
    """The nesting check asks CPython, within its default depth, about a file with a logical line
    over 5,000 characters; the check of one file reads the text so first and does not ask again.
    What it says is what a fresh reading says, deep or not."""
    import devlint.gate.nesting as nesting
    from devlint.gate.screen import FRESH, OneFileReading

    wide = "import torch\nTABLE = [" + ", ".join(f"({i}, 'cuda:{i % 8}')" for i in range(600)) + "]\nx = torch.ones(1).cuda()\n"
    deep = "import torch\nx = " + "-" * 3_000 + "torch.ones(1).cuda()\nTABLE = [" + ", ".join(str(i) for i in range(2_000)) + "]\n"
    asked: list[str] = []
    verdict = nesting._cpython_verdict
    monkeypatch.setattr(nesting, "_cpython_verdict", lambda text: asked.append(text) or verdict(text))
    for text, problem in ((wide, None), (deep, "expression too deeply nested to parse")):
        reading = OneFileReading()
        tree = call_with_deep_stack(reading.tree, text)
        assert tree is not None
        found = call_with_deep_stack(reading.nesting, text, tree)
        assert (found.message if found else None) == problem
        assert found == call_with_deep_stack(FRESH.nesting, text, call_with_deep_stack(FRESH.tree, text))
    # The wide text was read within the default depth: only the fresh reading asked again.
    assert asked == [wide, deep, deep]


def test_a_text_cpython_read_within_its_default_depth_is_not_scanned(monkeypatch: pytest.MonkeyPatch) -> None:
    """CPython's tokenizer refuses what the bracket scan looks for: a text it read needs no scan,
    and a text too deep for it is still scanned and refused."""
    import devlint.gate.nesting as nesting
    from devlint.gate.screen import OneFileReading

    fixtures = sorted((Path(__file__).resolve().parent.parent / "fixtures").rglob("*.py"))
    for path in fixtures[::5]:
        text = path.read_text(encoding="utf-8")
        tree, within = call_with_deep_stack(nesting.tree_within_default_depth, text)
        if within:
            # What the scan would have said, had it run.
            assert call_with_deep_stack(nesting.nesting_problem, text) is None, path
    scanned: list[str] = []
    tokens = nesting._TOKENS

    class Tokens:
        def finditer(self, part: str) -> object:
            scanned.append(part)
            return tokens.finditer(part)

    monkeypatch.setattr(nesting, "_TOKENS", Tokens())
    text = "import torch\nx = [[[1]]]\n"
    reading = OneFileReading()
    assert call_with_deep_stack(reading.nesting, text, call_with_deep_stack(reading.tree, text)) is None
    assert scanned == []
    monkeypatch.undo()
    deep = "x = " + "(" * 250 + "1" + ")" * 250 + "\n"
    reading = OneFileReading()
    found = call_with_deep_stack(reading.nesting, deep, call_with_deep_stack(reading.tree, deep))
    assert found is not None and found.message == "too many nested parentheses"


@pytest.mark.parametrize("warnings", ["default", "error"])
def test_compiler_warnings_about_the_users_code_are_not_ours(tmp_path: Path, warnings: str) -> None:
    """CPython warns of ``1(2)``, ``x is 1`` and ``"\\d"`` when devlint compiles a file (a fixed
    file is compiled to bytecode): printed, they would be devlint's, under ``<devlint>``; under
    ``-W error`` they would turn a valid file into a syntax error and its fix into a refusal."""
    path = tmp_path / "odd.py"
    path.write_text('import torch\nx = "\\d"\ny = 1(2)\nz = x is 1\n' + CUDA.split("\n", 1)[1])
    done = subprocess.run(
        [sys.executable, "-W", warnings, "-m", "devlint", "check", "--diff", "--no-cache", str(path)],
        capture_output=True, text=True, cwd=tmp_path, timeout=120,
    )
    assert done.returncode == 1, done.stderr
    assert "Warning" not in done.stderr and "<devlint>" not in done.stderr, done.stderr
    assert "+model = torch.nn.Linear(2, 2).to(device)" in done.stdout
