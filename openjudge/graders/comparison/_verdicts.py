"""What a comparison judge replies: a winner between two positions, or an order of ids."""

from __future__ import annotations

from typing import Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = ["ListwiseVerdict", "PairwiseVerdict", "Winner"]

Winner: TypeAlias = Literal["A", "B", "tie"]
"""A pairwise winner: the response shown as A, the one shown as B, or neither."""

_WINNERS: dict[str, Winner] = {"a": "A", "b": "B", "tie": "tie"}


class PairwiseVerdict(BaseModel):
    """The judge's reply for one ordered comparison of two responses."""

    model_config = ConfigDict(extra="ignore")

    reason: str = Field(description="A brief comparison of the two responses.")
    winner: Winner = Field(
        description='"A" if Response A is better, "B" if Response B is better, else "tie".'
    )

    @field_validator("winner", mode="before")
    @classmethod
    def _normalise(cls, value: object) -> object:
        # Judges write "a", " B " or "Tie"; the meaning is unambiguous, so accept it.
        if isinstance(value, str):
            return _WINNERS.get(value.strip().lower(), value)
        return value


class ListwiseVerdict(BaseModel):
    """The judge's reply for a listwise ranking: candidate ids, best first."""

    model_config = ConfigDict(extra="ignore")

    reason: str = Field(description="A brief justification of the ranking.")
    ranking: list[str] = Field(description="Every candidate id exactly once, best first.")
