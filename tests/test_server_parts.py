"""The language server's parts in process: positions, minimal edits, the document store,
settings, configuration tracking, severities and the analysis of notebooks."""

from __future__ import annotations

import ast
import os
import random
import re
from pathlib import Path

import pytest

pytest.importorskip("pygls", reason="the language server needs the `server` extra")

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from lsprotocol import types  # noqa: E402

from devlint.run.config import FileSettings  # noqa: E402
from devlint.run.suppressions import scan  # noqa: E402
from devlint.server.analysis import analyze, fix_all  # noqa: E402
from devlint.server.comments import CommentCache  # noqa: E402
from devlint.server.configuration import ConfigTracker, default_settings  # noqa: E402
from devlint.server.documents import Documents  # noqa: E402
from devlint.server.model import Analysis, Source  # noqa: E402
from devlint.server.settings import ServerSettings, read_settings  # noqa: E402
from devlint.server.severity import severity, tags  # noqa: E402
from devlint.server.textdiff import minimal_edits  # noqa: E402
from devlint.server.textlines import UTF8, UTF16, UTF32, Lines, apply_change  # noqa: E402
from devlint.engine.positions import StatementPrints  # noqa: E402
from devlint.engine.reuse import EarlierChecks  # noqa: E402
from devlint.server.trees import SectionTrees  # noqa: E402
from devlint.settings import FixSettings  # noqa: E402

P = types.Position


# -- positions -------------------------------------------------------------------------------


def test_columns_in_each_encoding() -> None:
    lines = Lines.of("a = '😀é'; b\n")
    offset = lines.text.index("b")
    assert lines.position(offset, UTF16) == P(0, 11)  # the emoji is two UTF-16 units
    assert lines.position(offset, UTF8) == P(0, 14)  # four bytes, then two
    assert lines.position(offset, UTF32) == P(0, 10)
    for encoding in (UTF8, UTF16, UTF32):
        assert lines.offset(lines.position(offset, encoding), encoding) == offset


def test_only_lsp_line_breaks_count() -> None:
    # A form feed and U+2028 are no line breaks for LSP (str.splitlines says they are).
    text = "x = 1\x0c\ny = '\u2028'\r\nz = 2\rw = 3"
    lines = Lines.of(text)
    assert len(lines.starts) == 4
    assert lines.line(1) == "y = '\u2028'"
    assert lines.position(text.index("w"), UTF16) == P(3, 0)
    assert lines.offset(P(2, 0), UTF16) == text.index("z")


def test_positions_past_the_end_are_clamped() -> None:
    lines = Lines.of("ab\r\ncd")
    assert lines.offset(P(0, 99), UTF16) == 2  # end of the line, before its CRLF
    assert lines.offset(P(7, 0), UTF16) == 6
    assert lines.position(3, UTF16) == P(0, 2)  # between CR and LF: the line's end


def test_a_column_inside_a_surrogate_pair_moves_past_the_character() -> None:
    lines = Lines.of("😀x")
    assert lines.offset(P(0, 1), UTF16) == 1
    assert lines.offset(P(0, 2), UTF16) == 1
    assert lines.offset(P(0, 3), UTF16) == 2


def test_apply_change_with_a_range_and_whole() -> None:
    text = "é = 1\n😀 = 2\n"
    change = types.TextDocumentContentChangePartial(range=types.Range(P(1, 2), P(1, 2)), text="x")
    assert apply_change(text, change, UTF16) == "é = 1\n😀x = 2\n"
    assert apply_change(text, types.TextDocumentContentChangeWholeDocument(text="new"), UTF16) == "new"


# -- minimal edits ---------------------------------------------------------------------------


def _apply(old: str, edits: list[tuple[int, int, str]]) -> str:
    for start, end, content in reversed(edits):
        old = old[:start] + content + old[end:]
    return old


def test_edits_touch_only_what_changed() -> None:
    old = "import torch\n" + "x = 1\n" * 50 + "y = t.cuda()\n"
    new = "import torch\ndevice = 'cpu'\n" + "x = 1\n" * 50 + "y = t.to(device)\n"
    edits = minimal_edits(old, new)
    assert edits == [(13, 13, "device = 'cpu'\n"), (old.index("cuda()"), old.index("cuda()") + 5, "to(device")]
    assert minimal_edits(old, old) == []


