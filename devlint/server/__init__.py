"""Step 8, a front end beside the CLI: `devlint server`, the Language Server Protocol over stdio
(needs the `server` extra, pygls). May import a run's parts (configuration, notebooks,
suppressions), the engine, the registry, ``devlint.docs``, ``devlint.rule``, the gate and the data
modules; never verify or the CLI.

The data path, top to bottom: ``documents`` keeps the editor's text of each open file and
notebook; ``configuration`` finds the settings the CLI would use for it; ``scheduler`` runs
``analysis`` (the engine, in a worker process) on the newest version after a short pause in
typing; ``diagnostics``, ``actions`` and ``hover`` turn the result into what the editor shows;
``protocol`` wires it to pygls.
"""
