"""Conformance cases: OpenAI's own documented grader examples and rules, with the reward OpenAI states.

Each case cites where OpenAI says it (``source``) and the words that decide it (``rule``):
the graders guide (platform.openai.com/docs/guides/graders), the API reference of
``POST /fine_tuning/alpha/graders/run`` and ``openai-python``'s ``types/graders``. A case
runs like OpenAI's graders run API: ``model_sample`` is the response, ``item`` the item,
and a model grader's judge replies ``judge_reply``. What it expects:

* ``reward``: the reward OpenAI gives; ``reward_between``: the bounds the guide states;
* ``refused``: OpenAI refuses the grader (a substring of openjudge's message);
* ``differs``: openjudge differs on purpose (``why``, listed in docs/openai-graders.md);
  ``expect_error`` is the ``GraderError`` kind it gives instead.
"""

from __future__ import annotations

from typing import TypedDict

from pydantic import JsonValue

__all__ = ["CASES", "Case"]

GUIDE = "graders guide"
RUN_API = "API reference: POST /fine_tuning/alpha/graders/run"
TYPES = "openai-python types/graders"


class Case(TypedDict, total=False):
    id: str
    source: str
    rule: str
    grader: dict[str, JsonValue]
    model_sample: str
    item: dict[str, JsonValue]
    tool_calls: list[JsonValue]
    judge_reply: str
    reward: float
    reward_between: tuple[float, float]
    refused: str
    differs: str
    expect_error: str
    prompt_contains: str


def _check(operation: str, reference: str = "{{ item.reference_answer }}") -> dict[str, JsonValue]:
    return {
        "type": "string_check",
        "name": "check",
        "input": "{{ sample.output_text }}",
        "reference": reference,
        "operation": operation,
    }


def _python(source: str) -> dict[str, JsonValue]:
    return {"type": "python", "name": "py", "source": source}


def _score(reply_range: list[JsonValue] | None = None) -> dict[str, JsonValue]:
    grader: dict[str, JsonValue] = {
        "type": "score_model",
        "name": "my_score_model",
        "input": [
            {
                "role": "system",
                "content": "You are an expert grader. If the reference and model answer are exact matches, output "
                "a score of 1. If they are somewhat similar in meaning, output a score in 0.5. Otherwise, give a "
                "score of 0.",
            },
            {
                "role": "user",
                "content": "Reference: {{ item.reference_answer }}. Model answer: {{ sample.output_text }}",
            },
        ],
        "pass_threshold": 0.5,
        "model": "o4-mini-2025-04-16",
        "range": [0, 1] if reply_range is None else reply_range,
        "sampling_params": {"max_completions_tokens": 32768, "top_p": 1, "reasoning_effort": "medium"},
    }
    return grader


_LABEL: dict[str, JsonValue] = {
    "type": "label_model",
    "name": "my_label_model",
    "input": [
        {"role": "system", "content": "You are an expert grader."},
        {
            "role": "user",
            "content": "Classify this: {{ sample.output_text }} as either good or bad, where closer to 1 is good.",
        },
    ],
    "passing_labels": ["good"],
    "labels": ["good", "bad"],
    "model": "o3-mini-2024-01-31",
    "sampling_params": {"max_tokens": 32768, "top_p": 1, "seed": 42, "reasoning_effort": "medium"},
}

# The guide's tool-call multigrader (its JSON has trailing commas; transcribed as data).
_TOOLS: dict[str, JsonValue] = {
    "type": "multi",
    "graders": {
        "function_name": {
            "name": "function_name",
            "type": "string_check",
            "input": "get_acceptors",
            "reference": "{{sample.output_tools[0].function.name}}",
            "operation": "eq",
        },
        "arguments": {
            "name": "arguments",
            "type": "string_check",
            "input": '{"smiles": "{{item.smiles}}"}',
            "reference": "{{sample.output_tools[0].function.arguments}}",
            "operation": "eq",
        },
    },
    "calculate_output": "0.5 * function_name + 0.5 * arguments",
}

# The guide's multigrader: a fuzzy name and an exact email, averaged.
_NAME_EMAIL: dict[str, JsonValue] = {
    "type": "multi",
    "graders": {
        "name": {
            "name": "name_grader",
            "type": "text_similarity",
            "input": "{{sample.output_json.name}}",
            "reference": "{{item.name}}",
            "evaluation_metric": "fuzzy_match",
            "pass_threshold": 0.9,
        },
        "email": {
            "name": "email_grader",
            "type": "string_check",
            "input": "{{sample.output_json.email}}",
            "reference": "{{item.email}}",
            "operation": "eq",
        },
    },
    "calculate_output": "(name + email) / 2",
}


