"""Step 8, a front end: `devlint verify` proves a rewrite by running the original and the fixed
program on every device there is, in child processes, and comparing what they produce (see
command.py); `devlint verify --tests` does it with a project's own tests (suite_command.py) and
`devlint emulate` runs any command under emulated CUDA (emulate.py).

This side, the parent process, never imports torch. It may import a run's parts (to fix programs
in memory as `devlint fix` would), the registry, the engine, the data modules and
``devlint.torchfacts``, and ``child`` (what it starts); ``child`` imports nothing from devlint.
"""
