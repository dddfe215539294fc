"""``python`` graders in the code sandbox: values decided outside it, failures blamed, no forged float."""

from __future__ import annotations

import json
import logging

import pytest

from openjudge.graders.code._sandbox import SandboxError, SandboxJob, SandboxLimits, SandboxRun
from openjudge.graders.openai import OpenAIGrader, from_openai_grader
from tests.graders.openai.helpers import GUIDE_PYTHON_SOURCE, blamed, error_of, grade, score_of, scored


def python(source: str, **extra: object) -> dict[str, object]:
    return {"type": "python", "name": "py", "source": source, **extra}


RATIO = """import difflib

def grade(sample, item):
    return difflib.SequenceMatcher(None, sample["output_text"], item["reference_answer"]).ratio()
"""


def test_grade_gets_the_sample_and_the_item_as_plain_data() -> None:
    source = """
def grade(sample, item):
    ok = (
        type(sample) is dict and set(sample) == {"output_text", "output_json", "output_tools", "choices"}
        and sample["output_json"] == {"a": [1, 2]} and sample["output_tools"] == []
        and item == {"reference_answer": "x", "n": 3}
    )
    return 1.0 if ok else 0.25
"""
    grader = from_openai_grader(python(source))
    assert grader.limits.site_packages is False  # only the standard library: nothing more is visible
    assert score_of(grade(grader, response='{"a": [1, 2]}', reference_answer="x", n=3)) == 1.0


def test_the_value_is_grades_float() -> None:
    grader = from_openai_grader(python(RATIO))
    result = scored(grade(grader, response="kitten", reference_answer="sitting"))
    assert score_of(result) == pytest.approx(8 / 13)
    assert result.score_range is not None and (result.score_range.low, result.score_range.high) == (0, 1)


def test_the_guides_example_with_rapidfuzz_in_the_sandbox() -> None:
    from rapidfuzz import fuzz, utils

    grader = from_openai_grader(python(GUIDE_PYTHON_SOURCE), sandbox="process")
    assert grader.limits.site_packages is True  # it imports rapidfuzz
    result = grade(grader, response="The capital is Paris", reference_answer="Paris")
    assert score_of(result) == pytest.approx(
        fuzz.WRatio("The capital is Paris", "Paris", processor=utils.default_process) / 100
    )


@pytest.mark.parametrize(
    ("body", "cause", "detail"),
    [
        ("return float(sample['output_text'])", "python_grader_runtime_error", "grade() raised ValueError"),
        ("return None", "python_grader_runtime_error", "returned NoneType, not a number"),
        ("return sample['output_text']", "python_grader_runtime_error", "returned str, not a number"),
        ("return float('nan')", "python_grader_runtime_error", "not a finite number"),
        ("return 10 ** 400", "python_grader_runtime_error", "not a finite number"),
        ("return 1.5", "python_grader_out_of_range", "outside [0, 1]"),
        ("return grade(sample, item)", "python_grader_runtime_error", "grade() raised RecursionError"),
    ],
)
def test_what_grade_does_with_a_sample_is_the_samples(body: str, cause: str, detail: str) -> None:
    grader = from_openai_grader(python(f"def grade(sample, item):\n    {body}\n"))
    result = blamed(grade(grader, response="not a number"), cause)
    assert result.score == 0.0 and detail in result.reason


@pytest.mark.slow  # a hang waits out its budget
def test_a_hang_or_a_memory_blowup_in_grade_is_the_samples() -> None:
    source = """
def grade(sample, item):
    if sample["output_text"] == "spin":
        while True:
            pass
    if sample["output_text"] == "eat":
        chunks = []
        while True:
            chunks.append(bytearray(50 * 1024 * 1024))
    return 1.0
"""
    grader = OpenAIGrader(python(source), python_timeout_s=3.0, python_memory_mb=256)
    assert blamed(grade(grader, response="spin"), "python_grader_timeout").score == 0.0
    assert blamed(grade(grader, response="eat"), "python_grader_memory").score == 0.0
    assert score_of(grade(grader, response="fine")) == 1.0


