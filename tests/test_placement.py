"""Placement decides where a fix's ``import torch`` and device definition go, and returns why adding
them would be unsafe, as data (devlint.engine.placement): these read that decision directly."""

from __future__ import annotations

import libcst as cst
import pytest

from devlint.analysis.tree import descendants
from devlint.engine.context import FileContext
from devlint.engine.placement import Insertion, Placement, Source, local_definition, place
from devlint.engine.positions import positions
from devlint.engine.walk import walk
from devlint.findings import Edit, Fix
from devlint.fixes import LineIndex, apply_fixes
from devlint.settings import FixSettings


def _place(code: str, marker: str = "use") -> tuple[Placement, Source]:
    """The placement for a fix at every ``use(...)`` call of ``code`` that needs the definition,
    and what it read of ``code``."""
    module = cst.parse_module(code)
    ctx = FileContext("probe.py", code, module)
    walk(ctx, [])
    lines = LineIndex(code)
    source = Source(module, ctx.model, ctx.parents, positions(module, lines, module.body), lines, FixSettings())
    uses = [
        node
        for node in descendants(module)
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == marker
    ]
    return place(source, uses, "device"), source


def _applied(code: str, *edits: Edit | None) -> str:
    """``code`` with ``edits`` applied as one fix (edits at one offset keep their order)."""
    return apply_fixes(code, [Fix("safe", "", tuple(edit for edit in edits if edit is not None))])[0]


def test_the_definition_goes_after_the_imports_before_the_first_use() -> None:
    code = '"""Doc."""\nimport os\nuse(1)\n'
    placement = _place(code)[0]
    insertion = placement.module
    assert placement.local == (None,)
    assert insertion.import_hazard is None and insertion.definition_hazard is None
    assert _applied(code, insertion.torch, insertion.device) == (
        '"""Doc."""\nimport os\nimport torch\n\n'
        'device = torch.device("cuda" if torch.cuda.is_available() else "cpu")\nuse(1)\n'
    )


def test_a_file_that_imports_torch_under_another_name_gets_no_second_import() -> None:
    insertion = _place("import torch as th\nuse(1)\n")[0].module
    assert insertion.torch is None and insertion.torch_as == "th"
    assert insertion.device is not None and insertion.device.content.startswith("\ndevice = th.device(")


def test_torch_imported_inside_try_makes_the_definition_unsafe() -> None:
    insertion = _place("try:\n    import torch\nexcept ImportError:\n    torch = None\nuse(1)\n")[0].module
    assert insertion.torch is None
    assert insertion.definition_hazard == (
        "torch is imported inside `try:` at line 1; the inserted `device` definition fails where torch is missing"
    )


def test_gpus_hidden_after_the_definition_make_it_unsafe() -> None:
    code = "import os\nimport torch\ndef main():\n    use(1)\nos.environ['CUDA_VISIBLE_DEVICES'] = '1'\nmain()\n"
    insertion = _place(code)[0].module
    assert insertion.definition_hazard == (
        "the inserted `device` definition asks torch for the GPU before line 5 sets CUDA_VISIBLE_DEVICES"
    )


def test_a_function_that_imports_torch_itself_gets_the_definition() -> None:
    code = "def main():\n    import torch\n    use(1)\n"
    placement, source = _place(code)
    spot = placement.local[0]
    assert spot is not None and placement.module == Insertion()
    assert _applied(code, local_definition(source, spot, "device")) == (
        "def main():\n    import torch\n"
        '    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n    use(1)\n'
    )


def test_a_module_level_import_is_unsafe_where_torch_is_imported_only_in_functions() -> None:
    insertion = _place("def main():\n    import torch\n\nuse(1)\n")[0].module
    assert insertion.torch is not None
    assert insertion.import_hazard == (
        "the module imports torch only inside functions (line 2); "
        "a module-level `import torch` makes it fail to import where torch is missing"
    )


def test_nothing_to_place_when_no_fix_needs_it() -> None:
    placement = _place("import torch\nuse(1)\n", marker="other")[0]
    assert placement.local == () and placement.module.torch is None and placement.module.device is None


# -- the definition as isort and ruff leave code after the imports -----------------------------


def _fixed(text: str) -> str:
    from devlint.engine.lint import fix_text
    from devlint.registry import select_rules

    return fix_text(text, "x.py", select_rules(["DEV101"]), FixSettings()).text


DEFINITION = 'device = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'


def test_the_definition_is_separated_from_the_import_block_by_a_blank_line() -> None:
    assert _fixed("import torch\nx = torch.ones(2).cuda()\n") == "import torch\n\n" + DEFINITION + "x = torch.ones(2).to(device)\n"
    # the blank line the file had after its imports stays after the definition
    assert _fixed("import torch\n\nx = torch.ones(2).cuda()\n") == (
        "import torch\n\n" + DEFINITION + "\nx = torch.ones(2).to(device)\n"
    )


def test_the_definition_follows_the_last_of_imports_that_end_alike_without_a_final_newline() -> None:
    # Printed whole (no final newline); both imports end with the one shared `)` node.
    text = "import torch\nfrom a import (\n    b,\n)\nfrom d import (\n    e,\n)\n\nlog = 1\n\n\ndef f(y):\n    return torch.tensor(y).cuda()"
    assert _fixed(text) == (
        "import torch\nfrom a import (\n    b,\n)\nfrom d import (\n    e,\n)\n\n" + DEFINITION
        + "\nlog = 1\n\n\ndef f(y):\n    return torch.tensor(y).to(device)"
    )


