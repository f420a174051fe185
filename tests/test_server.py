"""`devlint server` end to end: the real process over stdio, driven as an editor drives it."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pygls", reason="the language server needs the `server` extra")

from lsp_client import LspClient, ResponseError, apply_edits, uri_of, utf16_position  # noqa: E402
from server_helpers import at, engine_diagnostics, published, session, span, workers_of  # noqa: E402

CONTENT_MODIFIED = -32801
REQUEST_CANCELLED = -32800

TRAIN = """\
import torch
from torch.utils.data import DataLoader


def train(model, dataset, epochs):
    model = model.cuda()
    loader = DataLoader(dataset, batch_size=32)
    for epoch in range(epochs):
        for x, y in loader:
            x = x.to("cuda")
            loss = model(x, y).sum()
            loss.backward()
    return model
"""
TRAIN_CODES = ["DEV101", "DEV103", "DEV301", "DEV302"]

CLEAN = """\
import torch


def train(model, device):
    model = model.to(device)
    total = torch.zeros(1, device=device)
    return model, total
"""


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("workspace")


@pytest.fixture(scope="module")
def client(root: Path) -> Any:
    with session(root, options={"devlint": {"debounceMs": 50}}) as started:
        yield started


def code_actions(
    client: LspClient,
    uri: str,
    where: dict[str, Any],
    only: list[str] | None = None,
    sent: list[dict[str, Any]] | None = None,
) -> list[dict[str, Any]]:
    context: dict[str, Any] = {"diagnostics": sent or []}
    if only is not None:
        context["only"] = only
    return client.request("textDocument/codeAction", {"textDocument": {"uri": uri}, "range": where, "context": context})


def only_edits(action: dict[str, Any], uri: str, version: int) -> list[dict[str, Any]]:
    """The edits of a single-document workspace edit, checking the version it names."""
    (change,) = action["edit"]["documentChanges"]
    assert change["textDocument"] == {"uri": uri, "version": version}
    return change["edits"]


def codes(diagnostics: list[dict[str, Any]]) -> list[str]:
    return sorted(d["code"] for d in diagnostics)


def fixed_by_cli(text: str, path: Path) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "devlint", "fix", "--stdin-filename", str(path), "-"],
        input=text.encode(),
        capture_output=True,
        check=False,
    )
    return done.stdout.decode()


# -- the handshake ---------------------------------------------------------------------------


def test_initialize_announces_what_the_server_does(tmp_path: Path) -> None:
    client = LspClient(tmp_path)
    try:
        result = client.initialize(tmp_path)
        capabilities = result["capabilities"]
        assert result["serverInfo"]["name"] == "devlint"
        assert capabilities["positionEncoding"] == "utf-16"
        assert capabilities["textDocumentSync"]["change"] == 2  # incremental
        assert capabilities["hoverProvider"] is True
        assert capabilities["codeActionProvider"] == {
            "codeActionKinds": ["quickfix", "source.fixAll.devlint"],
            "resolveProvider": True,
        }
        assert capabilities["notebookDocumentSync"]["notebookSelector"] == [{"cells": [{"language": "python"}]}]
        # The configuration files and the modules a document may import constants from are
        # watched, and the settings pulled.
        client.wait_for(lambda: len(client.server_requests) >= 2)
        registration = client.server_requests[0]["params"]["registrations"][0]
        assert registration["method"] == "workspace/didChangeWatchedFiles"
        globs = {w["globPattern"] for w in registration["registerOptions"]["watchers"]}
        assert globs == {"**/pyproject.toml", "**/devlint.toml", "**/*.py"}
        assert client.server_requests[1]["method"] == "workspace/configuration"
        assert client.shutdown() == 0
    finally:
        client.kill()


# `python -m devlint server`, writing sorted(sys.modules) to MODULES_FILE at exit.
RECORD_MODULES = (
    "import atexit, json, os, runpy, sys\n"
    "atexit.register(lambda: open(os.environ['MODULES_FILE'], 'w').write(json.dumps(sorted(sys.modules))))\n"
    "sys.argv = ['devlint', 'server']\n"
    "runpy.run_module('devlint', run_name='__main__', alter_sys=True)\n"
)


def test_the_server_process_never_imports_the_engine(tmp_path: Path) -> None:
    """LibCST, rich and the rules load in the worker only: `initialize` is answered without them,
    and diagnostics, fixes and hover need none of them in the server."""
    record = tmp_path / "modules.json"
    client = LspClient(tmp_path, env={"MODULES_FILE": str(record)}, command=[sys.executable, "-c", RECORD_MODULES])
    try:
        client.initialize(tmp_path)
        uri = uri_of(tmp_path / "engine.py")
        client.open(uri, TRAIN)
        assert codes(client.diagnostics(uri, 1)) == TRAIN_CODES
        assert code_actions(client, uri, span(TRAIN, ".cuda()"))
        assert hover(client, uri, at(TRAIN, ".cuda()", 2))["contents"]["value"].startswith("# DEV101")
        assert client.shutdown() == 0
    finally:
        client.kill()
    loaded = json.loads(record.read_text())
    heavy = [name for name in loaded if name.startswith(("libcst", "rich", "devlint.rules.", "devlint.server.analysis"))]
    assert heavy == []
    assert "lsprotocol.types" in loaded  # the record is real


def test_without_pygls_the_command_says_which_extra_to_install() -> None:
    code = "import sys; sys.modules['pygls'] = None; from devlint.cli import main; sys.exit(main(['server']))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 2
    assert done.stderr.strip() == "devlint: error: `devlint server` needs pygls: pip install 'devlint[server]'"
    assert "Traceback" not in done.stderr


def test_python_dash_m_devlint_server(tmp_path: Path) -> None:
    # Workers are spawned: under `python -m devlint` the main module must not run again in them.
    client = LspClient(tmp_path, command=[sys.executable, "-m", "devlint", "server"])
    try:
        client.initialize(tmp_path)
        uri = uri_of(tmp_path / "m.py")
        client.open(uri, TRAIN)
        assert codes(client.diagnostics(uri, 1)) == TRAIN_CODES
        assert client.shutdown() == 0
    finally:
        client.kill()


def test_server_help() -> None:
    done = subprocess.run([sys.executable, "-m", "devlint", "server", "--help"], capture_output=True, text=True, check=False)
    assert done.returncode == 0
    assert "Language Server Protocol" in done.stdout


# -- diagnostics -----------------------------------------------------------------------------


def test_diagnostics_on_open_match_the_engine(client: LspClient, root: Path) -> None:
    path = root / "open" / "train.py"
    path.parent.mkdir()
    client.open(uri_of(path), TRAIN)
    found = client.diagnostics(uri_of(path), 1)
    assert published(found) == engine_diagnostics(TRAIN, path)
    by_code = {d["code"]: d for d in found}
    assert codes(found) == TRAIN_CODES
    cuda = by_code["DEV101"]
    assert cuda["range"] == span(TRAIN, ".cuda()", 0)  # from the dot, as the message quotes it
    assert cuda["source"] == "devlint"
    assert cuda["severity"] == 2  # Warning
    assert by_code["DEV302"]["severity"] == 3  # Information: a performance hint
    assert "cuda" in cuda["message"]


def test_clean_code_gets_an_empty_list(client: LspClient, root: Path) -> None:
    uri = uri_of(root / "clean.py")
    client.open(uri, CLEAN)
    assert client.diagnostics(uri, 1) == []


def test_an_edit_updates_the_diagnostics(client: LspClient, root: Path) -> None:
    uri = uri_of(root / "edited.py")
    client.open(uri, CLEAN)
    assert client.diagnostics(uri, 1) == []
    # Type `.cuda()` after `model` on line 5, as an editor sends it: an incremental change.
    insert_at = at(CLEAN, ".to(device)")
    client.change(uri, 2, [{"range": {"start": insert_at, "end": insert_at}, "text": ".cuda()"}])
    text = CLEAN.replace("model.to(device)", "model.cuda().to(device)")
    found = client.diagnostics(uri, 2)
    assert [d["code"] for d in found] == ["DEV101"]
    assert found[0]["range"]["start"] == at(text, ".cuda()")
    # And deleting it again clears them.
    end = {"line": insert_at["line"], "character": insert_at["character"] + len(".cuda()")}
    client.change(uri, 3, [{"range": {"start": insert_at, "end": end}, "text": ""}])
    assert client.diagnostics(uri, 3) == []


def test_non_python_documents_are_left_alone(client: LspClient, root: Path) -> None:
    uri = uri_of(root / "notes.md")
    client.open(uri, "model.cuda()\n", language="markdown")
    probe = uri_of(root / "probe.py")
    client.open(probe, CLEAN)
    client.diagnostics(probe, 1)
    assert client.publishes(uri) == []


def test_utf16_columns_after_non_ascii_text(client: LspClient, root: Path) -> None:
    # "é" is one UTF-16 unit, "😀" two: the finding's column counts 1 + 2 for them.
    text = 'import torch\nx = torch.zeros(1)  # é\nlabel = "😀é"; y = x.cuda()\n'
    uri = uri_of(root / "unicode.py")
    client.open(uri, text)
    (found,) = client.diagnostics(uri, 1)
    line = 'label = "😀é"; y = x.cuda()'
    column = len(line[: line.index(".cuda()")]) + 1  # code points, plus one for the emoji
    assert found["range"]["start"] == {"line": 2, "character": column}
    # An edit placed after the emoji lands where the client meant it.
    where = at(text, "y = x", 5)
    client.change(uri, 2, [{"range": {"start": where, "end": where}, "text": ".to('cpu')"}])
    updated = text.replace("y = x.cuda()", "y = x.to('cpu').cuda()")
    (moved,) = client.diagnostics(uri, 2)
    assert moved["range"]["start"] == at(updated, ".cuda()")


def test_utf8_positions_when_the_client_offers_them(tmp_path: Path) -> None:
    text = 'import torch\nlabel = "😀é"; y = torch.zeros(1).cuda()\n'
    capabilities = {"general": {"positionEncodings": ["utf-8", "utf-16"]}}
    with session(tmp_path, capabilities=capabilities) as client:
        assert client.wait_for(lambda: client.responses[1])["result"]["capabilities"]["positionEncoding"] == "utf-8"
        uri = uri_of(tmp_path / "bytes.py")
        client.open(uri, text)
        (found,) = client.diagnostics(uri, 1)
        line = text.splitlines()[1]
        assert found["range"]["start"]["character"] == len(line[: line.index(".cuda()")].encode("utf-8"))


def test_code_that_does_not_parse_gets_one_error_and_the_server_goes_on(client: LspClient, root: Path) -> None:
    uri = uri_of(root / "typing.py")
    half = "import torch\nmodel = torch.nn.Linear(2, 2).cuda(\n"
    client.open(uri, half)
    (error,) = client.diagnostics(uri, 1)
    assert error["severity"] == 1
    assert error["message"].startswith("syntax error")
    assert error["code"] == "syntax-error"
    assert error["range"]["start"]["line"] == 1
    # Finish the line: the finding replaces the error.
    end = {"line": 1, "character": len("model = torch.nn.Linear(2, 2).cuda(")}
    client.change(uri, 2, [{"range": {"start": end, "end": end}, "text": ")"}])
    assert [d["code"] for d in client.diagnostics(uri, 2)] == ["DEV101"]


def _shifted(diagnostic: dict[str, Any], lines: int) -> dict[str, Any]:
    moved = {key: dict(end, line=end["line"] + lines) for key, end in diagnostic["range"].items()}
    return dict(diagnostic, range=moved)


def test_a_typo_keeps_the_findings_of_the_lines_it_did_not_touch(client: LspClient, root: Path) -> None:
    uri = uri_of(root / "typo.py")
    client.open(uri, TRAIN)
    first = client.diagnostics(uri, 1)
    assert codes(first) == TRAIN_CODES
    # A half-typed line above the loop: the file no longer parses.
    where = {"line": 7, "character": 0}
    client.change(uri, 2, [{"range": {"start": where, "end": where}, "text": "    broken = (\n"}])
    kept = client.diagnostics(uri, 2)
    (error,) = [d for d in kept if d["code"] == "syntax-error"]
    assert error["severity"] == 1
    # Findings above the edit stay where they were; those below move down a line with their code.
    expected = [d if d["range"]["start"]["line"] < 7 else _shifted(d, 1) for d in first]
    assert sorted((d for d in kept if d is not error), key=repr) == sorted(expected, key=repr)
    # A kept finding offers no fix for code that does not parse.
    assert code_actions(client, uri, span(TRAIN, "model.cuda()"), only=["quickfix"]) == []
    # Still broken, and now the line of DEV101 is edited too: that finding goes, the others stay.
    text = apply_edits(TRAIN, [{"range": {"start": where, "end": where}, "newText": "    broken = (\n"}])
    client.change(uri, 3, [{"range": span(text, "model.cuda()"), "text": "model.cud()"}])
    still = client.diagnostics(uri, 3)
    assert codes([d for d in still if d["code"] != "DEV101"]) == ["DEV103", "DEV301", "DEV302", "syntax-error"]
    assert "DEV101" not in codes(still)
    # The code parses again: a real check replaces everything kept.
    text = text.replace("model.cuda()", "model.cud()")
    client.change(uri, 4, [{"range": span(text, "    broken = (\n"), "text": ""}])
    final = client.diagnostics(uri, 4)
    text = text.replace("    broken = (\n", "")
    assert published(final) == engine_diagnostics(text, root / "typo.py")
    assert "syntax-error" not in codes(final)


def test_syntax_errors_can_be_turned_off(tmp_path: Path) -> None:
    with session(tmp_path, options={"showSyntaxErrors": False}) as client:
        uri = uri_of(tmp_path / "broken.py")
        client.open(uri, "def f(:\n    x.cuda()\n")
        assert client.diagnostics(uri, 1) == []


def test_close_clears_the_diagnostics(client: LspClient, root: Path) -> None:
    uri = uri_of(root / "closing.py")
    client.open(uri, TRAIN)
    assert client.diagnostics(uri, 1)
    client.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
    client.wait_for(lambda: client.publishes(uri)[-1]["diagnostics"] == [])


# -- code actions ----------------------------------------------------------------------------


def test_quick_fix_replaces_the_call_and_the_result_runs(client: LspClient, root: Path) -> None:
    uri = uri_of(root / "quickfix.py")
    client.open(uri, TRAIN)
    client.diagnostics(uri, 1)
    actions = code_actions(client, uri, span(TRAIN, ".cuda()"))
    titles = [a["title"] for a in actions]
    assert titles == [
        "Replace `.cuda()` with `.to(device)` (DEV101)",
        "Add `# noqa: DEV101` to this line",
        "devlint: fix all safe fixes",
    ]
    fix = actions[0]
    assert fix["kind"] == "quickfix" and fix["isPreferred"] is True
    assert fix["diagnostics"][0]["code"] == "DEV101"
    edits = only_edits(fix, uri, 1)
    fixed = apply_edits(TRAIN, edits)
    assert "model = model.to(device)" in fixed
    assert 'device = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n' in fixed
    # Minimal edits: the inserted definition and the call, not the whole file.
    assert all(len(edit["newText"]) < 80 for edit in edits)
    ast.parse(fixed)
    namespace: dict[str, Any] = {}
    exec(compile(fixed, "fixed.py", "exec"), namespace)  # defines `device` and `train` only
    assert str(namespace["device"]) in ("cpu", "cuda")


MULTILINE_LOAD = "import torch\n\n\ndef load(path):\n    state = torch.load(\n        path,\n    )\n    return state\n"


def test_a_quick_fix_edits_only_the_characters_that_change(client: LspClient, root: Path) -> None:
    uri = uri_of(root / "minimal.py")
    text = "import torch\nmodel = torch.nn.Linear(2, 2).cuda()\n"
    client.open(uri, text)
    client.diagnostics(uri, 1)
    fix = code_actions(client, uri, span(text, ".cuda()"), only=["quickfix"])[0]
    edits = only_edits(fix, uri, 1)
    # The device definition, and `cuda(` -> `to(device` in place: `torch.nn.Linear(2, 2).` stays.
    assert sorted(e["newText"] for e in edits) == sorted(
        ['\ndevice = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n', "to(device"]
    )
    (call,) = [e for e in edits if e["newText"] == "to(device"]
    assert call["range"] == span(text, "cuda(")
    assert apply_edits(text, edits).endswith("model = torch.nn.Linear(2, 2).to(device)\n")
    # A fix of a call laid out over lines leaves its unchanged first line alone.
    uri = uri_of(root / "minimal_load.py")
    client.open(uri, MULTILINE_LOAD)
    client.diagnostics(uri, 1)
    (load_fix,) = [a for a in code_actions(client, uri, span(MULTILINE_LOAD, "torch.load")) if a.get("isPreferred")]
    edits = only_edits(load_fix, uri, 1)
    assert all(e["range"]["start"]["line"] > 4 for e in edits), edits
    fixed = apply_edits(MULTILINE_LOAD, edits)
    assert fixed.startswith("import torch\n\n\ndef load(path):\n    state = torch.load(\n        path,\n        map_location=")
    ast.parse(fixed)


def test_no_actions_away_from_findings(client: LspClient, root: Path) -> None:
    uri = uri_of(root / "away.py")
    client.open(uri, TRAIN)
    client.diagnostics(uri, 1)
    assert code_actions(client, uri, span(TRAIN, "def train"), only=["quickfix"]) == []
    assert [a["kind"] for a in code_actions(client, uri, span(TRAIN, "def train"))] == ["source.fixAll.devlint"]


LINES = """\
import torch


