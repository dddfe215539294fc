"""What binds a results file to its job: the fingerprint and how two of them differ."""

from __future__ import annotations

import pytest

from openjudge.config._build import build_job
from openjudge.config._loader import parse_config
from openjudge.jobs._fingerprint import JobFingerprint, compare, job_fingerprint

BASE = """
providers:
  judge: {{kind: openai, model: {model}, base_url: "{base_url}"{api_key},
          sampling: {{temperature: {temperature}}}, limits: {{max_concurrency: {limit}}}, timeout_s: {timeout_s}}}
graders:
  quality:
    type: llm
    provider: judge
    params: {{template: "{template}", score_range: [1, 5]}}
  exact: {{type: string_match, mapper: {{response: answer, reference: expected}}}}
aggregators:
  - {{type: weighted_mean, name: reward, weights: {{quality: {weight}, exact: 1}}}}
"""


def fingerprint(**changes: object) -> JobFingerprint:
    values: dict[str, object] = {
        "model": "m",
        "temperature": 0,
        "limit": 8,
        "timeout_s": 30,
        "template": "Rate: {answer}",
        "weight": 2,
        "base_url": "http://user:secret@127.0.0.1:9/v1/",
        "api_key": "",
    }
    values.update(changes)
    config = parse_config(BASE.format(**values))
    return job_fingerprint(config, build_job(config, use_cache=False))


def test_the_fingerprint_holds_what_decides_a_score_and_no_secret() -> None:
    fp = fingerprint()
    quality = fp.graders["quality"]
    assert quality.type == "llm"
    assert quality.grader_class == "openjudge.graders.llm_grader.LLMGrader"
    assert quality.version == "1"
    assert quality.params == {"template": "Rate: {answer}", "score_range": [1, 5]}
    assert quality.prompt is not None and quality.prompt.startswith("sha256:")
    assert quality.provider == {
        "kind": "openai",
        "model": "m",
        "base_url": "http://127.0.0.1:9/v1",  # credentials and the trailing slash cut
        "api_version": None,
        "structured_output": "json_schema",
        "sampling": {"temperature": 0.0, "top_p": None, "max_tokens": None, "seed": 0},
    }
    assert fp.graders["exact"].mapper == {"response": "answer", "reference": "expected"}
    assert fp.graders["exact"].prompt is None and fp.graders["exact"].provider is None
    assert fp.aggregators == {
        "reward": {
            "type": "weighted_mean",
            "weights": {"quality": 2.0, "exact": 1.0},
            "on_error": "error",
            "gates": None,
            "fail_score": 0.0,
        }
    }
    assert "secret" not in fp.model_dump_json()
    # A key given beside the URL (credentials may come from one or the other, not both).
    keyed = fingerprint(base_url="http://127.0.0.1:9/v1/", api_key=", api_key: sk-canary")
    assert keyed.graders["quality"].provider == quality.provider
    assert "sk-canary" not in keyed.model_dump_json()


def test_limits_and_timeouts_do_not_change_it() -> None:
    assert compare(fingerprint(), fingerprint(limit=2, timeout_s=5)).empty


@pytest.mark.parametrize(
    ("changes", "described"),
    [
        ({"model": "other"}, ["graders.quality: provider.model: 'm' -> 'other'"]),
        ({"temperature": 0.7}, ["graders.quality: provider.sampling.temperature: 0.0 -> 0.7"]),
        (
            {"template": "Score: {answer}"},
            [
                "graders.quality: params.template: 'Rate: {answer}' -> 'Score: {answer}'",
                "graders.quality: prompt: the prompt template changed",
            ],
        ),
        ({"weight": 3}, ["aggregators.reward: weights.quality: 2.0 -> 3.0"]),
    ],
)
def test_each_change_is_described(changes: dict[str, object], described: list[str]) -> None:
    diff = compare(fingerprint(), fingerprint(**changes))
    assert diff.describe() == described
    assert diff.needs_consent == ("weight" not in changes)  # aggregates are recomputed without asking


def test_added_and_removed_graders() -> None:
    old = fingerprint()
    new = old.model_copy(
        update={"graders": {"quality": old.graders["quality"], "format": old.graders["exact"]}}
    )
    diff = compare(old, new)
    assert (diff.added, diff.removed, dict(diff.changed)) == (("format",), ("exact",), {})
    assert diff.to_grade == {"format"} and diff.needs_consent
    only_added = compare(new.model_copy(update={"graders": {"quality": old.graders["quality"]}}), new)
    assert only_added.added == ("format",) and not only_added.needs_consent
