"""The torch releases emulated CUDA supports, and what a torch outside them is told.

Emulation replaces private parts of torch (names_table.py says which exist in which release), so
it is developed against a range of releases. This module imports nothing, not even torch, so that
the pytest option and the bootstrap can load it by path and refuse an unsupported torch before
importing it (they read the version from torch/version.py).
"""

from __future__ import annotations

import os
import re

# The oldest and the newest torch minor release emulation supports (docs/emulation.md: "Emulated CUDA").
SUPPORTED: tuple[tuple[int, int], tuple[int, int]] = ((2, 4), (2, 14))


class UnsupportedTorchError(RuntimeError):
    """The running torch is outside SUPPORTED: emulation installs nothing."""


def release(version: str) -> tuple[int, int] | None:
    """``(2, 13)`` for ``2.13.0+cpu`` or ``2.15.0.dev20260101``; None for what is no version."""
    found = re.match(r"(\d+)\.(\d+)", version)
    return (int(found.group(1)), int(found.group(2))) if found else None


def refusal(version: str) -> str | None:
    """The one line that says emulation does not support torch ``version``; None if it does."""
    found = release(version)
    oldest, newest = SUPPORTED
    shown = version.split("+")[0]
    if found is None:
        return f"torch {shown} has a version emulation cannot read (it supports {_dotted(oldest)} to {_dotted(newest)})"
    if found < oldest:
        return f"torch {shown} is older than emulation supports ({_dotted(oldest)})"
    if found > newest:
        return f"torch {shown} is newer than emulation supports ({_dotted(newest)})"
    return None


def installed_version(torch_dir: str) -> str | None:
    """``__version__`` from ``torch_dir/version.py`` without importing torch; None if unreadable."""
    try:
        with open(os.path.join(torch_dir, "version.py"), encoding="utf-8") as handle:
            text = handle.read()
    except OSError:
        return None
    found = re.search(r"^__version__\s*(?::[^=]*)?=\s*['\"]([^'\"]+)['\"]", text, re.MULTILINE)
    return found.group(1) if found else None


def _dotted(pair: tuple[int, int]) -> str:
    return f"{pair[0]}.{pair[1]}"
