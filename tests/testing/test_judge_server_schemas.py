"""The test judge server's schema checks: it enforces what it accepts, checks what it is sent, refuses modes."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping

import httpx
import pytest

from openjudge.testing._schema_checks import schema_problem
from openjudge.testing.judge_server import JudgeServer, JudgeServerProcess

pytestmark = pytest.mark.anyio

VERDICT = {
    "type": "object",
    "properties": {"reason": {"type": "string"}, "score": {"type": "integer", "enum": [1, 2, 3, 4, 5]}},
    "required": ["reason", "score"],
    "additionalProperties": False,
}


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=5.0) as client:
        yield client


def body(
    text: str, response_format: Mapping[str, object] | None = None, **fields: object
) -> dict[str, object]:
    request: dict[str, object] = {"model": "m", "messages": [{"role": "user", "content": text}], **fields}
    if response_format is not None:
        request["response_format"] = response_format
    return request


def json_schema(schema: Mapping[str, object], *, strict: bool = True) -> dict[str, object]:
    return {"type": "json_schema", "json_schema": {"name": "V", "schema": schema, "strict": strict}}


async def reply(http: httpx.AsyncClient, server: JudgeServer, request: Mapping[str, object]) -> object:
    response = await http.post(f"{server.base_url}/chat/completions", json=request)
    assert response.status_code == 200, response.text
    return json.loads(response.json()["choices"][0]["message"]["content"])


@pytest.mark.parametrize(
    ("asked", "written"), [("9", 5), ("0", 1), ("3.4", 3), ("3.5", 3), ("3.6", 4), ("4", 4)]
)
async def test_the_score_is_the_enum_value_nearest_the_one_asked(
    http: httpx.AsyncClient, asked: str, written: int
) -> None:
    async with JudgeServer() as server:
        got = await reply(http, server, body(f"#oj:score={asked}", json_schema(VERDICT)))
        assert got == {"reason": "The response is acceptable.", "score": written}


async def test_bounds_clamp_the_score_and_other_enums_take_their_middle(http: httpx.AsyncClient) -> None:
    schema = {
        "type": "object",
        "properties": {
            "score": {"type": "number", "minimum": 0, "maximum": 1},
            "points": {"type": "integer", "enum": [1, 2, 3, 4, 5]},
            "label": {"type": "string", "enum": ["pass", "fail"]},
        },
    }
    async with JudgeServer() as server:
        got = await reply(http, server, body("#oj:score=9", {"type": "json_object", "schema": schema}))
        assert got == {"score": 1, "points": 3, "label": "pass"}
        # Without a schema nothing is enforced: the score is written as asked.
        assert await reply(http, server, body("#oj:score=9")) == {"reason": "ok", "score": 9}


@pytest.mark.parametrize(
    ("schema", "problem"),
    [
        (
            {**VERDICT, "additionalProperties": True},
            "#: 'additionalProperties' is required to be supplied and to be false",
        ),
        (
            {**VERDICT, "required": ["reason"]},
            "#: 'required' is required to include every property; missing 'score'",
        ),
        (
            {**VERDICT, "properties": {"score": {"type": "integer", "enum": []}}, "required": ["score"]},
            "#/properties/score: 'enum' must be a non-empty array",
        ),
        (
            {
                **VERDICT,
                "properties": {"score": {"type": "integer", "enum": [1, 2.5]}},
                "required": ["score"],
            },
            "#/properties/score: enum value 2.5 is not of type 'integer'",
        ),
        (
            {
                **VERDICT,
                "properties": {"score": {"type": "number", "minimum": 5, "maximum": 1}},
                "required": ["score"],
            },
            "#/properties/score: 'minimum' 5 is greater than 'maximum' 1",
        ),
    ],
)
async def test_a_schema_that_cannot_be_enforced_gets_a_400(
    http: httpx.AsyncClient, schema: dict[str, object], problem: str
) -> None:
    async with JudgeServer() as server:
        response = await http.post(f"{server.base_url}/chat/completions", json=body("x", json_schema(schema)))
        assert response.status_code == 400
        assert response.json()["error"]["message"] == f"Invalid schema for response_format: {problem}"


def test_strict_rules_apply_to_strict_json_schema_only() -> None:
    loose = {"type": "object", "properties": {"score": {"type": "integer"}}}
    assert schema_problem(loose, strict=True) is not None
    assert schema_problem(loose, strict=False) is None
    nested = {"type": "object", "$defs": {"Step": {"type": "object", "properties": {"k": {"enum": []}}}}}
    assert (
        schema_problem(nested, strict=False) == "#/$defs/Step/properties/k: 'enum' must be a non-empty array"
    )


async def test_a_refused_mode_gets_its_status_and_uses_no_fault_budget(http: httpx.AsyncClient) -> None:
    async with JudgeServer(refuse={"json_schema": 500, "structured_outputs": 400}) as server:
        url = f"{server.base_url}/chat/completions"
        refused = await http.post(url, json=body("x #oj:status=503,times=1", json_schema(VERDICT)))
        assert refused.status_code == 500 and "response_format" in refused.json()["error"]["message"]
        vllm = await http.post(url, json=body("x", structured_outputs={"json": VERDICT}))
        assert vllm.status_code == 400
        assert vllm.json()["error"]["message"] == "structured_outputs is not supported by this server"
        # The 503 a directive asked for still fires once, on the first request the server takes.
        taken = {"type": "json_object", "schema": VERDICT}
        assert (await http.post(url, json=body("x #oj:status=503,times=1", taken))).status_code == 503
        assert (await http.post(url, json=body("x #oj:status=503,times=1", taken))).status_code == 200
        assert server.stats().by_outcome == {"200": 1, "reset": 0, "hang": 0, "500": 1, "400": 1, "503": 1}


@pytest.mark.parametrize(
    ("refuse", "message"),
    [
        ({"json": 500}, "refuse: unknown mode 'json' (modes: json_schema, json_object, structured_outputs)"),
        ({"json_schema": 200}, "refuse: json_schema needs an HTTP error status 400..599, got 200"),
    ],
)
def test_refuse_is_checked(refuse: dict[str, int], message: str) -> None:
    with pytest.raises(ValueError, match=r"^refuse: ") as info:
        JudgeServer(refuse=refuse)
    assert str(info.value) == message


def test_the_process_refuses_what_it_is_told() -> None:
    with JudgeServerProcess(refuse={"json_object": 422}) as server:
        request = body("x", {"type": "json_object", "schema": VERDICT})
        response = httpx.post(f"{server.base_url}/chat/completions", json=request, timeout=5.0)
        assert response.status_code == 422
        assert (
            response.json()["error"]["message"]
            == "response_format type 'json_object' is not supported by this server"
        )
        assert server.stats().by_outcome["422"] == 1
