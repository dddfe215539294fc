"""One exception tree (openjudge/errors.py): drawn in its docstring, exported, and picklable."""

from __future__ import annotations

import builtins
import importlib
import pickle
import re
from pathlib import Path

import pytest

import openjudge.errors as errors
from openjudge.errors import OpenJudgeError
from openjudge.jobs import JobMismatchError
from openjudge.jobs._fingerprint import JobChanges

EXCEPTIONS = sorted(
    (
        value
        for value in vars(errors).values()
        if isinstance(value, type) and issubclass(value, BaseException)
    ),
    key=lambda cls: cls.__name__,
)
PUBLIC_EXCEPTIONS = [*EXCEPTIONS, JobMismatchError]

# Each public exception, built as the code raises it: what pickling must bring back.
EXAMPLES: list[BaseException] = [
    errors.OpenJudgeError("base"),
    errors.InvalidInputError("the reference is empty"),
    errors.ResponseFailure("too_deep", "the response nests 300 levels"),
    errors.ChatModelError(
        "HTTP 429", kind="timeout", retryable=True, status_code=429, retry_after_s=1.5, error_type="RateLimit"
    ),
    errors.InferenceError(
        "out of memory", kind="provider_error", retryable=True, error_type="OutOfMemoryError"
    ),
    errors.SandboxError("the sandbox did not start", "timeout"),
    errors.SchemaError("$.type: 'strin' is not a type"),
    errors.ConfigError(["job.yaml:3: graders.a.type: unknown grader type 'x'", "job.yaml:9: data: missing"]),
    errors.DatasetError("data.jsonl: line 4: not JSON", path=Path("data.jsonl"), line=4),
    errors.LabelledDataError(
        [f"pairs.jsonl:{n}: label: missing" for n in range(12)], path=Path("pairs.jsonl")
    ),
    errors.ResultsFileError("out.jsonl is in use by another run"),
    JobMismatchError("out.jsonl was written by another job", JobChanges(added=("b",), removed=("a",))),
    errors.SettingsError("+reward.openjudge.config= is required"),
    errors.SampleFailed("uid=7: every grader failed"),
    errors.FailureRateExceeded("12 of the last 20 samples failed"),
    errors.GroupJudgingError("uid=3 session 1 dropped: judge down"),
]


def test_every_exception_is_built_in_the_examples() -> None:
    assert sorted(type(e).__name__ for e in EXAMPLES) == sorted(c.__name__ for c in PUBLIC_EXCEPTIONS)


@pytest.mark.parametrize("error", EXAMPLES, ids=lambda e: type(e).__name__)
def test_every_public_exception_pickles_with_its_attributes(error: BaseException) -> None:
    # Exceptions cross Ray workers and process pools.
    back = pickle.loads(pickle.dumps(error))
    assert type(back) is type(error)
    assert (str(back), back.args, vars(back)) == (str(error), error.args, vars(error))


def test_a_chat_model_error_keeps_the_requests_it_made_across_pickling() -> None:
    error = errors.ChatModelError("HTTP 503", retryable=True, status_code=503)
    error.requests = 3
    back = pickle.loads(pickle.dumps(error))
    assert (back.requests, back.kind, back.error_type, str(back)) == (
        3,
        "provider_error",
        "ChatModelError",
        "HTTP 503",
    )


def test_the_labelled_data_error_lists_ten_problems_and_counts_the_rest() -> None:
    error = errors.LabelledDataError([f"p{n}" for n in range(12)], path=Path("x"))
    assert str(error).splitlines() == [*(f"p{n}" for n in range(10)), "... and 2 more"]
    assert len(error.problems) == 12


def _drawn_tree() -> list[tuple[int, str, str | None]]:
    """(depth, class name, builtin second base or None) per line of the docstring's tree."""
    rows = []
    for line in (errors.__doc__ or "").splitlines():
        match = re.match(r"^    ((?:│   |    )*)([├└]── )?([A-Z]\w+)(?: \((\w+)\))?", line)
        if match:
            depth = len(match.group(1)) // 4 + (1 if match.group(2) else 0)
            rows.append((depth, match.group(3), match.group(4)))
    return rows


def test_the_docstring_draws_the_tree_as_it_is() -> None:
    rows = _drawn_tree()
    assert sorted(name for _, name, _ in rows) == sorted(c.__name__ for c in PUBLIC_EXCEPTIONS)
    classes = {cls.__name__: cls for cls in PUBLIC_EXCEPTIONS}
    parents: list[str] = []
    for depth, name, builtin in rows:
        del parents[depth:]
        parent = classes[parents[-1]] if parents else Exception
        second = (getattr(builtins, builtin),) if builtin else ()
        assert classes[name].__bases__ == (parent, *second), name
        parents.append(name)


def test_every_public_exception_but_the_base_inherits_from_it() -> None:
    for cls in PUBLIC_EXCEPTIONS:
        assert issubclass(cls, OpenJudgeError), cls


# Where each exception is exported besides openjudge.errors (JobMismatchError: only there).
HOMES = {
    "openjudge": ["InvalidInputError", "ResponseFailure"],
    "openjudge.results": ["InvalidInputError", "ResponseFailure"],
    "openjudge.models": ["ChatModelError"],
    "openjudge.providers.transformers": ["InferenceError"],
    "openjudge.graders.code": ["SandboxError"],
    "openjudge.graders.format": ["SchemaError"],
    "openjudge.config": ["ConfigError"],
    "openjudge.jobs": ["DatasetError", "JobMismatchError", "ResultsFileError"],
    "openjudge.metaeval": ["LabelledDataError"],
    "openjudge.integrations.verl": ["SettingsError"],
    "openjudge.integrations.skyrl": ["SettingsError"],
    "openjudge.integrations.scoring": ["FailureRateExceeded", "SampleFailed"],
    "openjudge.integrations.verl.group": ["GroupJudgingError"],
}


@pytest.mark.parametrize("package", sorted(HOMES))
def test_each_package_exports_the_exceptions_of_its_domain(package: str) -> None:
    module = importlib.import_module(package)
    exported = sorted(
        name
        for name in module.__all__
        if isinstance(vars(module).get(name), type) and issubclass(vars(module)[name], BaseException)
    )
    assert exported == HOMES[package]
    for name in exported:
        assert getattr(module, name) is getattr(errors, name, JobMismatchError), name


def test_the_errors_module_exports_the_tree_and_the_error_kinds() -> None:
    assert sorted(errors.__all__) == sorted([*(c.__name__ for c in EXCEPTIONS), "ErrorKind"])


def test_the_builtin_bases_users_catch_still_catch() -> None:
    with pytest.raises(ValueError, match="unknown grader type"):
        raise errors.ConfigError(["job.yaml:3: graders.a.type: unknown grader type 'x'"])
    with pytest.raises(RuntimeError, match="12 of"):
        raise errors.FailureRateExceeded("12 of the last 20 samples failed")
    with pytest.raises(OpenJudgeError, match="dropped"):
        raise errors.GroupJudgingError("uid=3 dropped")
