"""An import a fix leaves unused goes with that fix (issue 31 item 3): `from torch.cuda.amp import
autocast, GradScaler` once every `autocast(...)` and `GradScaler(...)` is `torch.amp.*`, at each
torch-version. Only when no use is left: a use no fix removes (unfixed, `# noqa`, another rule
not selected, a name used otherwise), `__all__`, a string annotation, a package's `__init__.py`,
`import a as a` keep it. The removal belongs to the fixes, whichever of them are applied: one
fix alone (an editor's quick fix), a subset (safe fixes only), or all of them in one round."""

from __future__ import annotations

import ast

import pytest

from devlint.engine.lint import fix_text, lint_text
from devlint.findings import Edit
from devlint.fixes import apply_fixes
from devlint.registry import all_rules, rule_by_code
from devlint.run.suppressions import apply_noqa
from devlint.settings import FixSettings

RULES = list(all_rules())
VERSIONS = [FixSettings(torch_version=(2, 4)), FixSettings(torch_version=(2, 9))]
AMP = (
    "import torch\nfrom torch.cuda.amp import autocast, GradScaler\n\n"
    "scaler = GradScaler()\n\n\ndef train(model, x):\n    with autocast():\n        loss = model(x)\n"
    "    scaler.scale(loss).backward()\n\n\ndef evaluate(model, x):\n    with autocast():\n        return model(x)\n"
)


