"""Finds the rules shipped in ``devlint.rules`` and selects them by code and prefix.

Selecting rules and reading their triggers needs only devlint.gate.catalog; the rule classes (and
LibCST with them) are imported when a file must be parsed: ``load`` imports one rule's module,
``all_rules`` every one.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterable
from functools import cache
from typing import TYPE_CHECKING

from devlint.gate.catalog import RULES, RuleInfo
from devlint.torchfacts.version import DEFAULT as DEFAULT_TORCH_VERSION

if TYPE_CHECKING:
    from devlint.rule import Rule


class UnknownCodeError(ValueError):
    pass


@cache
def all_rules() -> tuple[type[Rule], ...]:
    import devlint.rules as package
    from devlint.rule import Rule

    found: list[type[Rule]] = []
    for info in pkgutil.iter_modules(package.__path__):
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        for value in vars(module).values():
            if isinstance(value, type) and issubclass(value, Rule) and value is not Rule and value.__module__ == module.__name__:
                found.append(value)
    return tuple(sorted(found, key=lambda rule: rule.code))


@cache
def infos() -> tuple[RuleInfo, ...]:
    """What each rule is, from the catalog while it lists every rule module; else (a module was
    added without its catalog line) from the rule classes themselves: slower, never wrong."""
    import devlint.rules as package

    modules = {f"{package.__name__}.{info.name}" for info in pkgutil.iter_modules(package.__path__)}
    if modules == {info.module for info in RULES}:
        return RULES
    return tuple(
        RuleInfo(rule.code, rule.name, rule.default_enabled, tuple(rule.triggers), rule.__module__, rule.default_since)
        for rule in all_rules()
    )


def info_by_code(code: str) -> RuleInfo:
    for info in infos():
        if info.code == code.upper() or info.name == code.lower():
            return info
    raise UnknownCodeError(f"unknown rule code {code!r}")


def rule_by_code(code: str) -> type[Rule]:
    for rule in all_rules():
        if rule.code == code.upper() or rule.name == code.lower():
            return rule
    raise UnknownCodeError(f"unknown rule code {code!r}")


def load(code: str) -> type[Rule]:
    """The class of rule ``code``, importing its own module only."""
    info = info_by_code(code)
    module = importlib.import_module(info.module)
    for value in vars(module).values():
        if getattr(value, "code", None) == info.code and getattr(value, "__module__", None) == info.module:
            return value
    return rule_by_code(code)


def _matching(prefix: str) -> list[RuleInfo]:
    prefix = prefix.strip().upper()
    if prefix == "ALL":
        return list(infos())
    matched = [info for info in infos() if info.code.startswith(prefix)]
    if not matched:
        raise UnknownCodeError(f"unknown rule code or prefix {prefix!r}")
    return matched


def select_infos(
    select: Iterable[str] | None = None,
    ignore: Iterable[str] = (),
    extend_select: Iterable[str] = (),
    torch_version: tuple[int, int] = DEFAULT_TORCH_VERSION,
) -> list[RuleInfo]:
    """Rules chosen by codes or prefixes (``DEV1`` selects DEV1xx); default: the rules on by
    default for code that must run on ``torch_version`` (DEV604 from 2.6). Explicit configuration
    wins over a version's defaults: a ``select`` replaces them, ``ignore`` removes a rule at any
    version."""
    if select is None:
        chosen = {info for info in infos() if info.on_by_default(torch_version)}
    else:
        chosen = {info for code in select for info in _matching(code)}
    chosen |= {info for code in extend_select for info in _matching(code)}
    chosen -= {info for code in ignore for info in _matching(code)}
    return sorted(chosen, key=lambda info: info.code)


def select_rules(
    select: Iterable[str] | None = None,
    ignore: Iterable[str] = (),
    extend_select: Iterable[str] = (),
    torch_version: tuple[int, int] = DEFAULT_TORCH_VERSION,
) -> list[type[Rule]]:
    """``select_infos``'s rules as classes."""
    return [load(info.code) for info in select_infos(select, ignore, extend_select, torch_version)]
