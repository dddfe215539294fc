"""One reward scorer behind every trainer adapter (VERL, TRL, SkyRL).

:class:`RewardScorer` owns what scoring a sample for RL means, once: the run settings of
its runner, the reward's aggregate, the failure policy (``drop``, ``neutral``,
``fallback``: :class:`ScorerSettings`), the breaker and the failure rate (kept in a
:class:`FailureLedger`: the process's, or VERL's run-wide actor), the process cache and
building the graders from a YAML (:mod:`~openjudge.integrations.scoring._loader`). The
adapters only translate: a trainer's arguments into samples, a :class:`Placement` (what
the trainer can do with a failure there), and a :class:`ScoredSample` back into what the
trainer takes. :class:`FailureRateExceeded` is what stops a run whose judge failed too
often, under every trainer.

Names load their module on first use (the VERL settings import this package's settings).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from openjudge._lazy import lazy_exports
from openjudge.errors import FailureRateExceeded as FailureRateExceeded
from openjudge.errors import SampleFailed as SampleFailed

if TYPE_CHECKING or not lazy_exports(globals()):
    from openjudge.integrations.scoring._ledger import FailureLedger as FailureLedger
    from openjudge.integrations.scoring._scorer import Placement as Placement
    from openjudge.integrations.scoring._scorer import RewardScorer as RewardScorer
    from openjudge.integrations.scoring._scorer import ScoredSample as ScoredSample
    from openjudge.integrations.scoring._settings import FailurePolicy as FailurePolicy
    from openjudge.integrations.scoring._settings import FallbackPolicy as FallbackPolicy
    from openjudge.integrations.scoring._settings import OnFailure as OnFailure
    from openjudge.integrations.scoring._settings import ScorerSettings as ScorerSettings

__all__ = [
    "FailureLedger",
    "FailurePolicy",
    "FailureRateExceeded",
    "FallbackPolicy",
    "OnFailure",
    "Placement",
    "RewardScorer",
    "SampleFailed",
    "ScoredSample",
    "ScorerSettings",
]
