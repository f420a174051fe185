"""A check that takes over the fixes of the last check of the same file (devlint.engine.reuse)
gives exactly the findings of a fresh check: seeded edits inside function bodies (where reuse
applies) and edits that must stop it, on the fixture programs and torch's own sources."""

from __future__ import annotations

import ast
import random
import re
from pathlib import Path

import pytest

import devlint.engine.reuse as reuse
from devlint.engine.lint import lint_text
from devlint.gate.incremental import CPythonTrees
from devlint.gate.screen import FRESH, Reading
from devlint.engine.positions import StatementPrints
from devlint.engine.reuse import EarlierChecks
from devlint.registry import all_rules
from devlint.server.trees import SectionTrees
from devlint.settings import FixSettings

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = sorted((ROOT / "fixtures" / "pairs").rglob("*.py"))


def _torch_sources() -> list[Path]:
    """Files of the installed torch that call `.cuda()`: real code nobody here wrote."""
    try:
        import importlib.util

        spec = importlib.util.find_spec("torch")
    except (ImportError, ValueError):
        return []
    if spec is None or spec.origin is None:
        return []
    base = Path(spec.origin).parent
    found = [p for p in sorted(base.glob("*/*.py")) + sorted(base.glob("*/*/*.py")) if ".cuda(" in p.read_text(errors="replace")]
    return found[:: max(1, len(found) // 12)][:12]


# What a person types inside a function body: some of it changes what other statements' fixes
# read (a call of a module function, an argparse option, an attribute, an import, a global).
_TYPED = [
    "x = y.cuda()",
    "x = y",
    "t = t.cuda()",
    "model.cuda()",
    "state = torch.load(path)",
    "saved = t.device",
    "parser.add_argument('--device', default='cpu')",
    "self.device = torch.device('cpu')",
    "helper(torch.device('cpu'))",
    "import torch",
    "global device",
    "device = 'cpu'",
    "pass",
    "# a comment",
]


def _body_lines(lines: list[str]) -> list[int]:
    """Rows (0-based) inside the body of a top-level function."""
    rows, inside = [], False
    for i, line in enumerate(lines):
        if line.startswith(("def ", "async def ")):
            inside = True
        elif line.strip() and not line[0].isspace():
            inside = False
        elif inside and line.strip():
            rows.append(i)
    return rows


def _edit(rng: random.Random, lines: list[str]) -> list[str]:
    rows = _body_lines(lines)
    if not rows:
        return lines
    at = rng.choice(rows)
    line = lines[at]
    indent = line[: len(line) - len(line.lstrip())]
    edited = list(lines)
    choice = rng.random()
    if choice < 0.45:
        edited.insert(at, indent + rng.choice(_TYPED) + "\n")
    elif choice < 0.6 and ".cuda()" in line:
        edited[at] = line.replace(".cuda()", "", 1)
    elif choice < 0.75:
        del edited[at]
    elif choice < 0.85:
        edited.insert(at, line)
    else:
        words = sorted(set(re.findall(r"[A-Za-z_]\w*", line)))
        if words:
            old = rng.choice(words)
            edited[at] = re.sub(rf"\b{old}\b", rng.choice(["device", "torch", "model", "helper", old + "2"]), line)
    return edited


def _lint(
    text: str,
    earlier: EarlierChecks | None = None,
    trees: SectionTrees | None = None,
    prints: StatementPrints | None = None,
    reading: Reading = FRESH,
) -> list:
    sections = None if trees is None else (trees.parser(), 512)
    return lint_text(text, "t.py", list(all_rules()), FixSettings(), sections=sections, prints=prints, earlier=earlier, reading=reading)


def _exact(findings: list) -> list:
    """Findings with what equality leaves out: the span each edit's rule replaced."""
    return [(f, f.noqa_row, tuple(e.held for e in f.fix.edits) if f.fix else None) for f in findings]


def _follow(path: Path, seed: str, edits: int, monkeypatch: pytest.MonkeyPatch) -> tuple[int, int]:
    """Seeded edits of ``path``; after each that parses, the reusing check equals a fresh one.
    Returns how many checks were compared and how many found a window to reuse in."""
    reused = [0]
    real_window = reuse.window

    def counted(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        found = real_window(*args, **kwargs)
        reused[0] += found is not None
        return found

    monkeypatch.setattr("devlint.engine.context.window", counted)
    rng = random.Random(seed)
    lines = path.read_text().splitlines(keepends=True)
    # Everything the language server keeps between checks, its reading of the last text too.
    earlier, trees, prints, reading = EarlierChecks(), SectionTrees(), StatementPrints(), CPythonTrees().reading("t.py")
    _lint("".join(lines), earlier, trees, prints, reading)
    compared = 0
    for _ in range(edits):
        edited = _edit(rng, lines)
        text = "".join(edited)
        try:
            ast.parse(text)
        except (SyntaxError, ValueError):
            continue
        lines = edited
        assert _exact(_lint(text, earlier, trees, prints, reading)) == _exact(_lint(text))
        compared += 1
    return compared, reused[0]


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_reusing_checks_of_fixture_programs_are_fresh_checks(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _follow(path, f"reuse-{path.name}", 10, monkeypatch)


@pytest.mark.parametrize("path", _torch_sources(), ids=lambda p: p.stem)
def test_reusing_checks_of_torch_sources_are_fresh_checks(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _follow(path, f"reuse-{path.name}", 10, monkeypatch)


def test_the_bench_file_reuses_and_stays_exact(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The latency bench's file with findings: edits inside its functions do reuse, and every
    check equals a fresh one."""
    from test_server_parts import _bench_script

    path = tmp_path / "train.py"
    path.write_text(_bench_script(400))
    compared, reused = _follow(path, "reuse-bench", 25, monkeypatch)
    assert compared >= 15
    assert reused >= compared // 2


# Functions that keep the edited statement and the statement whose fix it changes in sections
# of their own (a statement whose section is parsed again is never reused).
_GAP = "".join(f"\n\ndef filler_{i}(values):\n    total = 0\n    for value in values:\n        total += value * {i}\n    return total\n" for i in range(12))

# A second device the finder falls back on, so that the fix changes without an insertion (which
# would stop reuse on its own).
_SPARE_DEVICE = "spare = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n"
_SPARE = "import torch\n" + _SPARE_DEVICE

# An edit inside one function that changes the fix of a finding in another statement: each
# through something file-wide that the device finder reads. (Before, after.)
_REACHING_EDITS = {
    # a call passing the CPU for `run`'s `device` parameter: `.cuda()` in `run` may not use it
    "call-of-a-module-function": (
        _SPARE + "\n\ndef run(model, device):\n    return model.cuda()\n" + _GAP + "\n\ndef main(net):\n    run(net, torch.device('cuda'))\n    return torch.device('cpu')\n",
        _SPARE + "\n\ndef run(model, device):\n    return model.cuda()\n" + _GAP + "\n\ndef main(net):\n    run(net, torch.device('cpu'))\n    return torch.device('cuda')\n",
    ),
    # `t` moved to CUDA inside a function: the module's `saved = t.device` is no GPU to reuse
    "name-moved-to-cuda": (
        "import torch\nt = torch.zeros(3)\nsaved = t.device\n\n\ndef f():\n    return t\n" + _GAP + "\n\nx = torch.zeros(2).cuda()\n",
        "import torch\nt = torch.zeros(3)\nsaved = t.device\n\n\ndef f():\n    return t.cuda()\n" + _GAP + "\n\nx = torch.zeros(2).cuda()\n",
    ),
    # an option declared inside a function: its default decides what `args.cuda` picks
    "argparse-option": (
        "import argparse\nimport torch\n\nparser = argparse.ArgumentParser()\nargs = parser.parse_args()\n"
        "device = torch.device('cuda' if args.cuda else 'cpu')\n" + _SPARE_DEVICE + "\n\ndef options():\n    pass\n" + _GAP + "\n\nx = torch.zeros(2).cuda()\n",
        "import argparse\nimport torch\n\nparser = argparse.ArgumentParser()\nargs = parser.parse_args()\n"
        "device = torch.device('cuda' if args.cuda else 'cpu')\n" + _SPARE_DEVICE + "\n\ndef options():\n    parser.add_argument('--cuda', action='store_true')\n" + _GAP + "\n\nx = torch.zeros(2).cuda()\n",
    ),
    # the type of `--gpu` decides whether `.cuda(args.gpu)` becomes `.to(...)` safely
    "index-option": (
        "import argparse\nimport torch\n\nparser = argparse.ArgumentParser()\n\n\ndef options():\n"
        "    parser.add_argument('--gpu', type=int, default=0)\n" + _GAP + "\n\nargs = parser.parse_args()\nx = torch.zeros(2).cuda(args.gpu)\n",
        "import argparse\nimport torch\n\nparser = argparse.ArgumentParser()\n\n\ndef options():\n"
        "    parser.add_argument('--gpu', default='0')\n" + _GAP + "\n\nargs = parser.parse_args()\nx = torch.zeros(2).cuda(args.gpu)\n",
    ),
    # what the file assigns to any `x.gpu` counts too
    "index-attribute": (
        "import argparse\nimport torch\n\nparser = argparse.ArgumentParser()\nparser.add_argument('--gpu', type=int, default=0)\n\n\n"
        "def configure(args, rank):\n    args.gpu = 1\n" + _GAP + "\n\nargs = parser.parse_args()\nx = torch.zeros(2).cuda(args.gpu)\n",
        "import argparse\nimport torch\n\nparser = argparse.ArgumentParser()\nparser.add_argument('--gpu', type=int, default=0)\n\n\n"
        "def configure(args, rank):\n    args.gpu = rank\n" + _GAP + "\n\nargs = parser.parse_args()\nx = torch.zeros(2).cuda(args.gpu)\n",
    ),
}


@pytest.mark.parametrize("edit", sorted(_REACHING_EDITS))
@pytest.mark.parametrize("backwards", [False, True])
def test_an_edit_that_changes_another_statements_fix_is_seen(edit: str, backwards: bool) -> None:
    before, after = _REACHING_EDITS[edit][:: -1 if backwards else 1]
    fresh_before, fresh_after = _lint(before), _lint(after)
    # the edit does change some other statement's fix: the case is worth having
    changed = {f.location: f.fix for f in fresh_before} != {f.location: f.fix for f in fresh_after}
    assert changed
    earlier, trees, prints = EarlierChecks(), SectionTrees(), StatementPrints()
    _lint(before, earlier, trees, prints)
    assert _exact(_lint(after, earlier, trees, prints)) == _exact(fresh_after)
    # and without that change, the same edit's neighbours are reused (the sections are apart)
    _lint(after, earlier, trees, prints)
    assert _exact(_lint(after + "\n", earlier, trees, prints)) == _exact(_lint(after + "\n"))


def test_a_file_of_repeated_blocks_reuses_only_findings_of_their_own_place() -> None:
    """A section whose text recurs takes a kept tree that stood elsewhere in the last check: its
    nodes are keys of findings at another place, which must not be taken over."""
    # one function of a section of its own (sections of 512 characters here), repeated
    block = "\n\ndef step(batch):\n    inputs = batch.cuda()\n" + "    inputs = inputs * 2  # scaled once more\n" * 6 + "    return inputs\n"
    text = "import torch\n" + block * 6
    at = text.index("    return inputs\n")
    edited = text[:at] + "    # note\n" + text[at:]
    earlier, trees, prints = EarlierChecks(), SectionTrees(), StatementPrints()
    _lint(text, earlier, trees, prints)
    _lint(text, earlier, trees, prints)
    assert _exact(_lint(edited, earlier, trees, prints)) == _exact(_lint(edited))


def test_a_shifted_finding_is_built_from_every_field() -> None:
    """Window.shifted builds a Finding field by field, in this order: a new field must be added
    there too, or a reused finding would lose it."""
    from dataclasses import fields

    from devlint.findings import Finding

    assert [f.name for f in fields(Finding)] == [
        "code", "name", "message", "filename", "location", "end_location", "fix", "cell", "source_line", "noqa_row",
    ]
