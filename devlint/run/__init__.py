"""Step 7, a run of `devlint check` or `devlint fix` over files: configuration, discovery, the
worker pool, one file's (or notebook's) bytes through the engine, suppressions, the cache, safe
writing and progress.

``command`` reads top to bottom: discover, process each file (``pool`` → ``file_job`` or
``notebook_job``), report through ``devlint.formats``, exit status. May import everything below
it: the engine, the registry of rules, the gate, the formats.
"""
