"""Step 6, one text to findings and edits: gate it, parse it once (in sections when it is large),
walk the tree once with every selected rule, turn the rules' reports into findings with their
fixes, and apply fixes in rounds until nothing changes.

``lint`` is the entry point (``lint_text``, ``fix_text``); ``walk`` the one walk; ``context`` what
rules share about the file; ``placement`` where new imports and the device definition go;
``positions``, ``sections``, ``interning`` and ``render`` serve them. Imports the steps below it
(torch facts, gate, analysis, ``rule``, rule kit); never the rules themselves, a run, the
server or verify: the caller hands it the rule classes.
"""
