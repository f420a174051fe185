"""Step 5, what rule authors use: questions about calls and their arguments, builders for the code
fixes write, guards that make code GPU-only, value facts gathered during the walk, what a
Dataset class of the file hands a DataLoader, the program's own functions a call gives a device
to, and the accelerator API the DEV6 rules move code to.

Stands on ``devlint.rule`` (the context a rule sees is its ``RuleContext`` protocol), the analyses
and the torch facts; never on the engine, which runs the rules, nor on a run.
"""