def test_an_inserted_import_is_separated_from_the_definition_by_a_blank_line() -> None:
    # A file without imports: the import block devlint starts ends before the definition, as
    # isort and ruff leave it.
    assert _fixed("def f(x):\n    return x.cuda()\n") == (
        "import torch\n\n" + DEFINITION + "\n\ndef f(x):\n    return x.to(device)\n"
    )


def test_a_parenthesised_import_block_ends_at_its_closing_line() -> None:
    text = "import os\nfrom torch import (\n    nn,\n    optim,\n)  # layers\n\n\ndef build():\n    return nn.Linear(2, 2).cuda()\n"
    assert _fixed(text) == (
        "import os\nfrom torch import (\n    nn,\n    optim,\n)  # layers\nimport torch\n\n" + DEFINITION
        + "\n\ndef build():\n    return nn.Linear(2, 2).to(device)\n"
    )


def test_the_separated_definition_is_stable_under_a_second_fix_and_crlf() -> None:
    once = _fixed("import torch\r\nx = torch.ones(2).cuda()\r\ny = torch.ones(2).cuda()\r\n")
    assert once == "import torch\r\n\r\n" + DEFINITION.replace("\n", "\r\n") + "x = torch.ones(2).to(device)\r\ny = torch.ones(2).to(device)\r\n"
    assert _fixed(once) == once


def test_a_function_right_after_the_definition_gets_two_blank_lines_before_it() -> None:
    # as ruff and black leave a top-level def (E302), counting the blank lines already there
    for code, blanks in (("import torch\ndef f():\n    use(1)\n", 0), ("import torch\n\ndef f():\n    use(1)\n", 1)):
        insertion = _place(code)[0].module
        fixed = _applied(code, insertion.torch, insertion.device)
        assert 'else "cpu")\n\n\ndef f():' in fixed, (blanks, fixed)


def test_a_statement_right_after_the_definition_gets_no_blank_line_added() -> None:
    code = "import torch\nmodel = use(1)\n"
    insertion = _place(code)[0].module
    assert _applied(code, insertion.torch, insertion.device).endswith('else "cpu")\nmodel = use(1)\n')


def test_a_file_without_imports_gets_them_above_the_decorators_of_its_first_definition() -> None:
    """LibCST's span of a decorated function or class starts at `def`/`class`: inserted there,
    `import torch` came between the decorator and its definition, code that does not parse."""
    from devlint.engine.lint import fix_text
    from devlint.registry import all_rules

    for head, kind in (("", "def f(x):\n    return x.cuda()\n"), ('"""Doc."""\n# note\n', "class C:\n    def f(self, x):\n        return x.cuda()\n")):
        plain = fix_text(head + kind, "t.py", all_rules())
        decorated = fix_text(head + "@decorator(1)\n@other\n" + kind, "t.py", all_rules())
        assert decorated.applied == plain.applied == 1
        # The same insertion, above both decorators.
        definition = kind.split("\n", 1)[0]
        assert decorated.text == plain.text.replace(definition, "@decorator(1)\n@other\n" + definition, 1)
        compile(decorated.text, "t.py", "exec")


@pytest.mark.parametrize(
    ("code", "text"),
    [
        # rules that report after the walk (DEV103's variables, DEV302's loaders): the report
        # stands where the walk met its node, in the function whose `torch` the fix reads
        ("DEV103", 'import os\n\n\ndef main(torch):\n    device = "cuda"\n    return torch.nn.Linear(2, 2).to(device)\n'),
        ("DEV103", 'import os\n\n\ndef main():\n    torch = __import__("torch")\n    device = "cuda"\n    return torch.ones(2).to(device)\n'),
        (
            "DEV302",
            "import os\nfrom torch.utils.data import DataLoader\n\n\ndef main(torch, ds, device):\n"
            "    loader = DataLoader(ds, batch_size=2)\n    for x in loader:\n        x = x.to(device)\n",
        ),
    ],
)
def test_no_module_import_where_the_function_binds_torch_itself(code: str, text: str) -> None:
    from devlint.engine.lint import fix_text
    from devlint.registry import select_rules

    fixed = fix_text(text, "x.py", select_rules([code]), FixSettings(), unsafe=True).text
    assert fixed != text
    assert "import torch" not in fixed



@pytest.mark.parametrize(
    "guard",
    [
        "try:\n    import torch\n    HAS_TORCH = True\nexcept ImportError:\n    HAS_TORCH = False\n",
        "try:\n    import torch\nexcept ImportError:\n    pass\nelse:\n    import torch.nn\n",
    ],
)
def test_no_second_import_above_a_guarded_one(guard: str) -> None:
    """A module importable without torch (Megatron-DeepSpeed's testing_utils.py): the new code's
    `torch.` reads the binding the replaced `torch.cuda...` read, and an unguarded `import torch`
    above the guard would make the module fail to import where torch is missing."""
    from devlint.engine.lint import fix_text
    from devlint.registry import select_rules

    text = "import os\n\n" + guard + "\n\ndef sync():\n    torch.cuda.synchronize()\n"
    fixed = fix_text(text, "x.py", select_rules(["DEV601"]), FixSettings(torch_version=(2, 9))).text
    assert "torch.accelerator.synchronize()" in fixed
    assert fixed.count("import torch") == text.count("import torch")
