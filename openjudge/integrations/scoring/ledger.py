"""The failure ledger a :class:`~openjudge.integrations.scoring.RewardScorer` calls: the hook for outages.

The scorer asks the ledger before grading a sample (is the run stopped? is a provider's
breaker open?) and tells it after (which providers failed, whether the sample did). Where
that state lives is the adapter's choice:

* TRL and SkyRL: one ledger per scorer, in the process (:func:`process_ledger`);
* VERL: one for the whole run, a named Ray actor every reward worker reaches
  (:func:`openjudge.integrations.verl.ledger.run_ledger`), since VERL spreads a run's
  trajectories over many worker processes.

Both keep breakers and the failure rate with the same rules
(:class:`~openjudge.integrations.verl.guard.FailureGuard`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from openjudge.integrations.scoring.settings import FailurePolicy
from openjudge.integrations.verl.ledger import Ledger, Neutral, group_means

__all__ = ["FailureLedger", "Neutral", "group_means", "process_ledger"]


class FailureLedger(Protocol):
    """What the scorer calls (a process's :class:`~openjudge.integrations.verl.ledger.Ledger`,
    or VERL's run-wide actor)."""

    async def admit(self, providers: list[str]) -> tuple[str | None, str | None]:
        """Before grading: (why the run must stop, or ``None``; a provider whose breaker is open, or ``None``)."""
        ...

    async def record(self, outage: dict[str, bool], labels: list[str]) -> str | None:
        """After grading: each provider's outage, the failure labels; the stop message once tripped."""
        ...

    async def problem(self) -> str | None:
        """Why the run must stop, or ``None``."""
        ...

    async def post(self, uid: str, reward: float | None, values: dict[str, float] | None = None) -> None:
        """One member of group ``uid`` was scored (``reward``) or failed (``None``)."""
        ...

    async def neutral(self, uid: str, expected: int, wait_s: float) -> Neutral:
        """The means of ``uid``'s scored members, once the group is in (or ``wait_s`` passed)."""
        ...


def process_ledger(policy: FailurePolicy, describe: Mapping[str, str] | None = None) -> FailureLedger:
    """A ledger of this process alone, for one scorer (or one set of TRL reward functions)."""
    return Ledger(policy, describe)