def load(model, path):
    model = model.cuda()
    state = torch.load(path)
    return model, state
"""


def _cursor(text: str, offset: int) -> dict[str, Any]:
    position = utf16_position(text, offset)
    return {"start": position, "end": position}


@pytest.mark.parametrize(
    ("line", "where"),
    [
        ("    model = model.cuda()", 0),  # the start of the line
        ("    model = model.cuda()", 5),  # on the first `model`
        ("    model = model.cuda()", 17),  # on the dot of `.cuda()`
        ("    model = model.cuda()", 24),  # the end of the line
        ("    state = torch.load(path)", 5),  # on `state`
        ("    state = torch.load(path)", 0),
    ],
)
def test_a_cursor_anywhere_on_the_line_gets_the_line_s_fixes(client: LspClient, root: Path, line: str, where: int) -> None:
    uri = uri_of(root / "cursor.py")
    if not client.publishes(uri):
        client.open(uri, LINES)
    client.diagnostics(uri, 1)
    offset = LINES.index(line) + where
    titles = [a["title"] for a in code_actions(client, uri, _cursor(LINES, offset), only=["quickfix"])]
    code = "DEV101" if "cuda" in line else "DEV402"
    assert [t for t in titles if "noqa" not in t] == [t for t in titles if code in t and "noqa" not in t]
    assert any(code in t and "noqa" not in t for t in titles), titles
    assert f"Add `# noqa: {code}` to this line" in titles
    # Nothing from the other line.
    other = "DEV402" if code == "DEV101" else "DEV101"
    assert not any(other in t for t in titles)


def test_fixes_for_the_diagnostics_the_client_sends(client: LspClient, root: Path) -> None:
    uri = uri_of(root / "context.py")
    client.open(uri, LINES)
    found = client.diagnostics(uri, 1)
    (cuda,) = [d for d in found if d["code"] == "DEV101"]
    # The requested range is elsewhere (line 0); the diagnostic sent in the context decides.
    elsewhere = _cursor(LINES, 0)
    assert code_actions(client, uri, elsewhere, only=["quickfix"]) == []
    actions = code_actions(client, uri, elsewhere, only=["quickfix"], sent=[cuda])
    assert [a["title"] for a in actions] == [
        "Replace `.cuda()` with `.to(device)` (DEV101)",
        "Add `# noqa: DEV101` to this line",
    ]
    assert actions[0]["diagnostics"] == [cuda]
    # A diagnostic of another tool, or one devlint no longer has, asks for nothing.
    foreign = dict(cuda, source="pyright", code="reportAttributeAccessIssue")
    stale = dict(cuda, range={"start": {"line": 1, "character": 0}, "end": {"line": 1, "character": 1}})
    assert code_actions(client, uri, elsewhere, only=["quickfix"], sent=[foreign, stale]) == []
    # A multi-line selection gets the fixes of every line in it.
    every = code_actions(client, uri, span(LINES, "model = model.cuda()\n    state"), only=["quickfix"])
    assert {d["code"] for a in every for d in a["diagnostics"]} == {"DEV101", "DEV402"}


def test_noqa_action_adds_and_merges_the_comment(client: LspClient, root: Path) -> None:
    text = "import torch\nx = torch.zeros(1).cuda()\ny = torch.load('w.pt').cuda()  # noqa: DEV999\n"
    uri = uri_of(root / "noqa.py")
    client.open(uri, text)
    client.diagnostics(uri, 1)
    (add,) = [a for a in code_actions(client, uri, span(text, ".cuda()")) if "noqa" in a["title"]]
    assert apply_edits(text, only_edits(add, uri, 1)).splitlines()[1] == "x = torch.zeros(1).cuda()  # noqa: DEV101"
    # The line's two findings each get one; the DEV402 one merges into the list already there.
    silences = [a for a in code_actions(client, uri, span(text, "torch.load")) if "noqa" in a["title"]]
    assert sorted(a["title"] for a in silences) == ["Add `# noqa: DEV101` to this line", "Add `# noqa: DEV402` to this line"]
    merged = [a for a in silences if "DEV402" in a["title"]]
    after = apply_edits(text, only_edits(merged[0], uri, 1)).splitlines()[2]
    assert after == "y = torch.load('w.pt').cuda()  # noqa: DEV402, DEV999"
    # The edit touches the code list only.
    (edit,) = only_edits(merged[0], uri, 1)
    assert edit["newText"] == "DEV402, DEV999"


def test_fix_all_applies_what_devlint_fix_applies(client: LspClient, root: Path) -> None:
    path = root / "fixall" / "train.py"
    path.parent.mkdir()
    uri = uri_of(path)
    client.open(uri, TRAIN)
    client.diagnostics(uri, 1)
    (action,) = code_actions(client, uri, span(TRAIN, "import torch"), only=["source.fixAll"])
    assert action["kind"] == "source.fixAll.devlint"
    fixed = apply_edits(TRAIN, only_edits(action, uri, 1))
    assert fixed == fixed_by_cli(TRAIN, path)
    assert fixed != TRAIN
    # Asked for source actions of another tool only, devlint offers none.
    assert code_actions(client, uri, span(TRAIN, "import torch"), only=["source.organizeImports"]) == []


def test_fix_all_is_resolved_lazily_when_the_client_can(tmp_path: Path) -> None:
    capabilities = {
        "workspace": {"workspaceEdit": {"documentChanges": True}},
        "textDocument": {"codeAction": {"resolveSupport": {"properties": ["edit"]}}},
    }
    with session(tmp_path, capabilities=capabilities) as client:
        uri = uri_of(tmp_path / "lazy.py")
        client.open(uri, TRAIN)
        client.diagnostics(uri, 1)
        actions = code_actions(client, uri, span(TRAIN, ".cuda()"))
        (lazy,) = [a for a in actions if a["kind"] == "source.fixAll.devlint"]
        assert "edit" not in lazy
        resolved = client.request("codeAction/resolve", lazy)
        assert apply_edits(TRAIN, only_edits(resolved, uri, 1)) == fixed_by_cli(TRAIN, tmp_path / "lazy.py")
        # Once the document changed, the old action is refused rather than applied to new text.
        client.change(uri, 2, [{"range": span(TRAIN, "epochs", 0), "text": "n_epochs"}])
        with pytest.raises(ResponseError) as refused:
            client.request("codeAction/resolve", lazy)
        assert refused.value.code == CONTENT_MODIFIED


def test_a_stale_request_is_refused_without_a_traceback(tmp_path: Path) -> None:
    capabilities = {
        "workspace": {"workspaceEdit": {"documentChanges": True}},
        "textDocument": {"codeAction": {"resolveSupport": {"properties": ["edit"]}}},
    }
    client = LspClient(tmp_path)
    try:
        client.initialize(tmp_path, capabilities=capabilities)
        uri = uri_of(tmp_path / "stale.py")
        client.open(uri, TRAIN)
        client.diagnostics(uri, 1)
        (lazy,) = [a for a in code_actions(client, uri, span(TRAIN, ".cuda()")) if a["kind"] == "source.fixAll.devlint"]
        client.change(uri, 2, [{"range": span(TRAIN, "epochs", 0), "text": "n_epochs"}])
        for _ in range(3):
            with pytest.raises(ResponseError) as refused:
                client.request("codeAction/resolve", lazy)
            assert refused.value.code == CONTENT_MODIFIED
        client.diagnostics(uri, 2)
        assert client.shutdown() == 0
    finally:
        client.kill()
    logged = client.stderr_text()
    assert "Traceback" not in logged
    # At most one line per refusal.
    assert len([line for line in logged.splitlines() if "32801" in line or "changed" in line]) <= 3


def test_plain_changes_for_clients_without_document_changes(tmp_path: Path) -> None:
    with session(tmp_path, capabilities={}) as client:
        uri = uri_of(tmp_path / "plain.py")
        client.open(uri, TRAIN)
        client.diagnostics(uri, 1)
        fix = code_actions(client, uri, span(TRAIN, ".cuda()"))[0]
        assert "documentChanges" not in fix["edit"]
        assert "model.to(device)" in apply_edits(TRAIN, fix["edit"]["changes"][uri])


UNSAFE = "import torch\n\n\ndef place(x, device=None):\n    return x.cuda(device)\n"


def test_unsafe_fixes_only_when_enabled(client: LspClient, root: Path) -> None:
    uri = uri_of(root / "unsafe.py")
    client.open(uri, UNSAFE)
    client.diagnostics(uri, 1)
    titles = [a["title"] for a in code_actions(client, uri, span(UNSAFE, ".cuda(device)"))]
    assert titles == ["Add `# noqa: DEV102` to this line"]
    client.notify("workspace/didChangeConfiguration", {"settings": {"devlint": {"unsafeFixes": True, "debounceMs": 50}}})
    try:
        actions = code_actions(client, uri, span(UNSAFE, ".cuda(device)"))
        fix = actions[0]
        # The rule's own fix message, then the code and the warning.
        assert fix["title"].startswith("Replace `.cuda(")
        assert fix["title"].endswith(" (DEV102, unsafe fix)")
        assert fix["isPreferred"] is False
        assert "    return x.to(device)" in apply_edits(UNSAFE, only_edits(fix, uri, 1))
        # source.fixAll stays safe: with only an unsafe fix there is nothing to offer.
        assert code_actions(client, uri, span(UNSAFE, "return"), only=["source.fixAll"]) == []
    finally:
        client.notify("workspace/didChangeConfiguration", {"settings": {"devlint": {"unsafeFixes": False}}})


def test_unsafe_fixes_from_initialization_options(tmp_path: Path) -> None:
    with session(tmp_path, options={"settings": {"unsafeFixes": True}}) as client:
        uri = uri_of(tmp_path / "unsafe.py")
        client.open(uri, UNSAFE)
        client.diagnostics(uri, 1)
        assert "unsafe fix" in code_actions(client, uri, span(UNSAFE, ".cuda(device)"))[0]["title"]


# -- hover -----------------------------------------------------------------------------------


def hover(client: LspClient, uri: str, position: dict[str, Any]) -> Any:
    return client.request("textDocument/hover", {"textDocument": {"uri": uri}, "position": position})


def test_hover_shows_the_rule_documentation(client: LspClient, root: Path) -> None:
    text = "import torch\nx = torch.zeros(1).cuda()\ny = torch.zeros(1)  # noqa: DEV301, DEV101\n"
    uri = uri_of(root / "hover.py")
    client.open(uri, text)
    client.diagnostics(uri, 1)
    shown = hover(client, uri, at(text, ".cuda()", 2))
    assert shown["contents"]["kind"] == "markdown"
    assert shown["contents"]["value"].startswith("# DEV101 cuda-call\n")
    assert "## Why is this bad?" in shown["contents"]["value"]
    assert shown["range"] == span(text, ".cuda()")
    on_code = hover(client, uri, at(text, "DEV301", 3))
    assert on_code["contents"]["value"].startswith("# DEV301 blocking-host-to-device-copy")
    assert on_code["range"] == span(text, "DEV301")
    assert hover(client, uri, at(text, "noqa")) is None
    assert hover(client, uri, at(text, "zeros")) is None


# -- notebooks -------------------------------------------------------------------------------


def cell(uri: str, kind: int = 2) -> dict[str, Any]:
    return {"kind": kind, "document": uri}


def open_notebook(client: LspClient, uri: str, sources: list[tuple[int, str]], version: int = 1) -> list[str]:
    cells = [f"{uri}#cell{index}" for index in range(len(sources))]
    client.notify(
        "notebookDocument/didOpen",
        {
            "notebookDocument": {
                "uri": uri,
                "notebookType": "jupyter-notebook",
                "version": version,
                "cells": [cell(c, kind) for c, (kind, _) in zip(cells, sources)],
            },
            "cellTextDocuments": [
                {"uri": c, "languageId": "python" if kind == 2 else "markdown", "version": 1, "text": text}
                for c, (kind, text) in zip(cells, sources)
            ],
        },
    )
    return cells


NOTEBOOK = [
    (2, "import torch\n%matplotlib inline\n"),
    (1, "# Training\nmodel.cuda() in markdown is no code"),
    (2, "model = torch.nn.Linear(4, 2)\nmodel = model.cuda()"),
]


def test_notebook_cells_get_their_own_diagnostics(client: LspClient, root: Path) -> None:
    uri = uri_of(root / "train.ipynb")
    cells = open_notebook(client, uri, NOTEBOOK)
    assert client.diagnostics(cells[0], 1) == []
    (found,) = client.diagnostics(cells[2], 1)
    assert found["code"] == "DEV101"
    # Cell-relative: line 1 of the third cell.
    assert found["range"]["start"] == {"line": 1, "character": len("model = model")}
    assert client.publishes(cells[1]) in ([], [{"uri": cells[1], "diagnostics": [], "version": 1}])
    # The fix defines the device in the cell that imports torch, and fixes the call in cell 3.
    (fix,) = [a for a in code_actions(client, cells[2], span(NOTEBOOK[2][1], ".cuda()")) if a.get("isPreferred")]
    changes = {c["textDocument"]["uri"]: c for c in fix["edit"]["documentChanges"]}
    assert set(changes) == {cells[0], cells[2]}
    assert changes[cells[2]]["textDocument"]["version"] == 1
    first = apply_edits(NOTEBOOK[0][1], changes[cells[0]]["edits"])
    third = apply_edits(NOTEBOOK[2][1], changes[cells[2]]["edits"])
    assert first == 'import torch\ndevice = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n%matplotlib inline\n'
    assert third == "model = torch.nn.Linear(4, 2)\nmodel = model.to(device)"
    # Hover works in a cell too.
    assert hover(client, cells[2], at(NOTEBOOK[2][1], ".cuda", 2))["contents"]["value"].startswith("# DEV101")


def test_notebook_edits_cells_and_structure(client: LspClient, root: Path) -> None:
    uri = uri_of(root / "edit.ipynb")
    cells = open_notebook(client, uri, NOTEBOOK)
    client.diagnostics(cells[2], 1)
    # Half-typed cell: an unclosed bracket in cell 3 is reported there.
    end = {"line": 1, "character": len("model = model.cuda()")}
    client.notify(
        "notebookDocument/didChange",
        {
            "notebookDocument": {"uri": uri, "version": 2},
            "change": {
                "cells": {
                    "textContent": [
                        {
                            "document": {"uri": cells[2], "version": 2},
                            "changes": [{"range": {"start": end, "end": end}, "text": "\nprint(model"}],
                        }
                    ]
                }
            },
        },
    )
    (error,) = client.diagnostics(cells[2], 2)
    assert error["severity"] == 1 and error["range"]["start"]["line"] == 2
    # A new cell with a finding, inserted after the cell that imports torch.
    new = f"{uri}#new"
    client.notify(
        "notebookDocument/didChange",
        {
            "notebookDocument": {"uri": uri, "version": 3},
            "change": {
                "cells": {
                    "structure": {
                        "array": {"start": 1, "deleteCount": 0, "cells": [cell(new)]},
                        "didOpen": [{"uri": new, "languageId": "python", "version": 1, "text": "x = 1\ny = torch.load('w.pt')\n"}],
                    },
                    "textContent": [
                        {
                            "document": {"uri": cells[2], "version": 3},
                            "changes": [{"range": {"start": end, "end": {"line": 2, "character": 11}}, "text": ""}],
                        }
                    ],
                }
            },
        },
    )
    assert [d["code"] for d in client.diagnostics(new, 1)] == ["DEV402"]
    assert [d["code"] for d in client.diagnostics(cells[2], 3)] == ["DEV101"]
    # Removing the cell clears its diagnostics.
    client.notify(
        "notebookDocument/didChange",
        {
            "notebookDocument": {"uri": uri, "version": 4},
            "change": {"cells": {"structure": {"array": {"start": 1, "deleteCount": 1}, "didClose": [{"uri": new}]}}},
        },
    )
    client.wait_for(lambda: client.publishes(new)[-1]["diagnostics"] == [])
    client.notify("notebookDocument/didClose", {"notebookDocument": {"uri": uri}, "cellTextDocuments": []})
    client.wait_for(lambda: client.publishes(cells[2])[-1]["diagnostics"] == [])


# -- configuration ---------------------------------------------------------------------------


def test_configuration_of_the_file_and_its_changes(client: LspClient, root: Path) -> None:
    project = root / "project"
    (project / "src").mkdir(parents=True)
    config = project / "pyproject.toml"
    config.write_text('[tool.devlint]\nignore = ["DEV101"]\n')
    uri = uri_of(project / "src" / "train.py")
    client.open(uri, TRAIN)
    assert codes(client.diagnostics(uri, 1)) == ["DEV103", "DEV301", "DEV302"]
    # The user edits pyproject.toml; the editor reports the change.
    config.write_text('[tool.devlint]\nignore = ["DEV302"]\n')
    count = len(client.publishes(uri))
    client.notify("workspace/didChangeWatchedFiles", {"changes": [{"uri": uri_of(config), "type": 2}]})
    client.wait_for(lambda: len(client.publishes(uri)) > count)
    assert codes(client.publishes(uri)[-1]["diagnostics"]) == ["DEV101", "DEV103", "DEV301"]
    # Without a notification, the next edit finds the changed file by its stamp.
    config.write_text("[tool.devlint]\nextend-select = []\n")
    client.change(uri, 2, [{"range": span(TRAIN, "epochs", 0), "text": "n_epochs"}])
    assert codes(client.diagnostics(uri, 2)) == TRAIN_CODES


def test_broken_configuration_is_reported_once_and_the_old_settings_stay(client: LspClient, root: Path) -> None:
    project = root / "broken"
    project.mkdir()
    config = project / "devlint.toml"
    config.write_text('ignore = ["DEV101"]\n')
    uri = uri_of(project / "train.py")
    client.open(uri, TRAIN)
    assert codes(client.diagnostics(uri, 1)) == ["DEV103", "DEV301", "DEV302"]
    before = len(client.messages())
    config.write_text('ignore = ["DEV101"\n')  # half saved
    client.notify("workspace/didChangeWatchedFiles", {"changes": [{"uri": uri_of(config), "type": 2}]})
    client.wait_for(lambda: len(client.messages()) > before)
    for version in (2, 3):
        client.change(uri, version, [{"range": span(TRAIN, "x, y", 0), "text": "x, y"}])
        assert codes(client.diagnostics(uri, version)) == ["DEV103", "DEV301", "DEV302"]
    shown = client.messages()[before:]
    assert len(shown) == 1
    assert shown[0]["type"] == 2  # Warning
    assert "devlint.toml" in shown[0]["message"] and "invalid TOML" in shown[0]["message"]
    config.write_text('ignore = ["DEV302"]\n')
    client.change(uri, 4, [{"range": span(TRAIN, "x, y", 0), "text": "x, y"}])
    assert codes(client.diagnostics(uri, 4)) == ["DEV101", "DEV103", "DEV301"]


# -- responsiveness --------------------------------------------------------------------------


def test_newer_edits_supersede_older_checks(client: LspClient, root: Path) -> None:
    uri = uri_of(root / "typing_fast.py")
    text = CLEAN
    client.open(uri, text)
    client.diagnostics(uri, 1)
    insert_at = at(CLEAN, "\n    return")
    for version, piece in enumerate(["\n    x", ".c", "u", "da", "()", "\n    y = x"], start=2):
        client.change(uri, version, [{"range": {"start": insert_at, "end": insert_at}, "text": piece}])
        offset = text.index("\n    return")
        text = text[:offset] + piece + text[offset:]
        insert_at = at(text, "\n    return")
    final = client.diagnostics(uri, 7)
    assert published(final) == engine_diagnostics(text, root / "typing_fast.py")
    versions = [p["version"] for p in client.publishes(uri)]
    assert versions == sorted(versions)
    assert [d["code"] for d in final] == ["DEV101"]


BIG = "import torch\n" + "".join(
    f"def f{i}(x):\n    return x.cuda() + {i}\n\n" if i % 100 == 0 else f"def f{i}(x):\n    y = torch.relu(x) * {i}\n    return y.sum()\n\n"
    for i in range(5_030)
)


def test_a_large_file_does_not_block_other_requests(client: LspClient, root: Path) -> None:
    big = BIG
    assert big.count("\n") > 20_000
    big_uri = uri_of(root / "big.py")
    small_uri = uri_of(root / "small.py")
    client.open(small_uri, TRAIN)
    client.diagnostics(small_uri, 1)
    client.open(big_uri, big)
    client.change(big_uri, 2, [{"range": span(big, "x.cuda() + 0"), "text": "x.cuda() + 0"}])
    started = time.monotonic()
    # Hover on a document whose check is done needs no engine: answered while the big file's runs.
    hover(client, small_uri, at(TRAIN, ".cuda", 2))
    assert time.monotonic() - started < 2.0
    found = client.diagnostics(big_uri, 2, timeout=180)
    assert len(found) == 51
    assert all(p["version"] == 2 for p in client.publishes(big_uri))


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="finds the worker process in /proc")
def test_an_edit_stops_a_long_check_of_the_old_text(tmp_path: Path) -> None:
    with session(tmp_path) as client:
        small = uri_of(tmp_path / "small.py")
        client.open(small, TRAIN)
        client.diagnostics(small, 1)
        (worker,) = workers_of(client.process.pid)
        uri = uri_of(tmp_path / "big.py")
        client.open(uri, BIG)
        time.sleep(1.5)  # the check of 20,000 lines takes longer than this
        still_running = not client.publishes(uri)
        client.change(uri, 2, [{"range": span(BIG, "x.cuda() + 0"), "text": "x.cpu() + 0"}])
        found = client.diagnostics(uri, 2, timeout=180)
        assert len(found) == 50
        assert [p["version"] for p in client.publishes(uri)] == ([2] if still_running else [1, 2])
        if still_running:
            # The worker on the old text was ended, not left to finish; a new one took over.
            assert worker not in workers_of(client.process.pid)
            assert len(workers_of(client.process.pid)) == 1


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="finds the worker process in /proc")
def test_the_worker_ends_with_a_killed_server(tmp_path: Path) -> None:
    client = LspClient(tmp_path)
    try:
        client.initialize(tmp_path)
        uri = uri_of(tmp_path / "x.py")
        client.open(uri, TRAIN)
        client.diagnostics(uri, 1)
        (worker,) = workers_of(client.process.pid)
    finally:
        client.kill()
    def alive() -> bool:
        try:
            state = Path(f"/proc/{worker}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            return False
        return state != "Z"  # a zombie has ended; only its parent's reaper is missing

    deadline = time.monotonic() + 30
    while alive() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not alive()


def test_cancelled_requests_are_answered_and_the_server_goes_on(client: LspClient, root: Path) -> None:
    uri = uri_of(root / "cancel.py")
    client.open(uri, TRAIN)
    client.change(uri, 2, [{"range": span(TRAIN, "epochs", 0), "text": "n_epochs"}])
    ids = [
        client.send_request(
            "textDocument/codeAction",
            {"textDocument": {"uri": uri}, "range": span(TRAIN, ".cuda()"), "context": {"diagnostics": []}},
        )
        for _ in range(3)
    ]
    for request_id in ids:
        client.notify("$/cancelRequest", {"id": request_id})
    for request_id in ids:
        answer = client.response(request_id)
        assert "result" in answer or answer["error"]["code"] in (REQUEST_CANCELLED, CONTENT_MODIFIED)
    assert code_actions(client, uri, span(TRAIN, ".cuda()"))


def test_a_request_during_an_edit_burst_never_answers_for_old_text(client: LspClient, root: Path) -> None:
    uri = uri_of(root / "burst.py")
    client.open(uri, TRAIN)
    client.diagnostics(uri, 1)
    pending = []
    text = TRAIN
    for version in range(2, 12):
        where = at(text, "model = model.cuda()")
        client.change(uri, version, [{"range": {"start": where, "end": where}, "text": "# edit\n    "}])
        text = text.replace("model = model.cuda()", "# edit\n    model = model.cuda()", 1)
        pending.append((version, text, client.send_request(
            "textDocument/codeAction",
            {"textDocument": {"uri": uri}, "range": span(text, ".cuda()"), "context": {"diagnostics": []}},
        )))
    for version, seen, request_id in pending:
        answer = client.response(request_id)
        if "error" in answer:
            assert answer["error"]["code"] == CONTENT_MODIFIED
            continue
        for action in answer["result"]:
            for change in action["edit"]["documentChanges"]:
                # Computed against the version the request was sent after, and saying so.
                assert change["textDocument"]["version"] == version
                apply_edits(seen, change["edits"])
    assert json.dumps(client.diagnostics(uri, 11))
