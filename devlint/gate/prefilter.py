"""The textual prefilter: a file in which no selected rule's trigger appears is not parsed,
and a parsed file is walked only by the rules whose triggers it contains.

Rules declare ``triggers``, substrings without one of which the rule cannot fire (see
devlint.rule); a ``Word`` trigger must stand as a whole identifier (no letter, digit or
underscore on either side). Whether a file needs parsing at all is one compiled alternation of every
selected trigger, searched once over the decoded text: it stops at the first trigger found. Which
rules then run takes one substring search per distinct trigger. Rules are independent of each
other (``--select`` runs any subset), so leaving out rules that cannot fire changes no finding.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, TypeVar

from devlint.gate.catalog import Word

if TYPE_CHECKING:
    from devlint.gate.catalog import Triggered

R = TypeVar("R", bound="Triggered")


def triggers(rules: Sequence[Triggered]) -> tuple[str, ...]:
    every = [token for rule in rules for token in rule.triggers]
    plain = {token for token in every if not isinstance(token, Word)}
    # A plain substring matches wherever the same word does: the word adds nothing.
    words = {Word(token) for token in every if isinstance(token, Word) and str(token) not in plain}
    return tuple(sorted([*plain, *words]))


def _pattern(tokens: tuple[str, ...]) -> re.Pattern[str]:
    # The cache must tell Word("load") from "load", which compare equal.
    return _compiled(tuple((str(token), isinstance(token, Word)) for token in tokens))


@lru_cache(maxsize=64)
def _compiled(tokens: tuple[tuple[str, bool], ...]) -> re.Pattern[str]:
    # Longest first: an alternation tries its branches in order at each position.
    return re.compile(
        "|".join(
            rf"(?<!\w){re.escape(token)}(?!\w)" if word else re.escape(token)
            for token, word in sorted(tokens, key=lambda item: len(item[0]), reverse=True)
        )
    )


@lru_cache(maxsize=64)
def _rules_pattern(rules: tuple[Triggered, ...]) -> re.Pattern[str] | None:
    """None: every file must be parsed (a rule without triggers can fire anywhere)."""
    if not rules or any(not rule.triggers for rule in rules):
        return None
    return _pattern(triggers(rules))


def may_match(text: str, rules: Sequence[Triggered]) -> bool:
    """False when no rule in ``rules`` can fire on ``text``: the file need not be parsed."""
    if not rules:
        return False
    pattern = _rules_pattern(tuple(rules))
    return pattern is None or pattern.search(text) is not None


def matching_rules(text: str, rules: Sequence[R]) -> list[R]:
    """The rules in ``rules`` that may fire on ``text`` (in their order); none: skip the file."""
    if not may_match(text, rules):
        return []
    present: dict[tuple[str, bool], bool] = {}

    def found(token: str) -> bool:
        key = (token, isinstance(token, Word))
        if key not in present:
            present[key] = _pattern((token,)).search(text) is not None if key[1] else token in text
        return present[key]

    return [rule for rule in rules if not rule.triggers or any(found(token) for token in rule.triggers)]
