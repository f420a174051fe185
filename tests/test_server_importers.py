"""`devlint server` end to end: an open document is checked again when a module it imports
constants from changes on disk (issue 22). The document is checked from its buffer, the other
module from disk (devlint.run.project_imports): the file watcher's notification, or the save of
that module in the editor, tells the server the disk changed."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pygls", reason="the language server needs the `server` extra")

from lsp_client import LspClient, uri_of  # noqa: E402
from server_helpers import session  # noqa: E402

TRAIN = (
    "import torch.distributed as dist\n"
    "from .dist_config import BACKEND\n\n\n"
    "def setup(rank):\n"
    "    dist.init_process_group(BACKEND, rank=rank, world_size=2)\n"
)
# Reads no constant of dist_config.py: no reason to check it again when that module changes.
OTHER = "import torch\nfrom . import dist_config\n\nx = torch.ones(2).cuda()\n"
NCCL, GLOO = 'BACKEND = "nccl"\n', 'BACKEND = "gloo"\n'
CHANGED = 2  # FileChangeType.Changed


@pytest.fixture
def project(tmp_path: Path) -> Path:
    package = tmp_path / "mypkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "dist_config.py").write_text(GLOO)
    return package


@pytest.fixture
def client(tmp_path: Path) -> Any:
    with session(tmp_path, options={"devlint": {"debounceMs": 50}}) as started:
        yield started


def _codes(client: LspClient, uri: str) -> list[str]:
    return sorted(d["code"] for d in client.publishes(uri)[-1]["diagnostics"])


def _republished(client: LspClient, uri: str, count: int) -> list[str]:
    client.wait_for(lambda: len(client.publishes(uri)) > count, what=f"a new check of {uri}")
    return _codes(client, uri)


def test_a_change_on_disk_rechecks_the_documents_that_import_from_the_module(client: LspClient, project: Path) -> None:
    # The editor is asked to report changes of the project's modules.
    client.wait_for(lambda: client.server_requests, what="the watchers' registration")
    (registration,) = client.server_requests[0]["params"]["registrations"]
    assert "**/*.py" in {w["globPattern"] for w in registration["registerOptions"]["watchers"]}
    train, other = uri_of(project / "train.py"), uri_of(project / "other.py")
    client.open(train, TRAIN)
    client.open(other, OTHER)
    assert client.diagnostics(train, 1) == []
    assert [d["code"] for d in client.diagnostics(other, 1)] == ["DEV101"]
    config = project / "dist_config.py"
    config.write_text(NCCL)
    count, others = len(client.publishes(train)), len(client.publishes(other))
    client.notify("workspace/didChangeWatchedFiles", {"changes": [{"uri": uri_of(config), "type": CHANGED}]})
    assert _republished(client, train, count) == ["DEV603"]
    # A module whose change the document does not read: no new check.
    count = len(client.publishes(train))
    client.notify("workspace/didChangeWatchedFiles", {"changes": [{"uri": uri_of(project / "__main__.py"), "type": CHANGED}]})
    time.sleep(1.0)
    assert len(client.publishes(train)) == count and len(client.publishes(other)) == others


def test_saving_the_module_in_the_editor_rechecks_the_documents_that_import_from_it(client: LspClient, project: Path) -> None:
    train, config = uri_of(project / "train.py"), project / "dist_config.py"
    config.write_text(NCCL)
    client.open(train, TRAIN)
    assert [d["code"] for d in client.diagnostics(train, 1)] == ["DEV603"]
    client.open(uri_of(config), NCCL)
    client.change(uri_of(config), 2, [{"text": GLOO}])
    config.write_text(GLOO)  # what the editor writes before it says so
    count = len(client.publishes(train))
    client.notify("textDocument/didSave", {"textDocument": {"uri": uri_of(config)}})
    assert _republished(client, train, count) == []