def test_a_crlf_is_never_split() -> None:
    old = "a\r\nb"
    for new in ("a\rX\r\nb", "a\r\nXb", "a\nb"):
        for start, end, _ in minimal_edits(old, new):
            assert not (0 < start < len(old) and old[start - 1] == "\r" and old[start] == "\n")
            assert not (0 < end < len(old) and old[end - 1] == "\r" and old[end] == "\n")
        assert _apply(old, minimal_edits(old, new)) == new


lines_of_text = st.lists(st.sampled_from(["x = 1", "y.cuda()", "", "    z", "é😀", "# c"]), max_size=12)


@settings(max_examples=200, deadline=None)
@given(lines_of_text, lines_of_text, st.sampled_from(["\n", "\r\n"]))
def test_minimal_edits_make_the_new_text(old: list[str], new: list[str], newline: str) -> None:
    before, after = newline.join(old), newline.join(new)
    edits = minimal_edits(before, after)
    assert _apply(before, edits) == after
    assert all(a[1] <= b[0] for a, b in zip(edits, edits[1:]))


# -- the document store ----------------------------------------------------------------------


def _item(uri: str, text: str, language: str = "python") -> types.TextDocumentItem:
    return types.TextDocumentItem(uri=uri, language_id=language, version=1, text=text)


def test_notebook_cells_are_inserted_moved_and_closed() -> None:
    docs = Documents()
    cells = [types.NotebookCell(kind=types.NotebookCellKind.Code, document=f"c{i}") for i in range(3)]
    docs.open_notebook(
        types.DidOpenNotebookDocumentParams(
            notebook_document=types.NotebookDocument(uri="nb", notebook_type="jupyter", version=1, cells=cells),
            cell_text_documents=[_item(f"c{i}", f"x{i}") for i in range(3)],
        )
    )

    def change(version: int, structure: types.NotebookDocumentCellChangeStructure) -> list[str]:
        params = types.DidChangeNotebookDocumentParams(
            notebook_document=types.VersionedNotebookDocumentIdentifier(version=version, uri="nb"),
            change=types.NotebookDocumentChangeEvent(cells=types.NotebookDocumentCellChanges(structure=structure)),
        )
        return docs.change_notebook(params)[1]

    # Move c0 to the end: removed in one change, inserted in the next, its text kept.
    assert change(2, types.NotebookDocumentCellChangeStructure(array=types.NotebookCellArrayChange(start=0, delete_count=1))) == []
    inserted = types.NotebookCellArrayChange(start=2, delete_count=0, cells=[cells[0]])
    assert change(3, types.NotebookDocumentCellChangeStructure(array=inserted)) == []
    notebook = docs.notebooks["nb"]
    assert [(c.doc.uri, c.doc.text) for c in notebook.cells] == [("c1", "x1"), ("c2", "x2"), ("c0", "x0")]
    closed = change(
        4,
        types.NotebookDocumentCellChangeStructure(
            array=types.NotebookCellArrayChange(start=0, delete_count=1),
            did_close=[types.TextDocumentIdentifier(uri="c1")],
        ),
    )
    assert closed == ["c1"]
    assert notebook.version == 4 and [c.doc.uri for c in notebook.cells] == ["c2", "c0"]
    # A markdown cell the client does not sync (no text sent) is kept, empty and not Python.
    markdown = types.NotebookCell(kind=types.NotebookCellKind.Markup, document="md")
    change(5, types.NotebookDocumentCellChangeStructure(array=types.NotebookCellArrayChange(start=0, delete_count=0, cells=[markdown])))
    assert [(c.doc.uri, c.doc.text, c.python) for c in notebook.cells] == [("md", "", False), ("c2", "x2", True), ("c0", "x0", True)]


# -- settings --------------------------------------------------------------------------------


def test_settings_from_any_shape_the_editors_send() -> None:
    base = ServerSettings()
    assert read_settings({"devlint": {"unsafeFixes": True}}, base).unsafe_fixes is True
    assert read_settings({"settings": {"showSyntaxErrors": False}}, base).show_syntax_errors is False
    assert read_settings({"debounceMs": 20}, base).debounce_ms == 20
    # Wrong types and unknown shapes leave the settings as they were.
    assert read_settings({"unsafeFixes": "yes", "debounceMs": True}, base) == base
    assert read_settings(None, base) == base
    assert read_settings({"debounceMs": -5}, base).debounce_ms == 0


