"""LibCST's trees of the sections of a document checked before, reused for the next check.

An edit changes one place of a file; the worker parses the file in small sections
(devlint.engine.sections: cut between top-level statements, stitched into the very tree one parse
gives) and takes each section whose text it parsed lately from here, so that only the sections
an edit touched are parsed again. Nodes are immutable, so a tree can sit in many checks; within
one check a section met twice (two identical statements) is parsed twice, since a node must
stand once in a tree (devlint looks nodes up by identity).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable

import libcst as cst

# Small enough that an edit re-parses little; large enough that stitching costs little.
SECTION_CHARS = 2048
# A tree holds ~50 bytes per byte of its text: about 100 MB of trees kept at most.
KEPT_CHARS = 2_000_000


class SectionTrees:
    def __init__(self, kept_chars: int = KEPT_CHARS) -> None:
        self._trees: OrderedDict[str, cst.Module] = OrderedDict()
        self._chars = 0
        self._kept_chars = kept_chars

    def parser(self) -> Callable[[str], cst.Module]:
        """A parser for the sections of one check."""
        used: set[str] = set()

        def parse(source: str) -> cst.Module:
            tree = self._trees.get(source)
            if tree is None or source in used:
                tree = cst.parse_module(source)
                self._keep(source, tree)
            else:
                self._trees.move_to_end(source)
            used.add(source)
            return tree

        return parse

    def _keep(self, source: str, tree: cst.Module) -> None:
        if source not in self._trees:
            self._chars += len(source)
        self._trees[source] = tree
        while self._chars > self._kept_chars and len(self._trees) > 1:
            dropped, _ = self._trees.popitem(last=False)
            self._chars -= len(dropped)