def _tool_call(name: str, arguments: str) -> JsonValue:
    return {"id": "call_1", "type": "function", "function": {"name": name, "arguments": arguments}}


def _formula(expression: str) -> dict[str, JsonValue]:
    """Sub-graders ``one`` (always 1) and ``zero`` (always 0) under ``expression``."""
    return {
        "type": "multi",
        "graders": {
            "one": {"type": "string_check", "name": "one", "input": "a", "reference": "a", "operation": "eq"},
            "zero": {
                "type": "string_check",
                "name": "zero",
                "input": "a",
                "reference": "b",
                "operation": "eq",
            },
        },
        "calculate_output": expression,
    }


_EQ = "eq: Returns 1 if the input matches the reference (case-sensitive), 0 otherwise"
_LIKE = "like: Returns 1 if the input contains the reference (case-sensitive), 0 otherwise"
_ILIKE = "ilike: Returns 1 if the input contains the reference (not case-sensitive), 0 otherwise"
_TRUNCATED = "The output of the grader will be truncated to the given range, and default to 0 for all non-numeric outputs."
_INVALID = (
    "Any other result (exception, invalid float value, etc.) will be marked as invalid and return a 0 grade."
)
_OPERATORS = "the following features are supported: + - * / ^ ; min max abs floor ceil exp sqrt log"
_SOURCE = """from rapidfuzz import fuzz, utils

def grade(sample, item) -> float:
    output_text = sample["output_text"]
    reference_answer = item["reference_answer"]
    return fuzz.WRatio(output_text, reference_answer, processor=utils.default_process) / 100.0
"""