# -- configuration ---------------------------------------------------------------------------


def _touch_later(path: Path, text: str) -> None:
    """Write, and move the mtime on so even a coarse clock sees the change."""
    stat = path.stat() if path.exists() else None
    path.write_text(text)
    if stat is not None:
        os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10_000_000))


def test_the_tracker_sees_configuration_changes_and_keeps_good_settings(tmp_path: Path) -> None:
    tracker = ConfigTracker(tmp_path)
    file = tmp_path / "pkg" / "train.py"
    file.parent.mkdir()
    assert tracker.settings_for(file).settings == default_settings()
    config = tmp_path / "pyproject.toml"
    _touch_later(config, '[tool.devlint]\nignore = ["DEV101"]\ndevice-name = "dev"\n')
    ignored = tracker.settings_for(file)
    assert "DEV101" not in ignored.settings.codes and ignored.settings.fix.device_name == "dev"
    # A nearer devlint.toml appears: it wins.
    _touch_later(file.parent / "devlint.toml", 'select = ["DEV4"]\n')
    assert set(tracker.settings_for(file).settings.codes) == {"DEV401", "DEV402", "DEV403"}
    (file.parent / "devlint.toml").unlink()
    assert tracker.settings_for(file) == ignored
    _touch_later(config, "[tool.devlint\n")  # half saved
    broken = tracker.settings_for(file)
    assert broken.error is not None and "pyproject.toml" in broken.error
    assert broken.settings == ignored.settings  # the last good settings of this file
    again = tracker.settings_for(file)
    assert again.error is None and again.settings == ignored.settings  # reported once
    _touch_later(config, "[tool.devlint]\n")
    assert tracker.settings_for(file) == type(broken)(default_settings())


# -- severity --------------------------------------------------------------------------------


def test_severities_and_tags() -> None:
    assert severity("DEV101") == types.DiagnosticSeverity.Warning
    assert severity("DEV303") == types.DiagnosticSeverity.Warning
    assert severity("DEV301") == types.DiagnosticSeverity.Information
    assert severity("DEV601") == types.DiagnosticSeverity.Information
    assert tags("DEV501") == [types.DiagnosticTag.Deprecated]
    assert tags("DEV105") == [types.DiagnosticTag.Deprecated]
    assert tags("DEV101") is None


# -- analysis --------------------------------------------------------------------------------

SETTINGS = FileSettings(default_settings().codes, FixSettings())


def _notebook(*cells: str | None) -> Source:
    return Source("nb.ipynb", cells, True, SETTINGS)


def test_an_unfinished_cell_is_the_problem_of_that_cell() -> None:
    found = analyze(_notebook("import torch\n", None, "x = torch.zeros(1).cuda(\n"))
    assert found.items == ()
    assert found.problem is not None
    assert found.problem.text == 2 and found.problem.row == 1
    assert "never closed" in found.problem.message


def test_a_parse_error_is_placed_in_its_cell() -> None:
    found = analyze(_notebook("import torch\n", "x = 1\n", "y = (1 +\n  2)\nz = $\n"))
    assert found.problem is not None and (found.problem.text, found.problem.row) == (2, 3)


def test_notebook_fix_all_changes_each_cell_it_needs() -> None:
    source = _notebook("import torch\n", "# markdown", "model = torch.nn.Linear(1, 1).cuda()\n")
    source = Source(source.filename, (source.texts[0], None, source.texts[2]), True, SETTINGS)
    changes = fix_all(source)
    assert {change.text for change in changes} == {0, 2}
    fixed = list(source.texts)
    for change in sorted(changes, key=lambda c: (c.text, -c.start)):
        text = fixed[change.text] or ""
        fixed[change.text] = text[: change.start] + change.content + text[change.end :]
    assert fixed[2] == "model = torch.nn.Linear(1, 1).to(device)\n"
    assert fixed[0] is not None and fixed[0].startswith("import torch\ndevice = torch.device(")


def test_a_skipped_file_and_an_engine_bug_give_no_findings(monkeypatch: pytest.MonkeyPatch) -> None:
    skipped = Source("a.py", ("# devlint: skip-file\nx.cuda()\n",), False, SETTINGS)
    assert analyze(skipped).items == () and analyze(skipped).problem is None
    import devlint.server.analysis as analysis

    def broken(*args: object, **kwargs: object) -> None:
        raise KeyError("boom")

    raised_at = broken.__code__.co_firstlineno + 1

    monkeypatch.setattr(analysis, "lint_text", broken)
    found = analyze(Source("a.py", ("import torch\nx.cuda()\n",), False, SETTINGS))
    assert found.problem is not None
    assert found.problem.message == f"internal error at test_server_parts.py:{raised_at}: KeyError: 'boom' (please report this)"


