"""A helper function fixes call (devlint.fixes.HelperRef): DEV402 writes its long `map_location`
expression once per file, in `_map_location()`. These check that the function is inserted once,
where it is defined before any call can run, in the file's style, in the same place whichever of
the file's fixes is applied first, and that the fixed code behaves as the inline expression."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
import textwrap

import pytest

from devlint.engine.lint import fix_text, lint_text
from devlint.findings import Edit, Fix, Location
from devlint.fixes import apply_fixes
from devlint.registry import all_rules
from devlint.run.cache import _decode, _encode

RULES = list(all_rules())
DEV402 = [rule for rule in RULES if rule.code == "DEV402"]

TWO_LOADS = textwrap.dedent(
    """\
    import torch


    def restore(model, optimizer, root):
        model.load_state_dict(torch.load(root + "/model.pt"))
        optimizer.load_state_dict(torch.load(root + "/optimizer.pt"))
    """
)


def _one_at_a_time(text: str, order: int) -> str:
    """``text`` with its fixes applied one by one, as quick fixes in an editor: each time the
    first (``order`` 0) or the last finding's fix alone, on the text the last one left."""
    for _ in range(10):
        findings = [f for f in lint_text(text, "probe.py", RULES) if f.fix is not None and f.fix.applicability == "safe"]
        if not findings:
            return text
        chosen = findings[0] if order == 0 else findings[-1]
        text = apply_fixes(text, [chosen.fix])[0]
    raise AssertionError("fixes did not converge")


def test_two_loads_share_one_function_defined_after_the_imports() -> None:
    text = fix_text(TWO_LOADS, "probe.py", DEV402).text
    assert text.count("def _map_location():") == 1
    assert text.count("map_location=_map_location()") == 2
    assert "lambda storage" in text and text.count("lambda storage") == 1
    # two blank lines on either side of the function, as ruff and black leave one
    assert "import torch\n\n\ndef _map_location():" in text
    assert 'else None\n    )\n\n\ndef restore(' in text
    assert fix_text(text, "probe.py", DEV402).text == text


@pytest.mark.parametrize("order", [0, 1])
def test_quick_fixes_one_at_a_time_end_as_fixing_the_file(order: int) -> None:
    # The first quick fix inserts the function; the next finds it in the file and calls it.
    assert _one_at_a_time(TWO_LOADS, order) == fix_text(TWO_LOADS, "probe.py", RULES).text


def test_the_device_definition_comes_before_the_function_whichever_fix_is_first() -> None:
    # DEV101's fix (reported before the loads) and DEV402's insert at the same spot
    before = textwrap.dedent(
        """\
        import torch
        def train(model, path, other):
            model.cuda()
            model.load_state_dict(torch.load(path))
            return torch.load(other)
        """
    )
    everything = fix_text(before, "probe.py", RULES).text
    assert everything.index("device = torch.device(") < everything.index("def _map_location():") < everything.index("def train(")
    assert "import torch\n\ndevice = torch.device(" in everything
    assert 'else "cpu")\n\n\ndef _map_location():' in everything
    for order in (0, 1):
        assert _one_at_a_time(before, order) == everything
    compile(everything, "probe.py", "exec")


def test_the_function_follows_the_file_style() -> None:
    before = "import torch as th\r\nif True:\r\n\ta = th.load('a')\r\n\tb = th.load('b')\r\n"
    text = fix_text(before, "probe.py", DEV402).text
    assert "\n" not in text.replace("\r\n", "")
    assert "\r\n\treturn None if th.cuda.is_available() else (\r\n\t\tlambda storage" in text
    assert "torch.cuda" not in text


def test_a_module_level_load_finds_the_function_defined_before_it() -> None:
    before = '"""Doc."""\nimport torch\na = torch.load("a")\nb = torch.load("b")\n'
    text = fix_text(before, "probe.py", DEV402).text
    assert text.index("def _map_location") < text.index("a = torch.load")
    assert text.startswith('"""Doc."""\nimport torch\n\n\ndef _map_location():')


def test_a_function_written_otherwise_is_not_taken_for_the_helper() -> None:
    # Same name, other body: not the helper; the one load keeps the expression in place
    before = "import torch\n\n\ndef _map_location():\n    return 'cpu'\n\n\nstate = torch.load('a')\n"
    text = fix_text(before, "probe.py", DEV402).text
    assert "map_location=None if torch.cuda.is_available() else lambda" in text


def test_the_rank_of_an_edit_survives_the_cache() -> None:
    # apply_fixes orders insertions at one offset by rank: a cached fix must keep it.
    finding = next(f for f in lint_text(TWO_LOADS, "probe.py", DEV402))
    assert finding.fix is not None and {e.rank for e in finding.fix.edits} == {0, 2}
    decoded = _decode(_encode([finding], None), "probe.py")[0][0]
    assert decoded.fix is not None and [e.rank for e in decoded.fix.edits] == [e.rank for e in finding.fix.edits]


def test_insertions_at_one_offset_go_by_rank() -> None:
    at = Location(1, 1)
    low, high = Edit(0, 0, "a\n", at, at), dataclasses.replace(Edit(0, 0, "b\n", at, at), rank=1)
    assert apply_fixes("x\n", [Fix("safe", "", (high,)), Fix("safe", "", (low,))])[0] == "a\nb\nx\n"


def test_the_function_gives_what_the_inline_expression_gives(tmp_path) -> None:
    # On this CPU-only machine both pick the lambda: each load of a checkpoint whose storages
    # say "cuda:0" comes back on the CPU, and one saved on the CPU as it was.
    fixed = fix_text(TWO_LOADS, "probe.py", DEV402).text
    program = fixed + textwrap.dedent(
        """\

        import io
        inline = None if torch.cuda.is_available() else lambda storage, location: storage if location.startswith("cuda") else None
        helper = _map_location()
        storage = torch.UntypedStorage(4)
        for location in ("cuda:0", "cuda", "cpu"):
            assert (inline is None) == (helper is None)
            assert helper(storage, location) is inline(storage, location)
        buffer = io.BytesIO()
        torch.save({"w": torch.ones(2)}, buffer)
        buffer.seek(0)
        print(torch.load(buffer, map_location=_map_location())["w"].device)
        """
    )
    script = tmp_path / "program.py"
    script.write_text(program)
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "cpu"


def test_the_inserted_function_leaves_nothing_for_dev604() -> None:
    """DEV604's page promises that fixing never creates a finding of it: the function asks
    whether CUDA's own storages can be restored, which no accelerator check answers, and is
    written as an expression DEV604 leaves alone (as an `if`, it was reported after the fix)."""
    from devlint.settings import FixSettings

    before = 'import torch\nfirst = torch.load("a.pt")\nsecond = torch.load("b.pt")\n'
    at_2_9 = FixSettings(torch_version=(2, 9))
    fixed = fix_text(before, "probe.py", all_rules(), at_2_9).text
    assert "def _map_location():" in fixed
    assert [f.code for f in lint_text(fixed, "probe.py", all_rules(), at_2_9)] == []