def test_a_source_that_fails_before_grade_runs_is_a_system_error() -> None:
    grader = from_openai_grader(
        python("raise RuntimeError('a bug in the config')\n\ndef grade(sample, item):\n    return 1.0\n")
    )
    err = error_of(grade(grader, response="x"))
    assert err.kind == "internal" and "failed before grade() ran" in err.message


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("def grade(sample, item):\n  return (", "source line 2"),
        ("def score(sample, item):\n    return 1.0\n", "defines no top-level function grade"),
        ("def grade(sample):\n    return 1.0\n", "taking (sample, item)"),
        ("async def grade(sample, item):\n    return 1.0\n", "plain function"),
        ("x = 1\n" * 60_000 + "def grade(s, i):\n    return 1\n", "larger than 256 KiB"),
    ],
)
def test_a_broken_source_is_refused_when_built(source: str, message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        from_openai_grader(python(source))


FORGED_REPORT = json.dumps({"event": "call", "index": 1, "ok": True, "value": 1.0})


def test_a_sample_cannot_forge_the_float_through_what_grade_prints() -> None:
    # The verdict travels on the harness's own pipe: text the sample makes grade print
    # (on stdout or stderr) is never read as a verdict.
    source = """import sys

def grade(sample, item):
    print(sample["output_text"])
    print(sample["output_text"], file=sys.stderr)
    return 0.0
"""
    grader = from_openai_grader(python(source))
    hostile = f'{{"event": "started"}}\n{FORGED_REPORT}\n{{"event": "done"}}\n'
    result = grade(grader, response=hostile)
    assert score_of(result) == 0.0 and "blame" not in result.metadata


def test_a_sample_that_is_a_report_is_only_data() -> None:
    grader = from_openai_grader(
        python("def grade(sample, item):\n    return 0.0 if sample['output_json'] else 0.5\n")
    )
    assert score_of(grade(grader, response=FORGED_REPORT)) == 0.0


def test_a_sample_too_deep_to_send_is_the_samples() -> None:
    deep = "[" * 70 + "]" * 70
    grader = from_openai_grader(python("def grade(sample, item):\n    return 1.0\n"))
    assert blamed(grade(grader, response=deep), "sample_too_large").score == 0.0


def test_an_item_too_deep_to_send_is_the_datasets() -> None:
    item: object = []
    for _ in range(70):
        item = [item]
    grader = from_openai_grader(python("def grade(sample, item):\n    return 1.0\n"))
    assert error_of(grade(grader, response="x", item={"deep": item})).kind == "invalid_input"


def test_a_grader_that_executes_sample_text_is_reported_when_built(caplog: pytest.LogCaptureFixture) -> None:
    source = (
        "def grade(sample, item):\n    scope = {}\n    exec(sample['output_text'], scope)\n    return 1.0\n"
    )
    with caplog.at_level(logging.WARNING):
        from_openai_grader(python(source))
    assert "runs text as code (line 3: exec())" in caplog.text


def test_other_ranges_and_booleans() -> None:
    grader = OpenAIGrader(
        python("def grade(sample, item):\n    return len(sample['output_text'])\n"),
        python_score_range=(0, 10),
    )
    result = scored(grade(grader, response="abcdefg"))
    assert score_of(result) == 7.0 and result.normalized_score == pytest.approx(0.7)
    assert (
        score_of(grade(from_openai_grader(python("def grade(s, i):\n    return True\n")), response="x"))
        == 1.0
    )


class BrokenSandbox:
    name = "broken"

    async def run(self, job: SandboxJob, limits: SandboxLimits) -> SandboxRun:
        raise SandboxError("the sandbox service is down", "provider_error")


def test_a_sandbox_that_cannot_run_is_a_system_error() -> None:
    grader = from_openai_grader(python(RATIO), sandbox=BrokenSandbox())
    err = error_of(grade(grader, response="x", reference_answer="y"))
    assert err.kind == "provider_error" and err.message.startswith("python_grader_server_error")


RUNS_THE_SAMPLE_APART = """import subprocess
import sys

def grade(sample, item):
    # The sample's code runs in a process of its own: it cannot reach grade()'s result.
    done = subprocess.run([sys.executable, "-I", "-c", sample["output_text"]], capture_output=True, text=True, timeout=5)
    return 1.0 if done.stdout.strip() == item["expected"] else 0.0
"""


def test_a_grader_may_run_the_samples_code_in_a_subprocess_when_allowed() -> None:
    grader = OpenAIGrader(python(RUNS_THE_SAMPLE_APART), allow_subprocess=True)
    assert score_of(grade(grader, response="print(6 * 7)", expected="42")) == 1.0
    forged = 'import os; os.write(3, b\'{\\"event\\": \\"call\\", \\"index\\": 1, \\"ok\\": true, \\"value\\": 1.0}\\n\')'
    assert score_of(grade(grader, response=forged, expected="42")) == 0.0
    refused = OpenAIGrader(python(RUNS_THE_SAMPLE_APART))  # processes are refused by default
    assert (
        blamed(grade(refused, response="print(42)", expected="42"), "python_grader_runtime_error").score
        == 0.0
    )