# -- sections parsed once, reused by the next check ---------------------------------------------

ROOT = Path(__file__).resolve().parent.parent
SECTIONED = [*sorted((ROOT / "fixtures" / "pairs").rglob("*.py")), ROOT / "examples" / "train_cuda.py"]


def _lint(text: str, trees: SectionTrees | None = None, chars: int = 256, prints: StatementPrints | None = None) -> list:
    from devlint.engine.lint import lint_text
    from devlint.registry import all_rules

    sections = None if trees is None else (trees.parser(), chars)
    return lint_text(text, "t.py", list(all_rules()), FixSettings(), sections=sections, prints=prints)


@pytest.mark.parametrize("path", SECTIONED, ids=lambda p: p.stem)
def test_findings_from_reused_sections_are_those_of_one_parse(path: Path) -> None:
    text = path.read_text()
    trees, prints = SectionTrees(), StatementPrints()
    expected = _lint(text)
    assert _lint(text, trees, prints=prints) == expected  # sections parsed and printed now
    assert _lint(text, trees, prints=prints) == expected  # every section and print taken from those kept


def test_reused_sections_through_random_edits_give_the_findings_of_one_parse() -> None:
    """Seeded edits as a person makes them (lines typed, removed, duplicated): after each, the
    check that reuses the trees of unchanged sections finds exactly what a fresh parse finds."""
    rng = random.Random(23)
    lines = (ROOT / "examples" / "train_cuda.py").read_text().splitlines(keepends=True)
    typed = ["x = torch.zeros(3).cuda()\n", "state = torch.load(path)\n", "\n", "# note\n", "value = 1\n"]
    trees, prints = SectionTrees(kept_chars=20_000), StatementPrints(kept_chars=10_000)
    compared = 0
    for _ in range(40):
        edited = list(lines)
        at = rng.randrange(len(edited))
        choice = rng.random()
        if choice < 0.5:
            indent = edited[at][: len(edited[at]) - len(edited[at].lstrip())]
            edited.insert(at, (indent if edited[at].strip() else "") + rng.choice(typed))
        elif choice < 0.8 and len(edited) > 10:
            del edited[at]
        else:
            edited.insert(at, edited[at])
        text = "".join(edited)
        try:
            ast.parse(text)
        except SyntaxError:
            continue  # undone, as a person would
        lines = edited
        assert _lint(text, trees, prints=prints) == _lint(text)
        compared += 1
    assert compared >= 20


# Edits that change what a file binds at module level, or where a fix puts its definitions.
_FILE_LEVEL = [
    "import torch\n",
    "import torch as th\n",
    "from torch import nn\n",
    "device = torch.device('cuda')\n",
    "DEVICE = 'cuda'\n",
    "import os\nos.environ['CUDA_VISIBLE_DEVICES'] = '1'\n",
    "torch.set_default_device('cuda')\n",
    "x = torch.zeros(3).cuda()\n",
    "def helper(t):\n    return t.cuda()\n",
    "\n",
]


def _edited(rng: random.Random, lines: list[str]) -> list[str]:
    """One edit: a file-level line typed at the top level, a line removed (an import or a
    definition among them), a line duplicated, or a name renamed on one line."""
    edited = list(lines)
    at = rng.randrange(len(edited))
    choice = rng.random()
    if choice < 0.4:
        top = [i for i, line in enumerate(edited) if line.strip() and not line[0].isspace()] or [0]
        edited.insert(rng.choice(top), rng.choice(_FILE_LEVEL))
    elif choice < 0.6 and len(edited) > 5:
        del edited[at]
    elif choice < 0.75:
        edited.insert(at, edited[at])
    else:
        words = sorted(set(re.findall(r"[A-Za-z_]\w*", edited[at])))
        if words:
            old = rng.choice(words)
            edited[at] = re.sub(rf"\b{old}\b", rng.choice(["device", "torch", "th", "model", old + "2"]), edited[at])
    return edited


