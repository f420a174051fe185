"""Replacing attributes of torch for the time emulation is installed, and putting them back."""

from __future__ import annotations

from typing import Any

_MISSING = object()


class Patches:
    def __init__(self) -> None:
        self._saved: list[tuple[Any, str, Any]] = []

    def set(self, owner: Any, name: str, value: Any, optional: bool = False) -> Any:
        """Replace ``owner.name`` with ``value``; returns what ``owner.name`` was (for a class, what
        lookup found, perhaps on a base class). ``optional``: a name that not every supported torch
        has (names_table.py); where the running torch lacks it nothing is replaced (nothing in
        that torch can call it) and the answer is None. Without it a missing name is an error."""
        if optional and not hasattr(owner, name):
            return None
        found = getattr(owner, name)
        own = owner.__dict__.get(name, _MISSING) if isinstance(owner, type) else found
        self._saved.append((owner, name, own))
        setattr(owner, name, value)
        return found

    def restore(self) -> None:
        for owner, name, old in reversed(self._saved):
            if old is _MISSING:
                delattr(owner, name)
            else:
                setattr(owner, name, old)
        self._saved.clear()
