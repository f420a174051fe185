"""Jupyter notebooks end to end through the CLI: check, fix and diff per cell, byte preservation.

``fixtures/notebooks/regression.ipynb`` is a realistic notebook (markdown, stream and image
outputs, magics, execution counts); ``regression.fixed.ipynb`` is the exact file after
``devlint fix --select DEV101``. Exact-text tests select DEV101 only, so that rules added later
leave them alone.
"""

from __future__ import annotations

import io
import json
import re
import shutil
from itertools import count
from pathlib import Path

import pytest
from report_lines import finding_lines

from devlint.cli import main
from devlint.run.notebook import cell_magic, mask

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "notebooks"
BEFORE = FIXTURES / "regression.ipynb"
AFTER = FIXTURES / "regression.fixed.ipynb"
DEVICE = 'device = torch.device("cuda" if torch.cuda.is_available() else "cpu")'
CUDA_CALL = re.compile(r"(\.cuda)\(\)")


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main([*args, "--select", "DEV101", "--no-cache"])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def code_cell(source: str, count: int | None = None, outputs: list | None = None) -> dict:
    return {"cell_type": "code", "execution_count": count, "metadata": {}, "outputs": outputs or [], "source": source.splitlines(True)}


def markdown_cell(source: str) -> dict:
    return {"cell_type": "markdown", "metadata": {}, "source": source.splitlines(True)}