def _items(analysis: Analysis) -> tuple:
    return tuple((i.finding, i.text, i.fix, i.noqa) for i in analysis.items), analysis.problem


@pytest.mark.parametrize("path", SECTIONED, ids=lambda p: p.stem)
def test_printed_statements_kept_through_file_level_edits_give_one_parses_findings(path: Path) -> None:
    """Seeded edits that add and remove imports (`import torch` among them), device definitions
    and names used elsewhere: the check that reuses kept trees and printed statements gives
    exactly the findings and fixes of a fresh check."""
    rng = random.Random(f"23b-{path.name}")
    lines = path.read_text().splitlines(keepends=True)
    trees, prints = SectionTrees(kept_chars=20_000), StatementPrints(kept_chars=10_000)
    compared = 0
    for _ in range(12):
        edited = _edited(rng, lines)
        text = "".join(edited)
        try:
            ast.parse(text)
        except (SyntaxError, ValueError):
            continue
        lines = edited
        assert _lint(text, trees, chars=200, prints=prints) == _lint(text)
        compared += 1
    assert compared >= 4


def test_the_worker_publishes_a_fresh_analysis_through_file_level_edits(monkeypatch: pytest.MonkeyPatch) -> None:
    """The worker's own analysis (kept trees and prints, noqa changes included) of a large file
    after each seeded edit equals the analysis of a worker that has kept nothing."""

    block = (ROOT / "examples" / "train_cuda.py").read_text()
    lines = (block * 4).splitlines(keepends=True)
    rng = random.Random(2301)
    compared = 0
    for _ in range(12):
        edited = _edited(rng, lines)
        text = "".join(edited)
        try:
            ast.parse(text)
        except (SyntaxError, ValueError):
            continue
        lines = edited
        _assert_kept_equals_fresh(monkeypatch, text)
        compared += 1
    assert compared >= 4


class _OneScan:
    """The comments of a fresh check: one scan of the whole text, as before chunks were kept."""

    @staticmethod
    def comments(text: str) -> object:
        return scan(text)


_ONE_SCAN = _OneScan()


def _assert_kept_equals_fresh(monkeypatch, text: str) -> None:
    """The worker's analysis with what it keeps equals one by a worker that keeps nothing."""
    import devlint.server.analysis as analysis

    source = Source("t.py", (text,), False, SETTINGS)
    kept = analyze(source)
    with monkeypatch.context() as fresh:
        fresh.setattr(analysis, "_TREES", SectionTrees())
        fresh.setattr(analysis, "_PRINTS", StatementPrints())
        fresh.setattr(analysis, "_COMMENTS", _ONE_SCAN)
        fresh.setattr(analysis, "_EARLIER", EarlierChecks())
        assert _items(kept) == _items(analyze(source))


def _bench_script(lines: int) -> str:
    import importlib.util

    spec = importlib.util.spec_from_file_location("lsp_latency", ROOT / "bench" / "lsp_latency.py")
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    return bench.script(lines)


# What the bench toggles, and what a person types into such a file: comments (a `# noqa` among
# them) and strings that open and close across definitions.
_BENCH_TYPED = [
    "    # noqa: DEV101\n",
    "    x = y.cuda()  # noqa\n",
    "    x = y.cuda()  # noqa: DEV999\n",
    '    s = """\ndef fake():  # in a string, not a comment\n"""\n',
    "    t = (1,\n# a comment inside brackets\n2)\n",
    "    # note\n",
    "\n",
]


def test_the_worker_gives_a_fresh_analysis_through_seeded_edits_to_the_bench_file(monkeypatch: pytest.MonkeyPatch) -> None:
    """The bench's file with findings (bench/lsp_latency.py): `.cuda()` toggled, comments and
    `# noqa` typed, strings opened across definitions, lines removed; after every edit that
    parses (one that does not is undone, as a person would), the worker's analysis with what it
    kept (trees, prints, comments) is a fresh one's."""

    lines = _bench_script(600).splitlines(keepends=True)
    rng = random.Random(2302)
    compared = 0
    for _ in range(40):
        edited = list(lines)
        at = rng.randrange(3, len(edited))
        choice = rng.random()
        if choice < 0.4 and ".cuda()" in edited[at]:
            edited[at] = edited[at].replace(".cuda()", "")
        elif choice < 0.4:
            edited[at] = edited[at].replace("inputs = inputs", "inputs = inputs.cuda()", 1)
        elif choice < 0.85:
            edited.insert(at, rng.choice(_BENCH_TYPED))
        else:
            del edited[at]
        text = "".join(edited)
        try:
            ast.parse(text)
        except SyntaxError:
            continue
        lines = edited
        _assert_kept_equals_fresh(monkeypatch, text)
        compared += 1
    assert compared >= 20


