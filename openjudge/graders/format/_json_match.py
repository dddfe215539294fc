"""Does the response's JSON equal a reference JSON value?"""

from __future__ import annotations

import json
import math
from collections import Counter
from typing import ClassVar

from pydantic import JsonValue

from openjudge.graders._inputs import require_str
from openjudge.graders.base_grader import BaseGrader, InvalidInputError, grader_boundary
from openjudge.graders.blame import MAX_RESPONSE_DEPTH, check_depth, nesting_depth, response_blame
from openjudge.graders.format._json_text import canonical_json, json_type_name, parse_json
from openjudge.results import GraderScore, ScoreRange

__all__ = ["JsonMatchGrader", "check_json_value"]

_MAX_REFERENCE_DEPTH = 200


def check_json_value(field: str, value: object, path: str = "$") -> None:
    """Raise ``InvalidInputError`` unless ``value`` is a JSON value (finite numbers, str keys)."""
    if value is None or isinstance(value, bool | int | str):
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidInputError(f"input {field!r} has a non-finite number at {path}")
        return
    if isinstance(value, list | tuple):
        for i, item in enumerate(value):
            check_json_value(field, item, f"{path}[{i}]")
        return
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise InvalidInputError(f"input {field!r} has a non-string key {key!r} at {path}")
            check_json_value(field, item, f"{path}.{key}")
        return
    raise InvalidInputError(f"input {field!r} holds a {type(value).__name__} at {path}, not a JSON value")


def _kind(value: object) -> str:
    kind = json_type_name(value)
    return "number" if kind == "integer" else kind