def notebook(*cells: dict, language: str = "python") -> dict:
    return {
        "cells": list(cells),
        "metadata": {"kernelspec": {"display_name": "Python 3", "language": language, "name": "python3"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }


def nbformat_text(document: dict) -> str:
    """The layout nbformat (Jupyter, VS Code) saves."""
    return json.dumps(document, sort_keys=True, indent=1, ensure_ascii=False) + "\n"


def write(path: Path, document: dict) -> Path:
    path.write_text(nbformat_text(document), encoding="utf-8")
    return path


def sources(path: Path) -> list[str]:
    return ["".join(cell["source"]) for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]]


def expected_cuda_calls(path: Path) -> list[str]:
    """``path:cell N:row:col`` of every `.cuda()` in a code cell that is Python, read off the
    fixture itself (cells count from 1, markdown included)."""
    found = []
    for number, cell in enumerate(json.loads(path.read_text(encoding="utf-8"))["cells"], start=1):
        source = "".join(cell["source"])
        if cell["cell_type"] != "code" or cell_magic(source) not in (None, "time", "timeit"):
            continue
        for row, line in enumerate(source.splitlines(), start=1):
            if line.lstrip().startswith(("%", "!")):
                continue
            found += [f"{path}:cell {number}:{row}:{m.start(1) + 1}" for m in CUDA_CALL.finditer(line)]
    return found


# -- the realistic fixture ---------------------------------------------------------------------


def test_the_fixture_is_the_realistic_notebook_it_claims_to_be() -> None:
    document = json.loads(BEFORE.read_text(encoding="utf-8"))
    cells = document["cells"]
    kinds = {cell["cell_type"] for cell in cells}
    outputs = [o for cell in cells if cell["cell_type"] == "code" for o in cell["outputs"]]
    assert kinds == {"code", "markdown"}
    assert any(o["output_type"] == "stream" for o in outputs)
    assert any("image/png" in o.get("data", {}) for o in outputs)
    assert all(cell["execution_count"] for cell in cells if cell["cell_type"] == "code")
    assert cells[0]["cell_type"] == "code" and "import torch\n" in cells[0]["source"]
    text = "\n".join("".join(cell["source"]) for cell in cells)
    assert "%matplotlib" in text and "%%time" in text and re.search(r"^!", text, re.MULTILINE)
    assert "torch.cuda.FloatTensor" in text and ".cuda()" in text
    assert BEFORE.read_text(encoding="utf-8") == nbformat_text(document)


def test_check_names_every_finding_by_cell(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "check", str(BEFORE), "--output-format", "concise")
    assert code == 1, err
    reported = [line.split(": DEV101")[0] for line in finding_lines(out)]
    assert reported == expected_cuda_calls(BEFORE)
    assert len(reported) >= 3


def test_fix_gives_the_fixed_notebook_byte_for_byte(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "regression.ipynb"
    shutil.copy(BEFORE, target)
    code, _, err = run(capsys, "fix", str(target))
    assert code == 0, err
    assert target.read_bytes() == AFTER.read_bytes()
    # idempotent, and nothing left to report
    assert run(capsys, "fix", str(target))[0] == 0
    assert target.read_bytes() == AFTER.read_bytes()
    assert run(capsys, "check", str(target))[0] == 0


def test_the_fixed_fixture_differs_only_in_code_cell_sources() -> None:
    before, after = (json.loads(p.read_text(encoding="utf-8")) for p in (BEFORE, AFTER))
    changed = [i for i, (a, b) in enumerate(zip(before["cells"], after["cells"])) if a != b]
    assert changed and all(before["cells"][i]["cell_type"] == "code" for i in changed)
    for i in changed:
        before["cells"][i]["source"] = after["cells"][i]["source"]
    assert before == after
    fixed_sources = sources(AFTER)
    assert not any(CUDA_CALL.search(s) for s in fixed_sources[1:])  # the `%%time` cell too
    # the device definition goes in cell 1, which imports torch, though cell 3 imports more first
    assert fixed_sources[0].splitlines()[3] == DEVICE
    assert sum(s.count(DEVICE) for s in fixed_sources) == 1


def test_diff_shows_each_changed_cell_and_writes_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "regression.ipynb"
    shutil.copy(BEFORE, target)
    code, out, _ = run(capsys, "check", "--diff", str(target))
    assert code == 1
    assert target.read_bytes() == BEFORE.read_bytes()
    headers = re.findall(r"^--- (.*)\n\+\+\+ (.*)$", out, re.MULTILINE)
    changed = [n for n, (a, b) in enumerate(zip(sources(BEFORE), sources(AFTER)), start=1) if a != b]
    assert headers == [(f"{target}:cell {n}", f"{target}:cell {n}") for n in changed]
    assert f"+{DEVICE}\n" in out
    assert "-    pred = model(grid.cuda()).cpu()\n+    pred = model(grid.to(device)).cpu()\n" in out
    assert "json" not in out and '"source"' not in out


def test_diff_labels_relative_paths_a_and_b(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "nb.ipynb", notebook(markdown_cell("# t"), code_cell("import torch\nx = torch.ones(2).cuda()")))
    code, out, _ = run(capsys, "fix", "--diff", "nb.ipynb")
    assert code == 1
    assert out.startswith("--- a/nb.ipynb:cell 2\n+++ b/nb.ipynb:cell 2\n")
    assert out.endswith(f" import torch\n-x = torch.ones(2).cuda()\n+{DEVICE}\n+x = torch.ones(2).to(device)\n")


# -- one virtual module ------------------------------------------------------------------------


def test_a_device_defined_in_an_earlier_cell_is_reused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(
        tmp_path / "nb.ipynb",
        notebook(
            code_cell("import torch"),
            code_cell('dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")'),
            markdown_cell("later"),
            code_cell("def load(batch):\n    return batch"),
            code_cell("x = load(torch.ones(3)).cuda()"),
        ),
    )
    before = sources(path)
    assert run(capsys, "fix", str(path))[0] == 0
    assert sources(path) == before[:4] + ["x = load(torch.ones(3)).to(dev)"]


def test_without_a_torch_import_the_definition_goes_before_the_first_use(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(
        tmp_path / "nb.ipynb",
        notebook(markdown_cell("# no torch import"), code_cell("import numpy as np"), code_cell("y = model.cuda()")),
    )
    assert run(capsys, "fix", str(path))[0] == 0
    assert sources(path)[1:] == ["import numpy as np\nimport torch\n" + DEVICE, "y = model.to(device)"]


def test_torch_is_not_imported_again_before_the_cell_that_imports_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # peft's peft_lora_token_cls.ipynb: a cell importing from torch.nn only took an `import torch`
    # that the later cell already made, for a fix there that writes `torch.cuda...` (F811)
    path = write(
        tmp_path / "nb.ipynb",
        notebook(
            code_cell("from torch.nn import CrossEntropyLoss\n\nignored = CrossEntropyLoss().ignore_index"),
            code_cell("import os\n\nimport torch\n\nfeatures = torch.load(os.environ['DATA'])"),
        ),
    )
    before = sources(path)
    assert main(["fix", str(path), "--select", "DEV402", "--no-cache"]) == 0
    capsys.readouterr()
    after = sources(path)
    assert after[0] == before[0]
    assert after[1].count("import torch") == 1 and "map_location=" in after[1]


def test_the_definition_skips_empty_cells_and_stays_before_the_use(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path / "nb.ipynb", notebook(code_cell(""), code_cell("# setup\nx = t.cuda()")))
    assert run(capsys, "fix", str(path))[0] == 0
    assert sources(path) == ["", "# setup\nimport torch\n" + DEVICE + "\nx = t.to(device)"]


# -- IPython syntax ----------------------------------------------------------------------------

MAGICS = """%env CUDA_LAUNCH_BLOCKING=1
!pip install --quiet \\
    einops
files = !ls data/
import torch
torch.cuda?
for size in (1, 2):
    %time y = torch.ones(size)
total = (10
         % 3)
doc = \"\"\"
%not a magic inside a string
\"\"\"
z = y.cuda()"""


def test_magics_are_masked_and_survive_the_fix(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path / "nb.ipynb", notebook(code_cell(MAGICS, 1)))
    code, out, err = run(capsys, "check", str(path), "--output-format", "concise")
    assert (code, err) == (1, "")
    assert finding_lines(out) == [f"{path}:cell 1:14:6: DEV101 [*] `.cuda()` hardcodes the CUDA device; use `.to(device)`"]
    assert run(capsys, "fix", str(path))[0] == 0
    expected = MAGICS.replace("import torch\n", "import torch\n" + DEVICE + "\n").replace("y.cuda()", "y.to(device)")
    assert sources(path) == [expected]


def test_the_scanner_leaves_python_alone() -> None:
    masked = mask(MAGICS, count())
    kept = [line for line in masked.text.splitlines() if "__devlint_magic_" not in line]
    assert "         % 3)" in kept and "%not a magic inside a string" in kept
    assert [original for _, original in masked.pairs] == [
        "%env CUDA_LAUNCH_BLOCKING=1", "!pip install --quiet \\", "    einops", "!ls data/", "torch.cuda?",
        "    %time y = torch.ones(size)",
    ]
    assert masked.complete


@pytest.mark.parametrize("magic", ["%%time", "%%timeit -n 3", "%%capture out"])
def test_python_cell_magics_are_linted_and_fixed(tmp_path: Path, capsys: pytest.CaptureFixture[str], magic: str) -> None:
    path = write(tmp_path / "nb.ipynb", notebook(code_cell("import torch"), code_cell(f"{magic}\nx = torch.ones(2).cuda()")))
    code, out, _ = run(capsys, "check", str(path), "--output-format", "concise")
    assert code == 1 and f"{path}:cell 2:2:18:" in out
    assert run(capsys, "fix", str(path))[0] == 0
    assert sources(path)[1] == f"{magic}\nx = torch.ones(2).to(device)"


@pytest.mark.parametrize("magic", ["%%bash", "%%writefile train.py", "%%html", "%%script python"])
def test_other_cell_magics_skip_the_cell(tmp_path: Path, capsys: pytest.CaptureFixture[str], magic: str) -> None:
    body = f"{magic}\nimport torch\nx = torch.ones(2).cuda()\necho $((1 + 1))"
    path = write(tmp_path / "nb.ipynb", notebook(code_cell(body), code_cell("y = 1")))
    before = path.read_bytes()
    assert run(capsys, "check", str(path))[:2] == (0, "All checks passed!\n")
    assert run(capsys, "fix", str(path))[0] == 0
    assert path.read_bytes() == before


# -- cell numbers in every format --------------------------------------------------------------


def test_cell_numbers_count_every_cell_from_one_in_every_format(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(
        tmp_path / "nb.ipynb",
        notebook(
            markdown_cell("# Title"),
            code_cell("import torch"),
            {"cell_type": "raw", "metadata": {}, "source": ["raw text"]},
            code_cell("a = 1\nnet = torch.nn.Linear(2, 2).cuda()"),
        ),
    )
    _, concise, _ = run(capsys, "check", str(path), "--output-format", "concise")
    assert concise.startswith(f"{path}:cell 4:2:28: DEV101")
    _, full, _ = run(capsys, "check", str(path), "--output-format", "full")
    assert f"{path}:cell 4:2:28: DEV101" in full and "2 | net = torch.nn.Linear(2, 2).cuda()" in full
    _, raw, _ = run(capsys, "check", str(path), "--output-format", "json")
    [finding] = json.loads(raw)
    assert (finding["cell"], finding["location"], finding["end_location"]) == (4, {"row": 2, "column": 28}, {"row": 2, "column": 35})
    # the definition the fix adds lands in cell 2, right after `import torch`: row 2, column 1
    assert {"content": DEVICE + "\n", "location": {"row": 2, "column": 1}, "end_location": {"row": 2, "column": 1}} in finding["fix"]["edits"]


def test_noqa_works_inside_a_cell(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path / "nb.ipynb", notebook(code_cell("import torch\nx = torch.ones(1).cuda()  # noqa: DEV101")))
    assert run(capsys, "check", str(path))[:2] == (0, "All checks passed!\n")


# -- layouts and bytes -------------------------------------------------------------------------

PLOT_PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgYGD4DwABBAEAwS2OUAAAAABJRU5ErkJggg==\n"


def _rich_notebook(single_string_sources: bool) -> dict:
    cells = [
        markdown_cell("# Données — «résumé» ✓\nTabs\tand \"quotes\" and back\\slashes"),
        code_cell("import torch\nimport numpy as np", 1),
        code_cell(
            "w = torch.ones(3).cuda()  # poids ✓\nprint(w)",
            2,
            [
                {"name": "stdout", "output_type": "stream", "text": ["tensor([1., 1., 1.], device='cuda:0')\n"]},
                {"data": {"image/png": PLOT_PNG, "text/plain": ["<Figure>"]}, "metadata": {}, "output_type": "display_data"},
            ],
        ),
    ]
    document = notebook(*cells)
    document["metadata"]["custom"] = {"z": 1, "a": [1, 2], "unicode": "é"}
    if single_string_sources:
        for cell in document["cells"]:
            cell["source"] = "".join(cell["source"])
    return document


@pytest.mark.parametrize(
    ("indent", "ensure_ascii", "newline", "single"),
    [(1, False, "\n", False), (2, False, "", True), (4, True, "", False), (None, True, "\n", True)],
    ids=["nbformat", "indent2-no-newline-string-source", "indent4-ascii", "compact-ascii"],
)
def test_fix_keeps_every_other_byte(tmp_path: Path, capsys: pytest.CaptureFixture[str], indent, ensure_ascii, newline, single) -> None:
    document = _rich_notebook(single)
    # key order as written (not sorted) must survive too
    text = json.dumps(document, indent=indent, ensure_ascii=ensure_ascii) + newline
    path = tmp_path / "nb.ipynb"
    path.write_text(text, encoding="utf-8")
    assert run(capsys, "fix", str(path))[0] == 0
    fixed = path.read_text(encoding="utf-8")
    new_source = DEVICE.join(["import torch\nimport numpy as np\n", ""])
    expected = _rich_notebook(single)
    for cell, source in ((1, new_source), (2, "w = torch.ones(3).to(device)  # poids ✓\nprint(w)")):
        expected["cells"][cell]["source"] = source if single else source.splitlines(True)
    assert json.loads(fixed) == expected
    assert fixed == json.dumps(expected, indent=indent, ensure_ascii=ensure_ascii) + newline


def test_hand_written_layouts_are_edited_in_place(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # CRLF, odd spacing, a `\/` escape, a repeated key: re-serialising could keep none of them.
    text = (
        '{ "metadata" : {"kernelspec": {"language":"python"}},\r\n'
        '  "cells" : [ {"cell_type":"markdown","source":"see http:\\/\\/x.org","metadata":{}},\r\n'
        '\t{ "cell_type" : "code", "outputs":[], "metadata":{}, "execution_count":null,\r\n'
        '\t  "source" : [ "import torch\\n" ,\r\n\t\t"a = torch.ones(1).cuda()" ] } ],\r\n'
        '  "nbformat":4, "nbformat_minor":4, "nbformat_minor":5 }'
    )
    path = tmp_path / "nb.ipynb"
    path.write_bytes(text.encode("utf-8"))
    assert run(capsys, "fix", str(path))[0] == 0
    expected = text.replace(
        '"a = torch.ones(1).cuda()"',
        json.dumps(DEVICE + "\n") + ' ,\r\n\t\t"a = torch.ones(1).to(device)"',
    )
    assert path.read_bytes() == expected.encode("utf-8")


def test_a_byte_order_mark_survives(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "nb.ipynb"
    text = nbformat_text(notebook(code_cell("import torch\nm.cuda()")))
    path.write_bytes(b"\xef\xbb\xbf" + text.encode("utf-8"))
    assert run(capsys, "fix", str(path))[0] == 0
    fixed = text.replace('"m.cuda()"', json.dumps(DEVICE + "\n") + ',\n    "m.to(device)"')
    assert path.read_bytes() == b"\xef\xbb\xbf" + fixed.encode("utf-8")


# -- notebooks that cannot be checked ----------------------------------------------------------

# name: (content, what the error line says after the file name)
BAD = {
    "broken.ipynb": ('{"cells": [', ":1:12: not a valid notebook: bad JSON"),
    "empty.ipynb": ("", ":1:1: not a valid notebook: bad JSON"),
    "old.ipynb": ('{"worksheets": [], "nbformat": 3}', ': not a notebook: no "cells" list'),
    "list.ipynb": ("[1, 2]", ": not a notebook: the JSON is not an object"),
    "julia.ipynb": (nbformat_text(notebook(code_cell("x.cuda()"), language="julia")), ": kernel language is 'julia', not Python"),
    "latin1.ipynb": ('{"cells": [], "x": "caf\xe9"}', ": not a valid notebook: not UTF-8"),
    "syntax.ipynb": (
        nbformat_text(notebook(markdown_cell("m"), code_cell("import torch"), code_cell("y = 1\ndef f(x)\n    pass"))),
        ": cell 3, line 2, column 9: syntax error",
    ),
    "open.ipynb": (
        nbformat_text(notebook(code_cell("x = (1,"), code_cell("2)"))),
        ": cell 1: the cell ends inside a bracket",
    ),
}


def test_bad_notebooks_get_one_line_each_and_the_run_goes_on(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for name, (text, _) in BAD.items():
        (tmp_path / name).write_bytes(text.encode("latin-1" if name == "latin1.ipynb" else "utf-8"))
    good = write(tmp_path / "good.ipynb", notebook(code_cell("import torch\nm.cuda()")))
    for command in ("check", "fix"):
        code, out, err = run(capsys, command, str(tmp_path), "--output-format", "concise")
        assert code == 2
        assert "Traceback" not in err
        lines = [line for line in err.splitlines() if line.startswith("devlint: error:")]
        assert len(lines) == len(BAD)
        for name, (_, message) in BAD.items():
            assert any(line.startswith(f"devlint: error: {tmp_path / name}{message}") for line in lines), (name, err)
        if command == "check":
            assert out.startswith(f"{good}:cell 1:2:2: DEV101")
    assert "m.to(device)" in sources(good)[0]
    assert (tmp_path / "broken.ipynb").read_text() == '{"cells": ['


def test_a_notebook_read_from_stdin(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    data = nbformat_text(notebook(markdown_cell("m"), code_cell("import torch\nm.cuda()"))).encode("utf-8")
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(data)))
    code, out, _ = run(capsys, "check", "-", "--stdin-filename", "nb.ipynb", "--output-format", "concise")
    assert (code, out.split(": DEV101")[0]) == (1, "nb.ipynb:cell 2:2:2")
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(data)))
    code, out, _ = run(capsys, "fix", "-", "--stdin-filename", "nb.ipynb", "--output-format", "concise")
    assert json.loads(out)["cells"][1]["source"] == ["import torch\n", DEVICE + "\n", "m.to(device)"]
