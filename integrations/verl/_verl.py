"""The place that imports VERL and torch, with an ImportError that says what to install.

Only the modules that need VERL at class-definition time (the reward managers and the
batch helpers) import this; ``import integrations.verl`` alone does not.
"""

from __future__ import annotations

INSTALL_HINT = (
    "integrations.verl's reward managers need VERL and torch. Install torch first, then the extra:\n"
    "    pip install torch==2.13.0          # or your CUDA build; install it BEFORE verl so pip keeps it\n"
    "    pip install 'openjudge-graders[verl]'\n"
    "(VERL does not pin torch: without a torch already installed, pip pulls the newest CUDA build.)"
)

try:
    import torch
    from verl import DataProto
except ImportError as exc:  # pragma: no cover - exercised only where verl is absent
    raise ImportError(f"{INSTALL_HINT}\n(import failed: {exc})") from exc

__all__ = ["INSTALL_HINT", "DataProto", "torch"]
