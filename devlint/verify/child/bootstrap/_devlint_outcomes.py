"""A pytest plugin that records each test's outcome for ``devlint verify --tests`` (child side:
nothing of devlint). verify names it in ``PYTEST_PLUGINS`` and gives a folder in
``DEVLINT_TEST_OUTCOMES``; every process that runs tests (a plain session, each pytest-xdist
worker) appends JSON lines to its own file there:

- ``{"kind": "session", "rootdir": ...}`` first, so that verify can leave out sessions that are not
  the project's own (a test that runs pytest on a temporary folder);
- ``{"kind": "test", "nodeid", "outcome", "message", "when", "frames"}`` per test, once its
  teardown is over, and per collection error. ``outcome`` is passed, failed, error (setup,
  teardown or collection failed), skipped, xfailed or xpassed; ``message`` the failure's last line
  or the skip's reason; ``frames`` the traceback's ``[file, line]`` pairs, innermost last.
"""

from __future__ import annotations

import json
import os
import re
import traceback
from typing import Any

import pytest

_FOLDER = "DEVLINT_TEST_OUTCOMES"
_MESSAGE_LIMIT = 600
_FRAMES = "_devlint_frames"


class Recorder:
    """Registered as a plugin of the session it records."""

    def __init__(self, folder: str, rootdir: str) -> None:
        self._path = os.path.join(folder, f"outcomes-{os.getpid()}.jsonl")
        self._reports: dict[str, list[Any]] = {}
        # Frames of the project's own files are the ones a fix can be in.
        self._roots = tuple({os.path.join(os.path.abspath(root), "") for root in (rootdir, os.getcwd())})
        self._write({"kind": "session", "rootdir": rootdir})

    def _write(self, record: dict[str, Any]) -> None:
        with open(self._path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(record) + "\n")

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item: Any, call: Any) -> Any:
        made = yield
        if call.excinfo is not None:
            frames = [
                [frame.filename, frame.lineno]
                for frame in traceback.extract_tb(call.excinfo.tb)
                if os.path.abspath(frame.filename).startswith(self._roots)
            ]
            setattr(made.get_result(), _FRAMES, frames)

    def pytest_runtest_logreport(self, report: Any) -> None:
        self._reports.setdefault(report.nodeid, []).append(report)
        if report.when == "teardown":
            self._write(_verdict(report.nodeid, self._reports.pop(report.nodeid)))

    def pytest_collectreport(self, report: Any) -> None:
        if report.failed:
            self._write(
                {"kind": "test", "nodeid": report.nodeid, "outcome": "error", "when": "collect",
                 "message": _failure_message(report), "frames": []}
            )


def _verdict(nodeid: str, reports: list[Any]) -> dict[str, Any]:
    outcome, message, when, frames = "passed", "", "call", []
    for report in reports:
        xfail = hasattr(report, "wasxfail")
        if report.failed:
            failed_as = "failed" if report.when == "call" else "error"
            if outcome not in ("failed", "error"):
                outcome, message, when = failed_as, _failure_message(report), report.when
                frames = getattr(report, _FRAMES, [])
        elif report.skipped and outcome == "passed":
            outcome = "xfailed" if xfail else "skipped"
            message, when = (report.wasxfail if xfail else _skip_reason(report)), report.when
        elif report.when == "call" and xfail and outcome == "passed":
            outcome, message = "xpassed", report.wasxfail
    return {"kind": "test", "nodeid": nodeid, "outcome": outcome, "message": _short(message), "when": when,
            "frames": frames}


def _failure_message(report: Any) -> str:
    crash = getattr(getattr(report, "longrepr", None), "reprcrash", None)
    if crash is not None and getattr(crash, "message", None):
        return _short(crash.message)
    lines = [line for line in str(getattr(report, "longreprtext", "") or report.longrepr).splitlines() if line.strip()]
    # pytest marks the lines of an error with "E   ".
    return _short(re.sub(r"^E\s+", "", lines[-1]) if lines else "")


def _skip_reason(report: Any) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        reason = str(longrepr[2])
        return reason[len("Skipped: "):] if reason.startswith("Skipped: ") else reason
    return str(longrepr)


def _short(text: str) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= _MESSAGE_LIMIT else text[: _MESSAGE_LIMIT - 3] + "..."


def pytest_configure(config: Any) -> None:
    folder = os.environ.get(_FOLDER)
    # The xdist controller receives its workers' reports, which the workers record themselves.
    controller = getattr(config.option, "dist", "no") != "no" and not hasattr(config, "workerinput")
    if folder and not controller:
        config.pluginmanager.register(Recorder(folder, str(config.rootpath)), "devlint-outcomes")