def imported(text: str) -> set[str]:
    """The names the text's import statements bind."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(alias.asname or alias.name).split(".")[0] for alias in node.names}
    return names


def unused(text: str) -> set[str]:
    """The imported names nothing else in the text reads (what an import linter reports)."""
    tree = ast.parse(text)
    read = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
    return imported(text) - read


def fixed(text: str, settings: FixSettings, filename: str = "train.py", **options) -> str:
    result = fix_text(text, filename, RULES, settings, **options)
    again = fix_text(result.text, filename, RULES, settings, **options)
    assert again.text == result.text, "not idempotent"
    return result.text


@pytest.mark.parametrize("settings", VERSIONS, ids=["2.4", "2.9"])
def test_the_import_goes_when_every_use_is_fixed(settings) -> None:
    text = fixed(AMP, settings)
    assert "torch.cuda.amp" not in text and "torch.amp.GradScaler(" in text
    assert unused(text) == set()
    assert text.startswith("import torch\n\n")


@pytest.mark.parametrize("settings", VERSIONS, ids=["2.4", "2.9"])
def test_a_name_still_read_stays_and_the_commas_come_out_right(settings) -> None:
    source = AMP.replace("autocast, GradScaler", "(\n    GradScaler,  # scaler\n    autocast,\n)") + "KIND = GradScaler\n"
    text = fixed(source, settings)
    assert "from torch.cuda.amp import (\n    GradScaler,  # scaler\n)\n" in text
    assert unused(text) == set()
    one_line = fixed(AMP + "KIND = GradScaler\n", settings)
    assert "from torch.cuda.amp import GradScaler\n" in one_line
    last = fixed(AMP.replace("autocast, GradScaler", "GradScaler, autocast") + "KIND = GradScaler\n", settings)
    assert "from torch.cuda.amp import GradScaler\n" in last


def test_a_use_no_fix_removes_keeps_the_import() -> None:
    source = AMP.replace("    with autocast():\n        return model(x)\n", "    with autocast():  # noqa: DEV501\n        return model(x)\n")
    result = fix_text(source, "train.py", RULES, VERSIONS[1], keep=apply_noqa)
    assert "from torch.cuda.amp import autocast\n" in result.text
    assert unused(result.text) == set()
    # a rule that is not selected leaves its uses, and so the import of what they read
    only_scaler = fix_text(AMP.replace("scaler = GradScaler()", "scaler = GradScaler()\nx = torch.cuda.FloatTensor(2)"), "train.py", RULES, VERSIONS[1])
    assert unused(only_scaler.text) == set()


def test_one_fix_alone_removes_only_what_it_alone_stops_using() -> None:
    findings = lint_text(AMP, "train.py", RULES, VERSIONS[1])
    by_row = {f.location.row: f for f in findings if f.code == "DEV501"}
    scaler, first, second = by_row[4], by_row[8], by_row[14]
    # the scaler's fix removes the sole use of GradScaler: its edits (as an editor applies them)
    # take the name out of the import
    text = _apply_edits(AMP, scaler.fix.edits)
    assert "from torch.cuda.amp import autocast\n" in text and unused(text) == set()
    # one of autocast's two uses: the import stays, with either fix alone
    for fix in (first.fix, second.fix):
        alone = _apply_edits(AMP, fix.edits)
        assert "autocast" in imported(alone) and unused(alone) == set()
    # the two together remove it, applied in one round
    both, applied = apply_fixes(AMP, [first.fix, second.fix])
    assert applied == 2
    assert "from torch.cuda.amp import GradScaler\n" in both and unused(both) == set()


def test_an_unsafe_fix_left_out_keeps_its_import() -> None:
    # DEV102's fix of an index of unknown type is unsafe; `current_device` is read by it only
    source = "import torch\nfrom torch.cuda import current_device, FloatTensor\nx = FloatTensor(2)\ny = x.cuda(current_device())\n"
    safe = fixed(source, VERSIONS[1])
    assert unused(safe) == set()
    assert "FloatTensor" not in imported(safe)


@pytest.mark.parametrize(
    "source",
    [
        # re-exported: `__all__` names it, or `import a as a`
        "import torch\nfrom torch.cuda.amp import autocast\n__all__ = ['autocast']\nwith autocast():\n    pass\n",
        "import torch\nfrom torch.cuda.amp import autocast as autocast\nwith autocast():\n    pass\n",
        # a string annotation reads it
        "import torch\nfrom torch.cuda.amp import GradScaler\nscaler: 'GradScaler' = GradScaler()\n",
        # `__all__` built from something the file cannot see
        "import torch\nimport other\nfrom torch.cuda.amp import autocast\n__all__ = other.names\nwith autocast():\n    pass\n",
        # a fallback binds it too
        "import torch\ntry:\n    from torch.cuda.amp import autocast\nexcept ImportError:\n    autocast = None\nwith autocast():\n    pass\n",
        # an attribute of a class
        "import torch\n\n\nclass Net:\n    from torch.cuda.amp import autocast\n\n    def f(self):\n        with autocast():\n            pass\n",
    ],
)
def test_an_import_that_may_be_read_otherwise_stays(source) -> None:
    text = fixed(source, VERSIONS[1])
    assert "from torch.cuda.amp import" in text
    assert "torch.amp." in text


def test_a_package_init_keeps_its_imports() -> None:
    source = "import torch\nfrom torch.cuda.amp import autocast\nwith autocast():\n    pass\n"
    assert "from torch.cuda.amp import autocast\n" in fixed(source, VERSIONS[1], filename="pkg/__init__.py")
    assert "from torch.cuda.amp import" not in fixed(source, VERSIONS[1], filename="pkg/module.py")


def test_an_import_in_a_function_goes_and_a_module_alias_too() -> None:
    source = (
        "import torch\nfrom torch.cuda import amp\n\n\ndef step(model, x):\n"
        "    from torch.cuda.amp import GradScaler\n    scaler = GradScaler()\n    with amp.autocast():\n        return model(x), scaler\n"
    )
    text = fixed(source, VERSIONS[1])
    assert unused(text) == set()
    assert "amp" not in imported(text) and "GradScaler" not in imported(text)
    assert "    scaler = torch.amp.GradScaler(" in text


def test_an_import_under_if_goes_and_an_emptied_block_gets_pass() -> None:
    source = (
        "import torch\nif torch.__version__ >= '1.6':\n    from torch.cuda.amp import autocast\n"
        "if True:\n    from torch.cuda.amp import GradScaler\n    print('amp')\n"
        "with autocast():\n    scaler = GradScaler()\n"
    )
    text = fixed(source, VERSIONS[0])
    assert "if torch.__version__ >= '1.6':\n    pass\nif True:\n    print('amp')\n" in text
    assert unused(text) == set()


@pytest.mark.parametrize("settings", VERSIONS, ids=["2.4", "2.9"])
def test_a_guarded_statement_right_after_the_import_takes_it_along(settings) -> None:
    # the guard holds the line break before its statement, the import line's last character
    source = "import torch\nfrom torch.cuda import synchronize\nsynchronize()\nx = 1\n"
    text = fixed(source, settings)
    assert "from torch.cuda" not in text and unused(text) == set()


def _apply_edits(text: str, edits: tuple[Edit, ...]) -> str:
    """The edits applied as a consumer of the JSON output or an editor applies them."""
    for edit in sorted(edits, key=lambda e: (e.start_offset, e.end_offset), reverse=True):
        text = text[: edit.start_offset] + edit.content + text[edit.end_offset :]
    return text


@pytest.mark.parametrize("between", ["", "    y = 2\n"])
def test_a_block_joined_to_the_one_before_keeps_the_imports_its_body_reads(between: str) -> None:
    """DEV604 joins `if torch.cuda.is_available():` to an identical accelerator check right before
    it: only the header line goes (``Replace.until``), the body stays, and so do the imports it
    reads (`synchronize` was removed, leaving a NameError)."""
    text = (
        "import torch\nfrom torch.cuda import synchronize\n"
        "if torch.accelerator.is_available():\n    x = 1\n"
        f"if torch.cuda.is_available():\n{between}    synchronize()\n"
    )
    # DEV604 alone: with DEV601 too, `synchronize()` becomes `torch.accelerator.synchronize()`.
    fixed = fix_text(text, "t.py", [rule_by_code("DEV604")], FixSettings(torch_version=(2, 6)))
    assert fixed.applied == 1 and "if torch.cuda" not in fixed.text and "    synchronize()" in fixed.text
    assert "synchronize" in imported(fixed.text) and unused(fixed.text) == set()
    everything = fix_text(text, "t.py", RULES, FixSettings(torch_version=(2, 6)), unsafe=True).text
    assert unused(everything) == set() and "synchronize" not in imported(everything)
