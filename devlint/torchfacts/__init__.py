"""Step 0, what devlint knows about PyTorch itself: its versions, from which release each API a
fix writes exists, and the tables of torch's names that the gate and the rules both read.

Plain data and version arithmetic: imports nothing from devlint outside this package, and never
LibCST or torch, so the cheapest step of a run (the gate) can read it.
"""
