"""What to install when VERL is missing: the message every VERL-importing module raises with.

This module imports nothing. Each module that needs VERL at class-definition time (the
reward managers, the tool agent loop, the replay buffers, the group stage) imports what
it needs from VERL itself, under this hint; the modules they share (rows, samples,
batch scoring) import VERL only for type checking. So our modules and VERL may be
imported in any order (see :mod:`openjudge.integrations.verl.plugin`).
"""

from __future__ import annotations

__all__ = ["INSTALL_HINT"]

INSTALL_HINT = (
    "openjudge.integrations.verl's reward managers need VERL and torch. Install torch first, then the extra:\n"
    "    pip install torch==2.13.0          # or your CUDA build; install it BEFORE verl so pip keeps it\n"
    "    pip install 'openjudge-graders[verl]'\n"
    "(VERL does not pin torch: without a torch already installed, pip pulls the newest CUDA build.)"
)
