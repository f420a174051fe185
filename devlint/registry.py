"""Finds the rules shipped in ``devlint.rules`` and selects them by code and prefix."""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterable
from functools import cache

from devlint.rule import Rule


class UnknownCodeError(ValueError):
    pass


@cache
def all_rules() -> tuple[type[Rule], ...]:
    import devlint.rules as package

    found: list[type[Rule]] = []
    for info in pkgutil.iter_modules(package.__path__):
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        for value in vars(module).values():
            if isinstance(value, type) and issubclass(value, Rule) and value is not Rule and value.__module__ == module.__name__:
                found.append(value)
    return tuple(sorted(found, key=lambda rule: rule.code))


def rule_by_code(code: str) -> type[Rule]:
    for rule in all_rules():
        if rule.code == code.upper() or rule.name == code.lower():
            return rule
    raise UnknownCodeError(f"unknown rule code {code!r}")


def _matching(prefix: str) -> list[type[Rule]]:
    prefix = prefix.strip().upper()
    if prefix == "ALL":
        return list(all_rules())
    matched = [rule for rule in all_rules() if rule.code.startswith(prefix)]
    if not matched:
        raise UnknownCodeError(f"unknown rule code or prefix {prefix!r}")
    return matched


def select_rules(
    select: Iterable[str] | None = None,
    ignore: Iterable[str] = (),
    extend_select: Iterable[str] = (),
) -> list[type[Rule]]:
    """Rules chosen by codes or prefixes (``DEV1`` selects DEV1xx); default: the default-on rules."""
    if select is None:
        chosen = {rule for rule in all_rules() if rule.default_enabled}
    else:
        chosen = {rule for code in select for rule in _matching(code)}
    chosen |= {rule for code in extend_select for rule in _matching(code)}
    chosen -= {rule for code in ignore for rule in _matching(code)}
    return sorted(chosen, key=lambda rule: rule.code)
