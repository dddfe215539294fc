"""Batched generation on tiny models: padding, logprobs, constraints, stops, per-request errors."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch

from openjudge.providers.transformers._errors import InferenceError
from openjudge.providers.transformers._generation import Generation, Generator
from openjudge.providers.transformers._loading import LoadedModel, load_model, resolve_device, resolve_dtype
from openjudge.providers.transformers._requests import GenerationRequest
from openjudge.providers.transformers._settings import TransformersSettings
from tests.providers.transformers import tiny

pytestmark = pytest.mark.slow  # real (tiny) models run forward passes and generate


def loaded(path: Path, max_input_tokens: int | None = None) -> LoadedModel:
    settings = TransformersSettings(model=str(path), device="cpu", max_input_tokens=max_input_tokens)
    return load_model(settings, "causal_lm")


def ask(text: str, **fields: object) -> GenerationRequest:
    options: dict[str, object] = {"max_new_tokens": 8, **fields}
    return GenerationRequest(messages=({"role": "user", "content": text},), **options)  # type: ignore[arg-type]


def ok(outcome: Generation | BaseException) -> Generation:
    assert isinstance(outcome, Generation), outcome
    return outcome


QUESTIONS = ["a", "what is the capital of france?", "2+2?", "answer with a good score, please: 4 or 5?"]


def test_a_left_padded_batch_generates_what_each_prompt_generates_alone(random_lm_path: Path) -> None:
    generator = Generator(loaded(random_lm_path))
    together = [ok(o) for o in generator.run([ask(q) for q in QUESTIONS])]
    alone = [ok(generator.run([ask(q)])[0]) for q in QUESTIONS]
    assert [g.text for g in together] == [g.text for g in alone]
    assert [g.completion_tokens for g in together] == [g.completion_tokens for g in alone]
    prompts = [len(generator.encode(ask(q))) for q in QUESTIONS]
    assert [g.prompt_tokens for g in together] == prompts
    assert len(set(prompts)) == len(prompts)  # the batch really was padded


def test_the_wired_judge_writes_its_verdict_and_stops(judge_path: Path) -> None:
    out = ok(Generator(loaded(judge_path)).run([ask("2+2?", max_new_tokens=16)])[0])
    assert out.text == tiny.VERDICT_TEXT
    assert out.finish_reason == "stop"
    assert out.completion_tokens == 6  # five verdict tokens and the end-of-sequence token


def test_logprobs_equal_a_direct_forward_pass_even_in_a_padded_batch(judge_path: Path) -> None:
    model = loaded(judge_path)
    generator = Generator(model)
    requests = [ask(q, max_new_tokens=16, top_logprobs=5) for q in QUESTIONS]
    outs = [ok(o) for o in generator.run(requests)]
    verdict_ids = model.tokenizer.encode(tiny.VERDICT_TEXT, add_special_tokens=False)
    for request, out in zip(requests, outs, strict=True):
        assert "".join(t.token for t in out.tokens) == out.text == tiny.VERDICT_TEXT
        prompt = generator.encode(request)
        with torch.no_grad():
            logits = model.model(torch.tensor([prompt + verdict_ids])).logits[0].float()
        expected = torch.log_softmax(logits, dim=-1)
        for step, token in enumerate(out.tokens):
            row = expected[len(prompt) - 1 + step]
            assert math.isclose(token.logprob, float(row[verdict_ids[step]]), abs_tol=1e-5)
            top = torch.topk(row, 5)
            assert [t for t, _ in token.top] == [model.tokenizer.decode([int(i)]) for i in top.indices]
            assert all(
                math.isclose(v, float(e), abs_tol=1e-5)
                for (_, v), e in zip(token.top, top.values, strict=True)
            )
    score_step = outs[0].tokens[3]
    assert score_step.token == "4"
    assert sorted(t for t, _ in score_step.top) == tiny.DIGITS


def test_constrained_decoding_makes_a_random_model_write_valid_json(random_lm_path: Path) -> None:
    generator = Generator(loaded(random_lm_path))
    schema = json.dumps(
        {
            "type": "object",
            "properties": {"score": {"type": "integer", "minimum": 1, "maximum": 5}},
            "required": ["score"],
            "additionalProperties": False,
        }
    )
    free = [ok(o) for o in generator.run([ask(q, max_new_tokens=24) for q in QUESTIONS])]
    bound = [ok(o) for o in generator.run([ask(q, max_new_tokens=24, json_schema=schema) for q in QUESTIONS])]
    assert not any(g.text.startswith("{") for g in free)  # unconstrained, the random model writes noise
    for g in bound:
        value = json.loads(g.text)
        assert set(value) == {"score"} and value["score"] in range(1, 6)
        assert g.finish_reason == "stop"


def test_a_mixed_batch_constrains_only_the_rows_that_ask(random_lm_path: Path) -> None:
    generator = Generator(loaded(random_lm_path))
    schema = json.dumps(
        {
            "type": "object",
            "properties": {"ok": {"type": "boolean"}},
            "required": ["ok"],
            "additionalProperties": False,
        }
    )
    free_alone = ok(generator.run([ask(QUESTIONS[1], max_new_tokens=24)])[0])
    free, bound = (
        ok(o)
        for o in generator.run(
            [ask(QUESTIONS[1], max_new_tokens=24), ask(QUESTIONS[2], max_new_tokens=24, json_schema=schema)]
        )
    )
    assert free.text == free_alone.text
    assert isinstance(json.loads(bound.text)["ok"], bool)


def test_a_stop_string_ends_the_generation_and_is_cut(judge_path: Path) -> None:
    out = ok(
        Generator(loaded(judge_path)).run(
            [ask("2+2?", max_new_tokens=16, stop=('"score"',), top_logprobs=1)]
        )[0]
    )
    assert out.text == '{"reason": "fine", '
    assert out.finish_reason == "stop"
    assert "".join(t.token for t in out.tokens).startswith(out.text)


def test_the_token_cap_ends_the_generation_with_length(judge_path: Path) -> None:
    out = ok(Generator(loaded(judge_path)).run([ask("2+2?", max_new_tokens=2)])[0])
    assert (out.text, out.finish_reason, out.completion_tokens) == ('{"reason": "fine', "length", 2)


def test_a_request_that_cannot_run_fails_alone(judge_path: Path) -> None:
    generator = Generator(loaded(judge_path, max_input_tokens=40))
    short, long = generator.run([ask("2+2?", max_new_tokens=16), ask("x" * 100, max_new_tokens=16)])
    assert ok(short).text == tiny.VERDICT_TEXT
    assert isinstance(long, InferenceError) and long.kind == "invalid_input"
    assert "exceeds the model's 40" in long.message


def test_a_tokenizer_without_a_chat_template_is_an_input_error_naming_the_fix(judge_path: Path) -> None:
    model = loaded(judge_path)
    model.tokenizer.chat_template = None
    (outcome,) = Generator(model).run([ask("2+2?")])
    assert isinstance(outcome, InferenceError) and outcome.kind == "invalid_input"
    assert "set chat_template" in outcome.message


def test_seeded_sampling_repeats_and_leaves_the_global_rng_alone(random_lm_path: Path) -> None:
    generator = Generator(loaded(random_lm_path))
    request = ask(QUESTIONS[0], temperature=1.0, seed=7, max_new_tokens=12)
    state = torch.get_rng_state()
    first, second = (ok(generator.run([request])[0]).text for _ in range(2))
    assert first == second
    assert torch.equal(torch.get_rng_state(), state)
    assert ask("a").batch_key() != request.batch_key()  # sampled and greedy requests never share a batch


def test_devices_and_dtypes_resolve_on_this_machine() -> None:
    cpu = resolve_device("cpu")
    assert cpu.type == "cpu" and resolve_dtype("auto", cpu) is torch.float32
    assert resolve_dtype("bfloat16", cpu) is torch.bfloat16
    if not torch.cuda.is_available():
        assert resolve_device("auto").type in ("cpu", "mps")
        with pytest.raises(ValueError, match="no CUDA device"):
            resolve_device("cuda:0")
    with pytest.raises(ValueError, match="device must be"):
        TransformersSettings(model="m", device="gpu0")
