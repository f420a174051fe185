"""A small LSP client that drives the real `devlint server` process over stdio, as an editor
does: plain JSON-RPC, every message recorded in arrival order.

Also used by bench/lsp_latency.py. Positions are UTF-16 unless the test negotiates another
encoding; ``utf16_offset`` and ``apply_edits`` are the client's own arithmetic, independent of
the server's.
"""

from __future__ import annotations

import json
import re
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

TIMEOUT = 60.0


class ResponseError(Exception):
    def __init__(self, error: dict[str, Any]) -> None:
        super().__init__(f"{error.get('code')}: {error.get('message')}")
        self.code = error.get("code")


def server_command() -> list[str]:
    """The installed `devlint` script next to this interpreter, else `python -m devlint`."""
    script = Path(sys.executable).with_name("devlint")
    return [str(script), "server"] if script.exists() else [sys.executable, "-m", "devlint", "server"]


def utf16_offset(text: str, line: int, character: int) -> int:
    """The str index of an LSP position (UTF-16 columns) in ``text``."""
    starts = [0] + [match.end() for match in re.finditer(r"\r\n|\r|\n", text)]
    if line >= len(starts):
        return len(text)
    start = starts[line]
    end = starts[line + 1] if line + 1 < len(starts) else len(text)
    units = 0
    offset = start
    while offset < end and text[offset] not in "\r\n" and units < character:
        units += 2 if ord(text[offset]) > 0xFFFF else 1
        offset += 1
    return offset


def utf16_position(text: str, offset: int) -> dict[str, int]:
    before = text[:offset]
    line = before.count("\n") + before.count("\r") - before.count("\r\n")
    last = max(before.rfind("\n"), before.rfind("\r"))
    column = before[last + 1 :]
    return {"line": line, "character": sum(2 if ord(c) > 0xFFFF else 1 for c in column)}


def apply_edits(text: str, edits: list[dict[str, Any]]) -> str:
    """``text`` after a TextEdit[] (all ranges refer to the original text)."""
    spans = []
    for order, edit in enumerate(edits):
        start = utf16_offset(text, edit["range"]["start"]["line"], edit["range"]["start"]["character"])
        end = utf16_offset(text, edit["range"]["end"]["line"], edit["range"]["end"]["character"])
        spans.append((start, end, order, edit["newText"]))
    for start, end, _, new in sorted(spans, key=lambda span: (span[0], span[1], span[2]), reverse=True):
        text = text[:start] + new + text[end:]
    return text


def uri_of(path: Path) -> str:
    return path.resolve().as_uri()


