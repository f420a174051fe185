"""How loudly an editor shows each rule's findings (documented in docs/editors.md).

- Warning: code that fails, or computes on the wrong device, on a machine without CUDA or with
  another device layout (DEV1xx, DEV2xx, DEV303 the race, DEV304, DEV401, DEV402), and
  deprecated APIs (DEV5xx).
- Information: advice that makes working code faster or more portable: the copy and loader
  performance rules (DEV301, DEV302), DataParallel (DEV403), and the DEV6 family (other
  accelerators than CUDA).
- Error is kept for code that does not parse.

Deprecated APIs (DEV105 `set_default_tensor_type`, DEV5xx) also carry the Deprecated tag, which
editors draw struck through.
"""

from __future__ import annotations

from lsprotocol import types

_INFORMATION = ("DEV301", "DEV302", "DEV403", "DEV6")
_DEPRECATED = ("DEV105", "DEV5")


def severity(code: str) -> types.DiagnosticSeverity:
    if code.startswith(_INFORMATION):
        return types.DiagnosticSeverity.Information
    return types.DiagnosticSeverity.Warning


def tags(code: str) -> list[types.DiagnosticTag] | None:
    return [types.DiagnosticTag.Deprecated] if code.startswith(_DEPRECATED) else None
