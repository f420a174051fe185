"""The textual prefilter: a file in which no selected rule's trigger appears is not parsed,
and a parsed file is walked only by the rules whose triggers it contains.

Rules declare ``triggers``, substrings without one of which the rule cannot fire (see
devlint.rule). Whether a file needs parsing at all is one compiled alternation of every
selected trigger, searched once over the decoded text: it stops at the first trigger found. Which
rules then run takes one substring search per distinct trigger. Rules are independent of each
other (``--select`` runs any subset), so leaving out rules that cannot fire changes no finding.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from devlint.rule import Rule


def triggers(rules: Sequence[type[Rule]]) -> tuple[str, ...]:
    return tuple(sorted({token for rule in rules for token in rule.triggers}))


@lru_cache(maxsize=64)
def _pattern(tokens: tuple[str, ...]) -> re.Pattern[str]:
    # Longest first: an alternation tries its branches in order at each position.
    return re.compile("|".join(re.escape(token) for token in sorted(tokens, key=len, reverse=True)))


@lru_cache(maxsize=64)
def _rules_pattern(rules: tuple[type[Rule], ...]) -> re.Pattern[str] | None:
    """None: every file must be parsed (a rule without triggers can fire anywhere)."""
    if not rules or any(not rule.triggers for rule in rules):
        return None
    return _pattern(triggers(rules))


def may_match(text: str, rules: Sequence[type[Rule]]) -> bool:
    """False when no rule in ``rules`` can fire on ``text``: the file need not be parsed."""
    if not rules:
        return False
    pattern = _rules_pattern(tuple(rules))
    return pattern is None or pattern.search(text) is not None


def matching_rules(text: str, rules: Sequence[type[Rule]]) -> list[type[Rule]]:
    """The rules in ``rules`` that may fire on ``text`` (in their order); none: skip the file."""
    if not may_match(text, rules):
        return []
    present: dict[str, bool] = {}

    def found(token: str) -> bool:
        if token not in present:
            present[token] = token in text
        return present[token]

    return [rule for rule in rules if not rule.triggers or any(found(token) for token in rule.triggers)]