class JsonMatchGrader(BaseGrader):
    """1.0 if the response's JSON equals the reference JSON, else 0.0.

    Equality is JSON equality: object key order never matters, ``1`` equals ``1.0``,
    and ``true`` never equals ``1``. The first difference is reported in the reason and
    in ``metadata["mismatch"]`` as a path such as ``$.items[2].id``.

    Inputs:
        response: Text holding a JSON document (parsed strictly; see ``strip_code_fence``).
        reference: The expected value: a ``str`` is parsed as JSON text, anything else
            (dict, list, number, bool, None) is used as the value itself. To expect the
            JSON string ``"abc"``, pass the JSON text ``'"abc"'``.

    Score: 0.0 or 1.0 in [0, 1]; higher is better. An unparsable response scores 0.0;
    an unparsable or non-JSON reference is an ``invalid_input`` error. A response whose JSON
    nests deeper than the reference and than 100 levels is the response's failure (cause
    ``too_deep``, scored at the bottom); a reference deeper than 200 levels is ``invalid_input``.

    Args:
        strict_order: Arrays must be in the same order. Without it arrays are compared
            as multisets (at any depth).
        ignore_extra_keys: Keys present in the response but not in the reference are
            allowed (at any depth).
        strip_code_fence: Unwrap a response that is one Markdown fenced block.
        name: Result name (default ``"json_match"``).
        description: One line on what is measured.
    """

    default_name: ClassVar[str] = "json_match"
    default_score_range: ClassVar[ScoreRange | None] = ScoreRange(low=0.0, high=1.0)

    def __init__(
        self,
        *,
        strict_order: bool = True,
        ignore_extra_keys: bool = False,
        strip_code_fence: bool = True,
        name: str = "",
        description: str = "",
    ) -> None:
        super().__init__(name=name, description=description)
        self.strict_order = strict_order
        self.ignore_extra_keys = ignore_extra_keys
        self.strip_code_fence = strip_code_fence

    def _diff(self, got: object, want: object, path: str) -> str | None:
        """Describe the first difference between ``got`` and ``want``, or None if they match."""
        got_kind, want_kind = _kind(got), _kind(want)
        if got_kind != want_kind:
            return f"{path}: expected {want_kind}, got {got_kind}"
        if isinstance(want, dict) and isinstance(got, dict):
            for key, item in want.items():
                if key not in got:
                    return f"{path}: missing key {key!r}"
                found = self._diff(got[key], item, f"{path}.{key}")
                if found is not None:
                    return found
            if not self.ignore_extra_keys:
                extra = [key for key in got if key not in want]
                if extra:
                    return f"{path}: unexpected key {extra[0]!r}"
            return None
        if isinstance(want, list | tuple) and isinstance(got, list | tuple):
            if len(got) != len(want):
                return f"{path}: expected {len(want)} items, got {len(got)}"
            if self.strict_order:
                for i, (g, w) in enumerate(zip(got, want, strict=True)):
                    found = self._diff(g, w, f"{path}[{i}]")
                    if found is not None:
                        return found
                return None
            if self._unordered_equal(list(got), list(want)):
                return None
            return f"{path}: items differ (compared in any order)"
        if got != want:
            return f"{path}: expected {json.dumps(want)[:80]}, got {json.dumps(got)[:80]}"
        return None

    def _unordered_equal(self, got: list[object], want: list[object]) -> bool:
        if not self.ignore_extra_keys:
            # Equality is an equivalence here, so comparing canonical forms is exact and O(n log n).
            canon = Counter(canonical_json(v, strict_order=False) for v in got)
            return canon == Counter(canonical_json(v, strict_order=False) for v in want)
        # "Matches while ignoring extra keys" is not symmetric: find a perfect bipartite
        # matching (Kuhn's augmenting paths) instead of pairing greedily.
        fits = [[j for j, g in enumerate(got) if self._diff(g, w, "$") is None] for w in want]
        owner: dict[int, int] = {}

        def assign(i: int, seen: set[int]) -> bool:
            for j in fits[i]:
                if j in seen:
                    continue
                seen.add(j)
                if j not in owner or assign(owner[j], seen):
                    owner[j] = i
                    return True
            return False

        return all(assign(i, set()) for i in range(len(want)))

    @grader_boundary
    async def aevaluate(self, *, response: str, reference: JsonValue) -> GraderScore:
        """Compare the JSON in ``response`` with ``reference``."""
        response = require_str("response", response)
        if isinstance(reference, str):
            parsed_ref = parse_json(reference, strip_fence=False)
            if not parsed_ref.ok:
                raise InvalidInputError(f"input 'reference' is not valid JSON: {parsed_ref.error}")
            want: object = parsed_ref.value
        else:
            check_depth(reference, what="input 'reference'", response=False, limit=_MAX_REFERENCE_DEPTH)
            check_json_value("reference", reference)
            want = reference
        check_depth(want, what="input 'reference'", response=False, limit=_MAX_REFERENCE_DEPTH)
        parsed = parse_json(response, strip_fence=self.strip_code_fence)
        metadata: dict[str, JsonValue] = {
            "strict_order": self.strict_order,
            "ignore_extra_keys": self.ignore_extra_keys,
            "fence_stripped": parsed.fence_stripped,
        }
        if not parsed.ok:
            metadata["error"] = parsed.error
            return GraderScore(
                name=self.name,
                score=0.0,
                reason=f"response is not valid JSON: {parsed.error}",
                metadata=metadata,
                score_range=self.score_range,
            )
        # The comparison recurses once per level: bound the response's nesting first.
        limit = max(MAX_RESPONSE_DEPTH, nesting_depth(want, _MAX_REFERENCE_DEPTH))
        check_depth(parsed.value, what="the response's JSON", response=True, limit=limit)
        with response_blame("comparing the response's JSON"):
            mismatch = self._diff(parsed.value, want, "$")
        metadata["matched"] = mismatch is None
        if mismatch is not None:
            metadata["mismatch"] = mismatch
        return GraderScore(
            name=self.name,
            score=1.0 if mismatch is None else 0.0,
            reason="response JSON matches the reference" if mismatch is None else f"mismatch at {mismatch}",
            metadata=metadata,
            score_range=self.score_range,
        )
