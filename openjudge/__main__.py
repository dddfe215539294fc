"""``python -m openjudge``: the command line."""

import sys

from openjudge.cli import main

sys.exit(main())