def test_a_statement_is_printed_again_for_other_wanted_nodes_or_another_indent() -> None:
    import libcst as cst

    module = cst.parse_module("def f(x):\n    return x.cuda()\n")
    other = module.with_changes(default_indent="  ")
    statement = module.body[0]
    call = statement.body.body[0].body[0].value
    prints = StatementPrints()
    first = prints.printed(module, statement, frozenset({id(statement)}))
    assert prints.printed(module, statement, frozenset({id(statement)})) is first
    with_call = prints.printed(module, statement, frozenset({id(statement), id(call)}))
    assert with_call is not first and id(call) in with_call.spans
    assert prints.printed(other, statement, with_call.wanted) is not with_call


def test_a_section_met_twice_in_one_check_is_two_trees() -> None:
    trees = SectionTrees()
    parse = trees.parser()
    first, second = parse("x = 1\n"), parse("x = 1\n")
    assert first is not second
    assert trees.parser()("x = 1\n") in (first, second)


# -- comments of changed chunks only ---------------------------------------------------------

_TRICKY = [
    'x = """\ndef f():  # not a comment\n"""\ndef g():\n    pass  # noqa\n',
    "x = (\n1,\n)\ndef f():\n    return 1  # one\n",
    "def f():\n    return 1 \\\n\ndef g(): pass\n",
    "def f():\n    s = '''a\n@b'''  # c\n    return s\nclass C:  # c\n    pass\n",
    "def f():\r\n    x = 1  # a\r\n\r\ndef g():\r\n    y = '''\r\ndef h(): #\r\n'''\r\n",
    "def f():\r    x = 1  # a\rdef g():\n    pass  # b\n",
    "x = 1\r# a\ry = 2 \\\n+ 3\ndef g():\r    pass \\\n\n# c\n",
    'def f():\n    s = """unfinished\ndef g():\n    pass  # b\n',
    "@dec  # d\ndef f(\n    a,  # a\n):\n    pass\nasync def g():\n    f'{x}'  # e\n",
    "",
    "# only a comment",
]


def _same_comments(cache: CommentCache, text: str) -> None:
    found, expected = cache.comments(text), scan(text)
    assert (found.by_row, found.continues, found.exact_until) == (expected.by_row, expected.continues, expected.exact_until)
    assert found.lines.text == text


@pytest.mark.parametrize("text", _TRICKY)
def test_comments_of_chunks_are_those_of_one_scan(text: str) -> None:
    cache = CommentCache()
    _same_comments(cache, text)
    _same_comments(cache, text)  # every chunk taken from those kept


@pytest.mark.parametrize("path", SECTIONED, ids=lambda p: p.stem)
def test_comments_of_chunks_through_seeded_edits_are_those_of_one_scan(path: Path) -> None:
    """Seeded edits that open and close strings and brackets across chunks, and type comments
    and definitions: the chunked scan, reusing what it kept, gives what one scan gives."""
    rng = random.Random(f"23c-{path.name}")
    lines = path.read_text().splitlines(keepends=True)
    typed = ['"""\n', "x = (\n", ")\n", "# noqa\n", "def typed():  # t\n", "    pass  # p\n", "@dec\n", "y = 1 \\\n"]
    cache = CommentCache(kept_chars=4_000)
    for _ in range(30):
        at = rng.randrange(len(lines) + 1)
        if rng.random() < 0.3 and len(lines) > 3:
            del lines[min(at, len(lines) - 1)]
        else:
            lines.insert(at, rng.choice(typed))
        _same_comments(cache, "".join(lines))


def test_an_edit_tokenizes_only_the_chunk_it_changed(monkeypatch: pytest.MonkeyPatch) -> None:
    import devlint.server.comments as comments

    text = "".join(f"def f{n}():\n    return {n}  # r{n}\n\n" for n in range(50))
    cache = CommentCache()
    cache.comments(text)
    scanned: list[str] = []
    monkeypatch.setattr(comments, "scan", lambda chunk: scanned.append(chunk) or scan(chunk))
    edited = text.replace("return 7  # r7", "return 8  # r7")
    _same_comments(cache, edited)
    assert scanned == ["def f7():\n    return 8  # r7\n\n"]


