"""Step 8's child side, what runs in the child processes of `devlint verify` and `devlint
emulate`: the harness that runs a program, the comparison of what two runs produced, emulated
CUDA and the bootstrap that installs it in every Python process.

This side imports nothing from devlint (its modules are loaded by path, or as the pytest plugin,
into the user's own interpreter) and is the only side that imports torch.
"""
