"""`# noqa` comments read from the stretches of a file that hold findings give what a scan of
the whole file gives (devlint.run.suppressions: ``apply_noqa`` with ``statement_starts``)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import devlint.run.suppressions as suppressions
from devlint.run.suppressions import Comments, scan, statement_starts

ROOT = Path(__file__).resolve().parents[1]

CASES = {
    "strings and continuations": (
        "import torch  # noqa: F401\n"
        "x = (torch.ones(1).cuda(), '''\n"
        "# noqa inside a string\n"
        "''')  # noqa: DEV101\n"
        "y = torch.ones(1).cuda() + \\\n"
        "    1  # noqa\n"
        "z = 1; w = torch.ones(1).cuda()  # noqa: DEV101\n"
    ),
    "a def at column 0 inside a docstring": (
        '"""Module.\n\ndef not_code():  # noqa\n"""\n\n'
        "@decorator  # noqa: E1\n"
        "# a comment between\n"
        "def f():\n"
        '    s = """\n'
        "class Fake:  # noqa\n"
        '"""\n'
        "    return s  # noqa: DEV101\n"
        "\n\n"
        "class C:\n"
        "    def g(self):\n"
        "        return 1  # noqa\n"
    ),
    "f-strings and a lone backslash line": (
        "name = 1\n"
        "s = f'''{name}\n"
        "# noqa\n"
        "'''  # noqa: DEV103\n"
        "\\\n"
        "t = f'{name!r:>{name}}'  # noqa: DEV101\n"
        "if name:\n"
        "    u = 1  # noqa\n"
        "else:\n"
        "    u = 2\n"
    ),
    "crlf line ends": "import torch\r\nx = torch.ones(1).cuda()  # noqa\r\ny = '''\r\n# noqa\r\n'''\r\n",
}


def _texts() -> list[tuple[str, str]]:
    texts = list(CASES.items())
    texts += [(str(path.relative_to(ROOT)), path.read_text(encoding="utf-8")) for path in sorted((ROOT / "fixtures").rglob("*.py"))[:60]]
    texts += [(str(path.relative_to(ROOT)), path.read_text(encoding="utf-8")) for path in sorted((ROOT / "devlint").rglob("*.py"))[:40]]
    return [(name, text) for name, text in texts if _readable(text)]


def _readable(text: str) -> bool:
    try:
        ast.parse(text)
    except SyntaxError:
        return False
    return True


def _rows(text: str) -> int:
    return len(Comments(suppressions.LineIndex(text)).lines.starts)


@pytest.mark.parametrize(("name", "text"), _texts(), ids=lambda value: value if len(value) < 80 else "")
def test_every_stretch_scanned_gives_the_whole_scan(name: str, text: str) -> None:
    whole = scan(text)
    starts = statement_starts(ast.parse(text))
    stretched = suppressions._scan_around(text, starts, set(range(1, _rows(text) + 1)))
    assert stretched.by_row == whole.by_row
    assert stretched.continues == whole.continues
    assert stretched.exact_until == whole.exact_until


@pytest.mark.parametrize("name", sorted(CASES))
def test_one_row_reads_what_the_whole_scan_reads(name: str) -> None:
    text = CASES[name]
    whole = scan(text)
    starts = statement_starts(ast.parse(text))
    for row in range(1, _rows(text) + 1):
        alone = suppressions._scan_around(text, starts, {row})
        assert alone.target(row) == whole.target(row), row
        assert alone.comment(alone.target(row)) == whole.comment(whole.target(row)), row


def test_only_the_stretches_holding_findings_are_tokenized(monkeypatch: pytest.MonkeyPatch) -> None:
    blocks = [f"def f{i}():\n    return {i}  # noqa\n\n" for i in range(50)]
    text = "".join(blocks)
    scanned: list[str] = []
    real = suppressions.scan
    monkeypatch.setattr(suppressions, "scan", lambda part: scanned.append(part) or real(part))
    comments = suppressions._scan_around(text, statement_starts(ast.parse(text)), {2, 92})
    assert scanned == [blocks[0], blocks[30]]
    assert comments.comment(2) == (14, "# noqa")
    assert comments.comment(92) == (15, "# noqa")


def test_a_lone_carriage_return_or_an_unreadable_stretch_scans_the_whole_text(monkeypatch: pytest.MonkeyPatch) -> None:
    scanned: list[str] = []
    real = suppressions.scan
    monkeypatch.setattr(suppressions, "scan", lambda part: scanned.append(part) or real(part))
    text = "x = 1\rdef f():\n    return 1  # noqa\n"
    suppressions._scan_around(text, (1, 2), {3})
    assert scanned == [text]
    scanned.clear()
    # Starts that are not where statements begin (inside a string): the stretch does not
    # tokenize, and the whole text is scanned.
    text = 's = """\nx = 1  # noqa\n"""\n'
    comments = suppressions._scan_around(text, (1, 2), {2})
    assert scanned[-1] == text
    assert comments.comment(2) is None
