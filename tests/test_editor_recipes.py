"""The Neovim 0.7 recipe of docs/editors.md, run as written in a headless Neovim with the real server:
diagnostics arrive, and the quick fix is offered with the cursor at the start of the line. Skips
where `nvim` is not installed (`apt-get install neovim` gives 0.7 on Debian 12)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pygls", reason="the language server needs the `server` extra")

# The editor recipes moved from the README to docs/editors.md.
EDITORS = Path(__file__).resolve().parent.parent / "docs" / "editors.md"
NVIM = shutil.which("nvim")

# Run after the file is loaded: wait for devlint's diagnostics, ask for code actions with the
# cursor at column 0 of the finding's line, write both down, quit.
CHECK = """\
local out = os.getenv("DEVLINT_NVIM_OUT")
vim.wait(90000, function() return #vim.diagnostic.get(0) > 0 end, 100)
local found = vim.diagnostic.get(0)
local lines = {}
for _, d in ipairs(found) do
  table.insert(lines, "diagnostic " .. d.lnum .. " " .. d.col .. " " .. d.message)
end
local line = found[1] and found[1].lnum or 0
local params = {
  textDocument = vim.lsp.util.make_text_document_params(),
  range = { start = { line = line, character = 0 }, ["end"] = { line = line, character = 0 } },
  context = { diagnostics = {} },
}
for _, answer in pairs(vim.lsp.buf_request_sync(0, "textDocument/codeAction", params, 30000) or {}) do
  for _, action in ipairs(answer.result or {}) do
    table.insert(lines, "action " .. action.title)
  end
end
vim.fn.writefile(lines, out)
vim.cmd("qa!")
"""


def _recipe(version: str) -> str:
    """The Lua block after the **VERSION** heading of docs/editors.md."""
    text = EDITORS.read_text(encoding="utf-8")
    start = text.index(f"**{version}**")
    match = re.compile(r"```lua\n(.*?)```", re.S).search(text, start)
    assert match is not None
    return match.group(1)


def _version() -> tuple[int, int]:
    assert NVIM is not None
    first = subprocess.run([NVIM, "--version"], capture_output=True, text=True, check=True).stdout.splitlines()[0]
    major, minor = re.search(r"v(\d+)\.(\d+)", first).groups()  # type: ignore[union-attr]
    return int(major), int(minor)


@pytest.mark.skipif(NVIM is None, reason="nvim is not installed")
def test_the_neovim_0_7_recipe_gets_diagnostics_and_quick_fixes(tmp_path: Path) -> None:
    if _version() >= (0, 11):
        pytest.skip("the 0.7 recipe uses vim.lsp.start_client, deprecated from Neovim 0.11")
    (tmp_path / "init.lua").write_text(_recipe("0.7"))
    (tmp_path / "check.lua").write_text(CHECK)
    source = tmp_path / "train.py"
    source.write_text("import torch\n\nmodel = torch.nn.Linear(2, 2).cuda()\n")
    out = tmp_path / "out.txt"
    # The recipe runs `devlint server`: the one installed beside this interpreter.
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    env = {**os.environ, "PATH": path, "DEVLINT_NVIM_OUT": str(out), "XDG_CONFIG_HOME": str(tmp_path / "config"),
           "XDG_DATA_HOME": str(tmp_path / "data"), "XDG_STATE_HOME": str(tmp_path / "state")}
    done = subprocess.run(
        [NVIM, "--headless", "-n", "-i", "NONE", "-u", str(tmp_path / "init.lua"), "-c", "luafile check.lua", "train.py"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert out.exists(), done.stderr + done.stdout
    lines = out.read_text().splitlines()
    # The finding starts at the dot of `.cuda()` (0-based line 2, column 29).
    assert any(line.startswith("diagnostic 2 29 `.cuda()`") for line in lines), lines
    assert "action Replace `.cuda()` with `.to(device)` (DEV101)" in lines, lines
    assert "action Add `# noqa: DEV101` to this line" in lines, lines


@pytest.mark.skipif(NVIM is None, reason="nvim is not installed")
def test_every_neovim_recipe_is_valid_lua(tmp_path: Path) -> None:
    """The recipes for newer versions cannot run here, but each must at least compile."""
    text = EDITORS.read_text(encoding="utf-8")
    section = text[text.index("\n## Neovim") : text.index("\n## Emacs")]
    blocks = re.findall(r"```lua\n(.*?)```", section, re.S)
    assert len(blocks) == 4  # 0.11+, 0.8-0.10, 0.7, and fix-all
    for number, block in enumerate(blocks):
        script = tmp_path / f"recipe{number}.lua"
        script.write_text(block)
        check = f"lua local f, e = loadfile('{script}'); if not f then io.stderr:write(e); vim.cmd('cq') end"
        done = subprocess.run(
            [NVIM, "--headless", "-n", "-i", "NONE", "-u", "NONE", "-c", check, "-c", "qa!"],
            capture_output=True, text=True, timeout=60, check=False,
        )
        assert done.returncode == 0, (block, done.stderr)
