"""The failure ledger a :class:`~openjudge.integrations.scoring.RewardScorer` calls: the hook for outages.

The scorer asks the ledger before grading a sample (is the run stopped? is a provider's
breaker open?) and tells it after (which providers failed, whether the sample did); a
neutral sample asks it for its group's rewards. Where that state lives is the adapter's
choice, behind one interface (:data:`FailureLedger`):

* TRL and SkyRL: one ledger per scorer, in the process (:func:`process_ledger`);
* VERL: one for the whole run, a named Ray actor every reward worker reaches
  (:func:`openjudge.integrations.verl.ledger.run_ledger`), since VERL spreads a run's
  trajectories over many worker processes.

Both keep breakers and the failure rate by the same rules
(:class:`~openjudge.integrations.verl.guard.FailureGuard`).
"""

from __future__ import annotations

from collections.abc import Mapping

from openjudge.integrations.scoring.settings import FailurePolicy
from openjudge.integrations.verl.ledger import Ledger, LedgerClient, Neutral, group_means

__all__ = ["FailureLedger", "Neutral", "group_means", "process_ledger"]

FailureLedger = LedgerClient
"""What the scorer calls: ``admit`` before grading, ``record`` after, ``problem``; ``post``
and ``neutral`` for groups (:class:`~openjudge.integrations.verl.ledger.LedgerClient`)."""


def process_ledger(policy: FailurePolicy, describe: Mapping[str, str] | None = None) -> FailureLedger:
    """A ledger of this process alone, for one scorer (or one set of TRL reward functions)."""
    return Ledger(policy, describe)
