import os
import sys

# `python -m devlint` puts the current folder first on sys.path: a project file named like a
# module devlint imports (argparse.py, rich.py) would run. Static checks never run user code.
if sys.path and sys.path[0] in ("", os.getcwd()):
    del sys.path[0]

from devlint.cli import main  # noqa: E402 - after the sys.path repair above

sys.exit(main())
