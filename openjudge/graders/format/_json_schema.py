"""Does the response's JSON satisfy a JSON Schema?"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import ClassVar

from pydantic import JsonValue

from openjudge.graders._inputs import require_str
from openjudge.graders._workers import WorkerPool, WorkTimeout
from openjudge.graders.base_grader import BaseGrader, InvalidInputError, grader_boundary
from openjudge.graders.format._json_text import parse_json
from openjudge.graders.format._schema_validator import JsonSchema, SchemaError
from openjudge.results import GraderError, GraderScore, ResponseFailure, ScoreRange

__all__ = ["JsonSchemaGrader"]


class JsonSchemaGrader(BaseGrader):
    """1.0 if the response is JSON that validates against the schema, else 0.0.

    Validation uses the ``jsonschema`` library (every draft; 2020-12 unless ``$schema``
    names another; ``$ref`` only inside the schema, never fetched), through
    :class:`~openjudge.graders.format._schema_validator.JsonSchema`. ``multipleOf`` is
    decided in decimal arithmetic (0.3 is a multiple of 0.1).

    ``pattern`` and ``patternProperties`` match with RE2, in time linear in the text. A
    schema with a pattern RE2 cannot run (look-around, back-references) is validated in
    a worker process that is killed after ``timeout_s``: the response's failure (cause
    ``timeout``, scored at the bottom).

    The schema is given once to the constructor, or per sample as the ``schema`` input
    (which then takes precedence).

    Inputs:
        response: Text holding a JSON document (parsed strictly; see ``strip_code_fence``).
        schema: Optional per-sample schema; a malformed one is an ``invalid_input`` error.

    Score: 0.0 or 1.0 in [0, 1]; higher is better. ``metadata["errors"]`` lists up to
    ``max_errors`` messages such as ``"$.items[0].id: expected integer, got string"``.

    Args:
        schema: The schema used when a sample has none.
        strip_code_fence: Unwrap a response that is one Markdown fenced block.
        max_errors: How many validation errors to report.
        timeout_s: Time limit of a validation that needs backtracking patterns.
        name: Result name (default ``"json_schema"``).
        description: One line on what is measured.

    Raises:
        SchemaError: At construction, if ``schema`` is malformed or unsupported.
    """

    default_name: ClassVar[str] = "json_schema"
    default_score_range: ClassVar[ScoreRange | None] = ScoreRange(low=0.0, high=1.0)

    def __init__(
        self,
        schema: Mapping[str, JsonValue] | bool | None = None,
        *,
        strip_code_fence: bool = True,
        max_errors: int = 10,
        timeout_s: float = 5.0,
        name: str = "",
        description: str = "",
    ) -> None:
        if max_errors < 1:
            raise ValueError(f"max_errors must be >= 1, got {max_errors}")
        if not (math.isfinite(timeout_s) and timeout_s > 0):
            raise ValueError(f"timeout_s must be a finite number > 0, got {timeout_s!r}")
        super().__init__(name=name, description=description)
        self.schema = None if schema is None else JsonSchema(schema)
        self.strip_code_fence = strip_code_fence
        self.max_errors = max_errors
        self.timeout_s = float(timeout_s)
        self.workers = WorkerPool(max_workers=1, preload=("openjudge.graders.format._schema_validator",))

    async def _errors(self, validator: JsonSchema, instance: JsonValue) -> list[str]:
        if not validator.backtracking:
            try:
                return validator.errors(instance, limit=self.max_errors)
            except RecursionError:
                return ["$: the document is nested too deeply to validate"]
        found = await self.workers.call(
            "openjudge.graders.format._schema_validator:validate_in_worker",
            [validator.schema, instance, self.max_errors],  # type: ignore[list-item]  # a checked JSON schema
            timeout_s=self.timeout_s,
        )
        return [str(e) for e in found] if isinstance(found, list) else ["$: the validator failed"]

    def _schema_for(self, schema: object) -> JsonSchema:
        if schema is None:
            if self.schema is None:
                raise InvalidInputError("input 'schema' is required: this grader was built without a schema")
            return self.schema
        if not isinstance(schema, Mapping | bool):
            raise InvalidInputError(
                f"input 'schema' must be an object or a boolean, got {type(schema).__name__}"
            )
        try:
            return JsonSchema(schema)
        except SchemaError as exc:
            raise InvalidInputError(f"input 'schema' is not a usable JSON Schema: {exc}") from exc

    @grader_boundary
    async def aevaluate(
        self, *, response: str, schema: Mapping[str, JsonValue] | bool | None = None
    ) -> GraderScore | GraderError:
        """Validate the JSON in ``response`` against the schema."""
        response = require_str("response", response)
        validator = self._schema_for(schema)
        parsed = parse_json(response, strip_fence=self.strip_code_fence)
        metadata: dict[str, JsonValue] = {"fence_stripped": parsed.fence_stripped, "parsed": parsed.ok}
        if not parsed.ok:
            metadata["errors"] = [f"response is not valid JSON: {parsed.error}"]
            reason = f"response is not valid JSON: {parsed.error}"
            valid = False
        else:
            try:
                errors = await self._errors(validator, parsed.value)
            except SchemaError as exc:
                raise InvalidInputError(f"input 'schema' is not a usable JSON Schema: {exc}") from exc
            except WorkTimeout:
                # The schema is fixed; what made its pattern backtrack without end is the response.
                raise ResponseFailure(
                    "timeout",
                    f"validation with a backtracking pattern did not finish on the response within {self.timeout_s:g} s",
                ) from None
            valid = not errors
            metadata["errors"] = list(errors)
            reason = "response JSON satisfies the schema" if valid else f"schema violation: {errors[0]}"
        metadata["valid"] = valid
        return GraderScore(
            name=self.name,
            score=1.0 if valid else 0.0,
            reason=reason,
            metadata=metadata,
            score_range=self.score_range,
        )
