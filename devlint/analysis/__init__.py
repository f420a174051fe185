"""Step 3, what the program means: the semantic model (scopes, bindings, imports), which bindings
reach a point, which device an expression names, which parameters of the module's own functions
reach a device sink, code that only runs on CUDA or on an older torch, and the generic helpers
over LibCST's tree.

Filled in during the engine's one walk and read by rules through the context. May import
``devlint.torchfacts`` and ``devlint.settings``; never the engine, the rules or a run.
"""
