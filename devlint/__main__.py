import sys

from devlint.cli import main

sys.exit(main())