CASES: list[Case] = [
    # string_check
    {
        "id": "run-api-string-check",
        "source": RUN_API,
        "rule": "the run example's response: reward 0",
        "grader": {
            "input": "input",
            "name": "name",
            "operation": "eq",
            "reference": "reference",
            "type": "string_check",
        },
        "model_sample": "model_sample",
        "reward": 0.0,
    },
    {
        "id": "eq-match",
        "source": GUIDE,
        "rule": _EQ,
        "grader": _check("eq"),
        "model_sample": "Paris",
        "item": {"reference_answer": "Paris"},
        "reward": 1.0,
    },
    {
        "id": "eq-is-case-sensitive",
        "source": GUIDE,
        "rule": _EQ,
        "grader": _check("eq"),
        "model_sample": "paris",
        "item": {"reference_answer": "Paris"},
        "reward": 0.0,
    },
    {
        "id": "eq-does-not-strip",
        "source": GUIDE,
        "rule": _EQ,
        "grader": _check("eq"),
        "model_sample": "Paris ",
        "item": {"reference_answer": "Paris"},
        "reward": 0.0,
    },
    {
        "id": "ne-different",
        "source": TYPES,
        "rule": "operation: eq, ne, like, ilike",
        "grader": _check("ne"),
        "model_sample": "Lyon",
        "item": {"reference_answer": "Paris"},
        "reward": 1.0,
    },
    {
        "id": "ne-same",
        "source": TYPES,
        "rule": "operation: eq, ne, like, ilike",
        "grader": _check("ne"),
        "model_sample": "Paris",
        "item": {"reference_answer": "Paris"},
        "reward": 0.0,
    },
    {
        "id": "like-contains",
        "source": GUIDE,
        "rule": _LIKE,
        "grader": _check("like"),
        "model_sample": "The capital is Paris.",
        "item": {"reference_answer": "Paris"},
        "reward": 1.0,
    },
    {
        "id": "like-is-case-sensitive",
        "source": GUIDE,
        "rule": _LIKE,
        "grader": _check("like"),
        "model_sample": "The capital is PARIS.",
        "item": {"reference_answer": "Paris"},
        "reward": 0.0,
    },
    {
        "id": "ilike-any-case",
        "source": GUIDE,
        "rule": _ILIKE,
        "grader": _check("ilike"),
        "model_sample": "The capital is PARIS.",
        "item": {"reference_answer": "Paris"},
        "reward": 1.0,
    },
    {
        "id": "unknown-operation",
        "source": TYPES,
        "rule": "operation: Literal['eq', 'ne', 'like', 'ilike']",
        "grader": _check("startswith"),
        "model_sample": "x",
        "refused": "Input should be 'eq', 'ne', 'like' or 'ilike'",
    },
    # templates and the sample namespace
    {
        "id": "output-json-when-valid-json",
        "source": RUN_API,
        "rule": "The output_json variable will be populated if the model sample is a valid JSON string.",
        "grader": {**_check("eq"), "input": "{{ sample.output_json.answer }}"},
        "model_sample": '{"answer": "Paris"}',
        "item": {"reference_answer": "Paris"},
        "reward": 1.0,
    },
    {
        "id": "nested-json-path",
        "source": GUIDE,
        "rule": "All nested variables can be accessed with JSON path like syntax.",
        "grader": _check("eq", "{{ item.a.b[1].c }}"),
        "model_sample": "x",
        "item": {"a": {"b": [0, {"c": "x"}]}},
        "reward": 1.0,
    },
    {
        "id": "only-item-and-sample",
        "source": GUIDE,
        "rule": "The only supported namespaces are item and sample.",
        "grader": _check("eq", "{{ data.reference }}"),
        "model_sample": "x",
        "refused": "a template reference starts with 'item.' or 'sample.'",
    },
    # the guide's tool-call multigrader
    {
        "id": "tools-both-right",
        "source": GUIDE,
        "rule": "calculate_output: 0.5 * function_name + 0.5 * arguments",
        "grader": _TOOLS,
        "model_sample": "",
        "item": {"smiles": "CCO"},
        "tool_calls": [_tool_call("get_acceptors", '{"smiles": "CCO"}')],
        "reward": 1.0,
    },
    {
        "id": "tools-right-name-only",
        "source": GUIDE,
        "rule": "The arguments grader is prone to under-rewarding the model if the function arguments are subtly incorrect",
        "grader": _TOOLS,
        "model_sample": "",
        "item": {"smiles": "CCO"},
        "tool_calls": [_tool_call("get_acceptors", '{"smiles":"CCO"}')],
        "reward": 0.5,
    },
    {
        "id": "tools-wrong-name",
        "source": GUIDE,
        "rule": "calculate_output: 0.5 * function_name + 0.5 * arguments",
        "grader": _TOOLS,
        "model_sample": "",
        "item": {"smiles": "CCO"},
        "tool_calls": [_tool_call("get_donors", '{"smiles": "CCO"}')],
        "reward": 0.5,
    },
    # the guide's name/email multigrader
    {
        "id": "name-email-right-email",
        "source": GUIDE,
        "rule": "samples that get the email right will score between 0.5-1.0",
        "grader": _NAME_EMAIL,
        "model_sample": '{"name": "Jon Doe", "email": "john.doe@gmail.com"}',
        "item": {"name": "John Doe", "email": "john.doe@gmail.com"},
        "reward_between": (0.5, 1.0),
    },
    {
        "id": "name-email-wrong-email",
        "source": GUIDE,
        "rule": "Samples that get the email wrong will score between 0-0.5",
        "grader": _NAME_EMAIL,
        "model_sample": '{"name": "John Doe", "email": "jdoe@gmail.com"}',
        "item": {"name": "John Doe", "email": "john.doe@gmail.com"},
        "reward_between": (0.0, 0.5),
    },
    {
        "id": "name-email-all-right",
        "source": GUIDE,
        "rule": "(name + email) / 2",
        "grader": _NAME_EMAIL,
        "model_sample": '{"name": "John Doe", "email": "john.doe@gmail.com"}',
        "item": {"name": "John Doe", "email": "john.doe@gmail.com"},
        "reward": 1.0,
    },
    # calculate_output
    {
        "id": "formula-power",
        "source": GUIDE,
        "rule": _OPERATORS,
        "grader": _formula("(one + one) ^ 2 / 4"),
        "model_sample": "",
        "reward": 1.0,
    },
    {
        "id": "formula-min-max",
        "source": GUIDE,
        "rule": _OPERATORS,
        "grader": _formula("min(one, zero) + 0.5 * max(one, zero)"),
        "model_sample": "",
        "reward": 0.5,
    },
    {
        "id": "formula-abs-floor-ceil",
        "source": GUIDE,
        "rule": _OPERATORS,
        "grader": _formula("abs(zero - one) * floor(1.7) / ceil(0.2)"),
        "model_sample": "",
        "reward": 1.0,
    },
    {
        "id": "formula-exp-sqrt-log",
        "source": GUIDE,
        "rule": _OPERATORS,
        "grader": _formula("sqrt(one) * log(exp(one)) - zero"),
        "model_sample": "",
        "reward": 1.0,
    },
    {
        "id": "formula-unknown-function",
        "source": GUIDE,
        "rule": _OPERATORS,
        "grader": _formula("round(one)"),
        "model_sample": "",
        "refused": "formula_parse_error",
    },
    {
        "id": "no-nested-multi",
        "source": GUIDE,
        "rule": "You cannot create a multigrader with a nested multigrader inside.",
        "grader": {"type": "multi", "graders": {"inner": _formula("one")}, "calculate_output": "inner"},
        "model_sample": "",
        "refused": "a multi grader cannot hold another",
    },
    # text_similarity
    {
        "id": "fuzzy-identical",
        "source": GUIDE,
        "rule": "fuzzy_match: Fuzzy string match ... using rapidfuzz",
        "grader": {
            "type": "text_similarity",
            "name": "t",
            "input": "{{ sample.output_text }}",
            "reference": "{{ item.reference_answer }}",
            "evaluation_metric": "fuzzy_match",
        },
        "model_sample": "fuzzy wuzzy was a bear",
        "item": {"reference_answer": "fuzzy wuzzy was a bear"},
        "reward": 1.0,
    },
    {
        "id": "rouge-l-identical",
        "source": GUIDE,
        "rule": "rouge-*: Computes the ROUGE score between input and reference",
        "grader": {
            "type": "text_similarity",
            "name": "t",
            "input": "{{ sample.output_text }}",
            "reference": "{{ item.reference_answer }}",
            "evaluation_metric": "rouge_l",
        },
        "model_sample": "the cat sat on the mat",
        "item": {"reference_answer": "the cat sat on the mat"},
        "reward": 1.0,
    },
    {
        "id": "unknown-metric",
        "source": TYPES,
        "rule": "evaluation_metric: one of the eleven names",
        "grader": {
            "type": "text_similarity",
            "name": "t",
            "input": "a",
            "reference": "b",
            "evaluation_metric": "rouge",
        },
        "model_sample": "",
        "refused": "evaluation_metric",
    },
    # python
    {
        "id": "python-guide-example",
        "source": GUIDE,
        "rule": "the guide's rapidfuzz grade(); WRatio / 100",
        "grader": _python(_SOURCE),
        "model_sample": "fuzzy wuzzy was a bear",
        "item": {"reference_answer": "fuzzy wuzzy had no hair"},
        "reward": -1.0,
    },  # -1: computed with rapidfuzz
    {
        "id": "python-exception-is-0",
        "source": GUIDE,
        "rule": _INVALID,
        "grader": _python("def grade(sample, item):\n    raise ValueError('no')\n"),
        "model_sample": "x",
        "reward": 0.0,
    },
    {
        "id": "python-non-float-is-0",
        "source": GUIDE,
        "rule": _INVALID,
        "grader": _python("def grade(sample, item):\n    return 'high'\n"),
        "model_sample": "x",
        "reward": 0.0,
    },
    {
        "id": "python-nan-is-0",
        "source": GUIDE,
        "rule": _INVALID,
        "grader": _python("def grade(sample, item):\n    return float('nan')\n"),
        "model_sample": "x",
        "reward": 0.0,
    },
    {
        "id": "python-two-arguments",
        "source": GUIDE,
        "rule": "The python source code must contain a grade function that takes in exactly two arguments",
        "grader": _python("def grade(sample):\n    return 1.0\n"),
        "model_sample": "x",
        "refused": "taking (sample, item)",
    },
    {
        "id": "python-under-256kb",
        "source": GUIDE,
        "rule": "Your uploaded code must be less than 256kB",
        "grader": _python("x = 1\n" * 50_000 + "def grade(sample, item):\n    return 1.0\n"),
        "model_sample": "x",
        "refused": "larger than 256 KiB",
    },
    {
        "id": "python-no-range",
        "source": TYPES,
        "rule": "PythonGrader has no range: grade()'s float is the reward",
        "grader": _python("def grade(sample, item):\n    return 7.5\n"),
        "model_sample": "x",
        "reward": 7.5,
        "differs": "a value outside python_score_range ([0, 1] unless set) is a config error, not a reward",
        "expect_error": "internal",
    },
    # score_model
    {
        "id": "run-api-score-model",
        "source": RUN_API,
        "rule": "the run example's response: reward 1.0",
        "grader": {
            "type": "score_model",
            "name": "Example score model grader",
            "input": [
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "input_text",
                            "text": "Score how close the reference answer is to the model answer on a 0-1 scale. Return only "
                            "the score.\n\nReference answer: {{item.reference_answer}}\n\nModel answer: "
                            "{{sample.output_text}}",
                        }
                    ],
                }
            ],
            "model": "gpt-5-mini",
            "sampling_params": {"temperature": 1, "top_p": 1, "seed": 42},
        },
        "model_sample": "fuzzy wuzzy was a bear",
        "item": {"reference_answer": "fuzzy wuzzy was a bear"},
        "judge_reply": "1.0",
        "reward": 1.0,
        "prompt_contains": "Reference answer: fuzzy wuzzy was a bear\n\nModel answer: fuzzy wuzzy was a bear",
    },
    {
        "id": "run-api-score-model-image",
        "source": RUN_API,
        "rule": "input: text, output text, input image, and input audio content blocks",
        "grader": {
            "type": "score_model",
            "name": "img",
            "model": "gpt-5-mini",
            "input": [
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "input_text",
                            "text": "Does {{sample.output_text}} describe the image? Score 0-1.",
                        },
                        {
                            "type": "input_image",
                            "image_url": "https://example.com/cat.png",
                            "file_id": None,
                            "detail": "auto",
                        },
                    ],
                }
            ],
        },
        "model_sample": "a cat",
        "judge_reply": '{"steps": [], "result": 1}',
        "reward": 1.0,
    },
    {
        "id": "guide-score-model-run",
        "source": GUIDE,
        "rule": "the guide's run payload: item reference_answer 1.0, model_sample '0.9'",
        "grader": _score(),
        "model_sample": "0.9",
        "item": {"reference_answer": 1.0},
        "judge_reply": '{"steps": [], "result": 0.5}',
        "reward": 0.5,
        "prompt_contains": "Reference: 1.0. Model answer: 0.9",
    },
    {
        "id": "score-truncated-high",
        "source": GUIDE,
        "rule": _TRUNCATED,
        "grader": _score(),
        "model_sample": "x",
        "item": {"reference_answer": "y"},
        "judge_reply": '{"steps": [], "result": 1.7}',
        "reward": 1.0,
    },
    {
        "id": "score-truncated-low",
        "source": GUIDE,
        "rule": _TRUNCATED,
        "grader": _score(),
        "model_sample": "x",
        "item": {"reference_answer": "y"},
        "judge_reply": '{"steps": [], "result": -3}',
        "reward": 0.0,
    },
    {
        "id": "score-non-numeric",
        "source": GUIDE,
        "rule": _TRUNCATED,
        "grader": _score([-1, 1]),
        "model_sample": "x",
        "item": {"reference_answer": "y"},
        "judge_reply": '{"steps": [], "result": "somewhat"}',
        "reward": 0.0,
    },
    {
        "id": "score-no-json",
        "source": GUIDE,
        "rule": _TRUNCATED,
        "grader": _score(),
        "model_sample": "x",
        "item": {"reference_answer": "y"},
        "judge_reply": "I would rather not say.",
        "reward": 0.0,
    },
    {
        "id": "score-negative-range",
        "source": GUIDE,
        "rule": "return a value of -1.0 in the `result` field if the inputs do not satisfy condition X",
        "grader": _score([-1, 1]),
        "model_sample": "x",
        "item": {"reference_answer": "y"},
        "judge_reply": '{"steps": [], "result": -1.0}',
        "reward": -1.0,
    },
    # label_model
    {
        "id": "label-passing",
        "source": GUIDE,
        "rule": "return a 1 if the model output is within the label set and 0 otherwise",
        "grader": _LABEL,
        "model_sample": "0.9",
        "item": {},
        "judge_reply": '{"steps": [], "result": "good"}',
        "reward": 1.0,
    },
    {
        "id": "label-failing",
        "source": GUIDE,
        "rule": "return a 1 if the model output is within the label set and 0 otherwise",
        "grader": _LABEL,
        "model_sample": "0.1",
        "item": {},
        "judge_reply": '{"steps": [], "result": "bad"}',
        "reward": 0.0,
    },
    {
        "id": "passing-labels-among-labels",
        "source": GUIDE,
        "rule": "passing_labels: a subset of labels",
        "grader": {**_LABEL, "passing_labels": ["great"]},
        "model_sample": "x",
        "refused": "are not among labels",
    },
]
