"""The server's own settings, from the editor (initializationOptions, workspace/configuration,
workspace/didChangeConfiguration). What to lint with comes from the project's configuration
files, as for the CLI (devlint.server.configuration)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

SECTION = "devlint"


@dataclass(frozen=True)
class ServerSettings:
    # Offer the unsafe fixes as quick fixes too (never in source.fixAll.devlint).
    unsafe_fixes: bool = False
    # Publish a file that does not parse as one error diagnostic (else: no diagnostics).
    show_syntax_errors: bool = True
    # Milliseconds without an edit before a changed document is checked.
    debounce_ms: int = 200


_KEYS = {"unsafeFixes": "unsafe_fixes", "showSyntaxErrors": "show_syntax_errors", "debounceMs": "debounce_ms"}


def read_settings(raw: Any, current: ServerSettings) -> ServerSettings:
    """``current`` with what ``raw`` says: ``{"devlint": {...}}``, ``{"settings": {...}}`` or
    the keys themselves. Values of the wrong type are ignored rather than fatal."""
    if not isinstance(raw, dict):
        return current
    for wrapper in (SECTION, "settings"):
        if isinstance(raw.get(wrapper), dict):
            raw = raw[wrapper]
    values: dict[str, Any] = {}
    for key, name in _KEYS.items():
        value = raw.get(key)
        wanted = type(getattr(current, name))
        if isinstance(value, wanted) and not (wanted is int and isinstance(value, bool)):
            values[name] = max(value, 0) if wanted is int else value
    return replace(current, **values)