class LspClient:
    def __init__(self, cwd: Path, env: dict[str, str] | None = None, command: list[str] | None = None) -> None:
        self.process = subprocess.Popen(
            command or server_command(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=cwd,
            env={**os.environ, **(env or {})},
        )
        self._changed = threading.Condition()
        self._next_id = 0
        self.responses: dict[int, dict[str, Any]] = {}
        self.notifications: list[dict[str, Any]] = []
        self.server_requests: list[dict[str, Any]] = []
        self.configuration: dict[str, Any] = {}
        self.stderr: list[bytes] = []
        self._write_lock = threading.Lock()
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._drain_stderr, daemon=True).start()

    # -- the wire ---------------------------------------------------------------------------

    def _drain_stderr(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.stderr.append(line)

    def _read(self) -> None:
        stream = self.process.stdout
        assert stream is not None
        while True:
            length = None
            while True:
                header = stream.readline()
                if not header:
                    with self._changed:
                        self._changed.notify_all()
                    return
                if header in (b"\r\n", b"\n"):
                    break
                name, _, value = header.decode("ascii").partition(":")
                if name.strip().lower() == "content-length":
                    length = int(value.strip())
            assert length is not None, "a message without Content-Length"
            message = json.loads(stream.read(length))
            if "method" in message and "id" in message:
                self._answer(message)
            with self._changed:
                if "method" not in message:
                    self.responses[message["id"]] = message
                elif "id" not in message:
                    self.notifications.append(message)
                self._changed.notify_all()

    def _answer(self, request: dict[str, Any]) -> None:
        self.server_requests.append(request)
        result: Any = None
        if request["method"] == "workspace/configuration":
            result = [self.configuration.get(item.get("section"), {}) for item in request["params"]["items"]]
        self._send({"jsonrpc": "2.0", "id": request["id"], "result": result})

    def _send(self, message: dict[str, Any]) -> None:
        body = json.dumps(message).encode("utf-8")
        assert self.process.stdin is not None
        with self._write_lock:
            self.process.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
            self.process.stdin.flush()

    def notify(self, method: str, params: Any) -> None:
        self._send({"jsonrpc": "2.0", "method": method, "params": params})

    def send_request(self, method: str, params: Any) -> int:
        self._next_id += 1
        self._send({"jsonrpc": "2.0", "id": self._next_id, "method": method, "params": params})
        return self._next_id

    def response(self, request_id: int, timeout: float = TIMEOUT) -> dict[str, Any]:
        """The raw response message (``result`` or ``error``)."""
        self.wait_for(lambda: request_id in self.responses, timeout, f"no response to request {request_id}")
        return self.responses[request_id]

    def request(self, method: str, params: Any, timeout: float = TIMEOUT) -> Any:
        message = self.response(self.send_request(method, params), timeout)
        if "error" in message:
            raise ResponseError(message["error"])
        return message.get("result")

    def wait_for(self, condition: Callable[[], Any], timeout: float = TIMEOUT, what: str = "condition") -> Any:
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                found = condition()
                if found:
                    return found
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"timed out waiting for: {what}; server stderr: {self.stderr_text()[-2000:]}")
                if self.process.poll() is not None:
                    raise AssertionError(f"the server exited ({self.process.returncode}): {self.stderr_text()[-2000:]}")
                self._changed.wait(min(left, 0.5))

    def stderr_text(self) -> str:
        return b"".join(self.stderr).decode("utf-8", "replace")

    # -- the session ------------------------------------------------------------------------

    def initialize(
        self,
        root: Path,
        capabilities: dict[str, Any] | None = None,
        options: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        default = {
            "workspace": {
                "workspaceEdit": {"documentChanges": True},
                "didChangeWatchedFiles": {"dynamicRegistration": True},
                "configuration": True,
            },
            "textDocument": {"codeAction": {"codeActionLiteralSupport": {"codeActionKind": {"valueSet": ["quickfix", "source"]}}}},
            "notebookDocument": {"synchronization": {}},
        }
        result = self.request(
            "initialize",
            {
                "processId": os.getpid(),
                "rootUri": uri_of(root),
                "capabilities": default if capabilities is None else capabilities,
                "initializationOptions": options,
            },
        )
        self.notify("initialized", {})
        return result

    def shutdown(self) -> int:
        self.request("shutdown", None)
        self.notify("exit", None)
        return self.process.wait(timeout=TIMEOUT)

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=TIMEOUT)

    def open(self, uri: str, text: str, version: int = 1, language: str = "python") -> None:
        self.notify(
            "textDocument/didOpen",
            {"textDocument": {"uri": uri, "languageId": language, "version": version, "text": text}},
        )

    def change(self, uri: str, version: int, changes: list[dict[str, Any]]) -> None:
        self.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": version}, "contentChanges": changes})

    def publishes(self, uri: str) -> list[dict[str, Any]]:
        return [
            n["params"]
            for n in self.notifications
            if n["method"] == "textDocument/publishDiagnostics" and n["params"]["uri"] == uri
        ]

    def diagnostics(self, uri: str, version: int | None = None, timeout: float = TIMEOUT) -> list[dict[str, Any]]:
        """The diagnostics published for ``uri`` (for ``version``, when given), waiting for them."""

        def found() -> list[dict[str, Any]] | None:
            published = [p for p in self.publishes(uri) if version is None or p.get("version") == version]
            return published[-1]["diagnostics"] if published else None

        self.wait_for(lambda: found() is not None, timeout, f"diagnostics of {uri} v{version}")
        return found() or []

    def messages(self, method: str = "window/showMessage") -> list[dict[str, Any]]:
        return [n["params"] for n in self.notifications if n["method"] == method]