def test_a_statement_rebuilt_of_the_same_objects_takes_the_kept_print(monkeypatch: pytest.MonkeyPatch) -> None:
    """The stitcher gives a section's first statement its leading lines anew in every check: the
    rebuilt statement is not printed again, and its own span is found under its own id."""
    import libcst as cst

    import devlint.engine.positions as positions

    module = cst.parse_module("x = 1\n\n# lead\ndef f(x):\n    return x.cuda()\n")
    statement = module.body[1]
    prints = StatementPrints()
    first = prints.printed(module, statement, frozenset({id(statement)}))
    rebuilt = statement.with_changes(leading_lines=list(statement.leading_lines))
    monkeypatch.setattr(positions, "_Recorder", None)  # printing now would fail
    again = prints.printed(module, rebuilt, frozenset({id(rebuilt)}))
    assert again.code == first.code and again.spans[id(rebuilt)] == first.spans[id(statement)]
    assert id(statement) not in again.spans
    monkeypatch.undo()
    changed = statement.with_changes(leading_lines=[])
    assert first.code.startswith("\n# lead\n")
    assert prints.printed(module, changed, frozenset({id(changed)})).code == "def f(x):\n    return x.cuda()\n"


# -- the worker collects garbage while idle -----------------------------------------------------


def test_garbage_is_collected_when_the_worker_is_idle_not_while_a_result_is_due(monkeypatch: pytest.MonkeyPatch) -> None:
    import gc
    import time

    from devlint.server.workers import IdleCollection

    collected: list[tuple[float, str]] = []

    def collect(generation: int = 2) -> int:
        collected.append((time.monotonic(), "full" if generation == 2 else "young"))
        return 0

    monkeypatch.setattr(gc, "collect", collect)
    idle = IdleCollection(delay=0.2, most=3, full_delay=0.6, most_full=6)
    idle.job_starts()
    ended = time.monotonic()
    idle.job_ended()
    assert collected == []  # not on the way to the result
    time.sleep(0.4)
    assert [kind for _, kind in collected] == ["young"] and collected[0][0] - ended >= 0.2  # once idle
    time.sleep(0.4)
    assert [kind for _, kind in collected] == ["young", "full"] and collected[1][0] - ended >= 0.6  # after a pause
    # jobs back to back: no pause to collect in, until the third job in a row
    collected.clear()
    for _ in range(3):
        idle.job_starts()
        idle.job_ended()
    assert collected == []
    idle.job_starts()
    assert [kind for _, kind in collected] == ["young"]
    idle.job_ended()
    # a pause long enough for the young generations only
    time.sleep(0.4)
    assert [kind for _, kind in collected] == ["young", "young"]
    # ...and no pause for a full collection: one runs before the job after six without one
    for _ in range(2):
        idle.job_starts()
        idle.job_ended()
    assert "full" not in [kind for _, kind in collected]
    idle.job_starts()
    assert [kind for _, kind in collected][-1] == "full"
    idle.job_ended()


def test_the_worker_reads_imported_constants_from_the_screens_tree(monkeypatch: pytest.MonkeyPatch) -> None:
    """Compiling a large buffer costs as much as the screen: the worker hands the project-import
    lookup the tree the screen compiled instead of parsing the text again."""
    import ast as python_ast

    import devlint.server.analysis as analysis
    from devlint.project import NONE
    from devlint.run.project_imports import scan_imports

    given: list[tuple[object, object]] = []

    def looked_up(text: str, filename: str, root: str, tree: object = None, scans: object = None) -> tuple:
        given.append((tree, scans))
        return NONE, None

    monkeypatch.setattr(analysis, "imported_constants", looked_up)
    monkeypatch.setattr(analysis, "_EARLIER", EarlierChecks())
    found = analyze(Source("t.py", ("import torch\nif NEW:\n    x = torch.zeros(2).cuda()\n",), False, SETTINGS))
    assert [i.finding.code for i in found.items] == ["DEV101"]
    assert len(given) == 1 and isinstance(given[0][0], python_ast.Module)
    # ...and the scan of each of its top-level statements, kept for the next edit.
    assert given[0][1] == [scan_imports(stmt) for stmt in given[0][0].body]
