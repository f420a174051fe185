"""The textual prefilter: a file in which no selected rule's trigger appears is not parsed,
and a parsed file is walked only by the rules whose triggers it contains.

Rules declare ``triggers``, substrings without one of which the rule cannot fire (see
devlint.rule); a ``Word`` trigger must stand as a whole identifier (no letter, digit or
underscore on either side). Whether a file needs parsing at all is one compiled alternation of every
selected plain trigger, searched once over the decoded text (it stops at the first trigger found),
then a ``str.find`` of each word. Which rules then run takes one substring search per distinct
trigger. Rules are independent of each other (``--select`` runs any subset), so leaving out
rules that cannot fire changes no finding.
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


@lru_cache(maxsize=64)
def _plain_pattern(tokens: tuple[str, ...]) -> re.Pattern[str] | None:
    """One alternation of the plain tokens (literals only: the regex engine finds them fast),
    longest first, as an alternation tries its branches in order at each position."""
    if not tokens:
        return None
    return re.compile("|".join(re.escape(token) for token in sorted(tokens, key=len, reverse=True)))


@lru_cache(maxsize=64)
def _split(rules: tuple[Triggered, ...]) -> tuple[re.Pattern[str] | None, tuple[str, ...]] | None:
    """The selected rules' plain triggers as one pattern, and their words; None: every file must
    be parsed (a rule without triggers can fire anywhere)."""
    if not rules or any(not rule.triggers for rule in rules):
        return None
    tokens = triggers(rules)
    return _plain_pattern(tuple(token for token in tokens if not isinstance(token, Word))), tuple(
        str(token) for token in tokens if isinstance(token, Word)
    )


def has_word(text: str, word: str) -> bool:
    """``word`` stands in ``text`` as a whole identifier: no letter, digit or underscore (what a
    regex's ``\\w`` matches) on either side. Found with ``str.find``: a regex with a lookbehind
    first cannot skip ahead to its literal, and tries every position of the text."""
    at = text.find(word)
    while at >= 0:
        end = at + len(word)
        if (at == 0 or not _identifier_char(text[at - 1])) and (end == len(text) or not _identifier_char(text[end])):
            return True
        at = text.find(word, at + 1)
    return False


def _identifier_char(char: str) -> bool:
    return char.isalnum() or char == "_"


def may_match(text: str, rules: Sequence[Triggered]) -> bool:
    """False when no rule in ``rules`` can fire on ``text``: the file need not be parsed."""
    split = _split(tuple(rules)) if rules else (None, ())
    if split is None:
        return True
    pattern, words = split
    return (pattern is not None and pattern.search(text) is not None) or any(has_word(text, word) for word in words)


def matching_rules(text: str, rules: Sequence[R]) -> list[R]:
    """The rules in ``rules`` that may fire on ``text`` (in their order); none: skip the file."""
    if not may_match(text, rules):
        return []
    present: dict[tuple[str, bool], bool] = {}

    def found(token: str) -> bool:
        key = (token, isinstance(token, Word))
        if key not in present:
            present[key] = has_word(text, token) if key[1] else token in text
        return present[key]

    return [rule for rule in rules if not rule.triggers or any(found(token) for token in rule.triggers)]
