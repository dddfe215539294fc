"""Read (action, observation) pairs out of OpenAI-format agent trajectories.

On well-formed input this reproduces OpenJudge 0.2.4's ``extract_action_observation_pairs``
(``graders/agent/utils.py``), so scores built on it match OpenJudge exactly:

* a message may be wrapped as ``{"message": {...}}`` and a tool call as ``{"tool_call": {...}}``;
* each assistant message with ``tool_calls`` registers its calls; a call with an ``id`` is
  answered by the ``tool``/``function`` message carrying that ``tool_call_id``; calls without
  an id are answered first-in, first-out by tool messages without an id;
* pairs are listed in the order their observations appear; a call registered again under the
  same id replaces the earlier one.

Where OpenJudge raises or crashes, the result here is defined:

* an observation whose ``tool_call_id`` matches no pending call, or an id-less observation
  when no id-less call is pending, is an *orphan*: it is skipped (it has no action to pair
  with) and counted in :attr:`ActionObservations.orphan_observation_count`;
* calls that never get an observation are dropped, as in OpenJudge (so scores do not move),
  and counted in :attr:`ActionObservations.unanswered_call_count`;
* observation content given as a list of parts is read as its text parts joined by newlines
  (a newline, not ``""``, so words from adjacent parts are not glued into one token);
* :class:`~openjudge.models.schema.oai.message.ChatMessage` objects are read as
  ``model_dump(exclude_none=True)``.

Anything the OpenAI format does not allow where the structure depends on it (a message that
is not a mapping, ``tool_calls`` that is not a list of mappings, a non-string id, non-text
content) raises :class:`~openjudge.graders.base_grader.InvalidInputError` naming the field,
which the grader boundary reports as ``GraderError(kind="invalid_input")``.

Similarity is OpenJudge's whitespace-token Jaccard: lower-case, split on whitespace,
punctuation kept (``"paris,"`` and ``"paris"`` differ), 0.0 when either side has no tokens.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from json.decoder import JSONDecoder
from json.scanner import make_scanner
from typing import TypeAlias, cast

from openjudge.models.schema.oai.message import ChatMessage
from openjudge.results import InvalidInputError

__all__ = [
    "ActionObservations",
    "Message",
    "action_signature",
    "arguments_text",
    "extract_action_observation_pairs",
    "extract_tool_calls",
    "jaccard",
    "text_similarity",
    "token_set",
]

Message: TypeAlias = Mapping[str, object] | ChatMessage
"""One trajectory message: an OpenAI-format dict or a :class:`ChatMessage`."""

# The scanner json.loads uses internally; calling it directly skips two regex matches.
# (typeshed wants a ``make_scanner`` as context; any object with the decoder's attributes works.)
_scan_once: Callable[[str, int], tuple[object, int]] = make_scanner(cast("make_scanner", JSONDecoder()))


@dataclass(slots=True)
class ActionObservations:
    """The paired steps of one trajectory.

    Attributes:
        actions: Tool calls (unwrapped from ``{"tool_call": ...}``), in observation order.
        observations: The text each call got back; ``observations[i]`` answers ``actions[i]``.
        unanswered_call_count: Calls that never got an observation (not in ``actions``).
        orphan_observation_count: Tool messages that matched no pending call (skipped).
    """

    actions: list[Mapping[str, object]]
    observations: list[str]
    unanswered_call_count: int
    orphan_observation_count: int


def _mapping_at(raw: object, where: str) -> Mapping[str, object]:
    if isinstance(raw, Mapping):
        return raw
    if isinstance(raw, ChatMessage):
        return raw.model_dump(exclude_none=True)
    raise InvalidInputError(
        f"{where}: expected an OpenAI-format message (a mapping or ChatMessage), got {type(raw).__name__}"
    )


def _message_at(raw: object, where: str) -> Mapping[str, object]:
    message = _mapping_at(raw, where)
    if "message" in message:  # OpenJudge unwraps one level: ``msg.get("message", msg)``
        return _mapping_at(message["message"], f"{where}.message")
    return message


def _as_list(messages: object, field: str = "messages") -> Sequence[object]:
    if isinstance(messages, list | tuple):
        return messages
    if isinstance(messages, Sequence) and not isinstance(messages, str | bytes | bytearray):
        return messages
    raise InvalidInputError(
        f"{field}: expected a list of OpenAI-format messages (mappings or ChatMessage), "
        f"got {type(messages).__name__}"
    )


def _tool_calls_of(message: Mapping[str, object], where: str) -> Sequence[object]:
    tool_calls = message.get("tool_calls")
    if not tool_calls:
        return ()
    if isinstance(tool_calls, list | tuple):
        return tool_calls
    raise InvalidInputError(
        f"{where}.tool_calls: expected a list of tool calls, got {type(tool_calls).__name__}"
    )


def _tool_call_at(call: object, where: str) -> Mapping[str, object]:
    if isinstance(call, Mapping) and "tool_call" in call:
        call = call["tool_call"]  # OpenJudge unwraps one level: ``tc.get("tool_call", tc)``
    if isinstance(call, Mapping):
        return call
    raise InvalidInputError(f"{where}: expected a tool call mapping, got {type(call).__name__}")


def _id_of(value: object, where: str) -> str | None:
    # OpenJudge tests ids for truthiness, so "" and None both mean "no id".
    if not value:
        return None
    if isinstance(value, str):
        return value
    raise InvalidInputError(f"{where}: expected a string id, got {type(value).__name__}")


def _content_text(content: object, where: str) -> str:
    if isinstance(content, str):
        return content
    if not content:
        return ""  # OpenJudge: ``content or ""``
    if isinstance(content, list | tuple):
        texts: list[str] = []
        for k, part in enumerate(content):
            if isinstance(part, str):
                texts.append(part)
            elif isinstance(part, Mapping):
                text = part.get("text")
                if part.get("type") == "text" and isinstance(text, str):
                    texts.append(text)
            else:
                raise InvalidInputError(
                    f"{where}.content[{k}]: expected a content part, got {type(part).__name__}"
                )
        return "\n".join(texts)
    raise InvalidInputError(
        f"{where}.content: expected a string or a list of parts, got {type(content).__name__}"
    )


def extract_action_observation_pairs(messages: object) -> ActionObservations:
    """Pair each tool call with the tool message that answers it (see the module docstring).

    Args:
        messages: The trajectory: a list of OpenAI-format message dicts or ChatMessage objects.

    Raises:
        InvalidInputError: ``messages`` or a message in it is not shaped as the format requires.
    """
    items = messages if type(messages) is list else _as_list(messages)
    actions: list[Mapping[str, object]] = []
    observations: list[str] = []
    pending: dict[str, Mapping[str, object]] = {}
    pending_no_id: deque[Mapping[str, object]] | None = None
    orphans = replaced = 0
    # Each check below has an inline fast path for plain, well-formed dicts and strings;
    # anything else goes through the helpers, which validate and name the failing field.
    # Gate: python bench/graders.py --only agent (4.7 µs per agent rule-grader call).
    for index, raw in enumerate(items):
        if type(raw) is dict and "message" not in raw:
            message: Mapping[str, object] = raw
        else:
            message = _message_at(raw, f"messages[{index}]")
        role = message.get("role")
        if role == "assistant":
            tool_calls = message.get("tool_calls")
            if not tool_calls:
                continue
            if type(tool_calls) is not list:
                tool_calls = _tool_calls_of(message, f"messages[{index}]")
            for k, raw_call in enumerate(tool_calls):
                if type(raw_call) is dict and "tool_call" not in raw_call:
                    call: Mapping[str, object] = raw_call
                else:
                    call = _tool_call_at(raw_call, f"messages[{index}].tool_calls[{k}]")
                call_id = call.get("id")
                if not (call_id and type(call_id) is str):
                    call_id = _id_of(call_id, f"messages[{index}].tool_calls[{k}].id")
                if call_id is None:
                    if pending_no_id is None:
                        pending_no_id = deque()
                    pending_no_id.append(call)
                else:
                    if call_id in pending:
                        replaced += 1
                    pending[call_id] = call
        elif role == "tool" or role == "function":  # not ``in {...}``: role may be unhashable
            call_id = message.get("tool_call_id")
            if not (call_id and type(call_id) is str):
                call_id = _id_of(call_id, f"messages[{index}].tool_call_id")
            if call_id is not None:
                action = pending.pop(call_id, None)
            else:
                action = pending_no_id.popleft() if pending_no_id else None
            if action is None:
                orphans += 1
                continue
            content = message.get("content")
            actions.append(action)
            observations.append(
                content if type(content) is str else _content_text(content, f"messages[{index}]")
            )
    unanswered = len(pending) + replaced + (len(pending_no_id) if pending_no_id else 0)
    return ActionObservations(actions, observations, unanswered, orphans)


def extract_tool_calls(messages: object) -> list[Mapping[str, object]]:
    """Every tool call the assistant made, in order, answered or not.

    Raises:
        InvalidInputError: ``messages`` or a message in it is not shaped as the format requires.
    """
    calls: list[Mapping[str, object]] = []
    for index, raw in enumerate(_as_list(messages)):
        message = _message_at(raw, f"messages[{index}]")
        if message.get("role") == "assistant":
            for k, call in enumerate(_tool_calls_of(message, f"messages[{index}]")):
                calls.append(_tool_call_at(call, f"messages[{index}].tool_calls[{k}]"))
    return calls


def _json_object(text: str) -> dict[str, object] | None:
    """The JSON object ``text`` holds, or None if it holds something else or is not JSON.

    Same result as ``json.loads`` followed by a dict check: a document that spans all of
    ``text`` is taken from the scanner directly; anything else (leading or trailing
    whitespace, trailing data, errors) goes through ``json.loads``.
    """
    try:
        value, end = _scan_once(text, 0)
        if end != len(text):
            value = json.loads(text)
    except (StopIteration, ValueError, RecursionError):
        try:
            value = json.loads(text)
        except (ValueError, RecursionError):  # not JSON, or too deep to read
            return None
    return value if type(value) is dict else None


def _function_of(call: Mapping[str, object]) -> Mapping[str, object]:
    function = call.get("function")
    if function is None:
        return {}
    if isinstance(function, Mapping):
        return function
    raise InvalidInputError(f"tool call 'function': expected a mapping, got {type(function).__name__}")


def _name_of(function: Mapping[str, object]) -> str:
    name = function.get("name")
    if name is None:
        return ""
    if isinstance(name, str):
        return name
    raise InvalidInputError(f"tool call 'function.name': expected a string, got {type(name).__name__}")


def arguments_text(raw: object) -> str:
    """The arguments as JSON text: strings as given; parsed values serialised back to JSON.

    Reading a dict (or any parsed JSON value) as the text it would serialise to means
    ``{"q": "x"}`` and ``'{"q": "x"}'`` give the same signature.

    Raises:
        InvalidInputError: ``raw`` cannot be serialised to JSON.
    """
    if isinstance(raw, str):
        return raw
    if raw is None:
        return ""
    try:
        return json.dumps(raw)
    except (TypeError, ValueError, RecursionError) as exc:
        raise InvalidInputError(f"tool call 'function.arguments': not JSON-serialisable ({exc})") from None


def action_signature(call: Mapping[str, object]) -> str:
    """OpenJudge's action signature: ``"name: k1: v1, k2: v2"`` with keys sorted.

    Values are rendered with Python ``str()`` (``True``, ``None``, ``['a']``); ``{}`` gives
    ``"name: "``. Arguments that do not parse to a JSON object give ``name + ": " + raw``,
    or just ``name`` when ``raw`` is empty.

    Raises:
        InvalidInputError: ``function``, its ``name`` or its ``arguments`` have a type the
            format does not allow.
    """
    function = call.get("function")
    if type(function) is not dict:
        function = _function_of(call)
    name = function.get("name", "")
    if type(name) is not str:
        name = _name_of(function)
    raw = function.get("arguments")
    text = raw if type(raw) is str else arguments_text(raw)
    try:  # inlined _json_object: this runs once per action on every call
        args, end = _scan_once(text, 0)
        if end != len(text):
            args = _json_object(text)
    except (StopIteration, ValueError, RecursionError):
        args = _json_object(text)
    if type(args) is dict:
        if len(args) == 1:
            for key, value in args.items():
                return f"{name}: {key}: {value}"
        return name + ": " + ", ".join([f"{k}: {v}" for k, v in sorted(args.items())])
    return name + ": " + text if text else name


def token_set(text: str) -> frozenset[str]:
    """The lower-cased whitespace tokens of ``text`` (punctuation kept)."""
    return frozenset(text.lower().split())


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    """``|a ∩ b| / |a ∪ b|``; 0.0 when either set is empty (OpenJudge's convention)."""
    if not a or not b:
        return 0.0
    common = len(a & b)
    # |a ∪ b| = |a| + |b| - |a ∩ b| in integers, so this is exactly len(common) / len(union).
    return common / (len(a) + len(b) - common)


def text_similarity(text1: str, text2: str) -> float:
    """OpenJudge's ``calculate_text_similarity``: whitespace-token Jaccard of two texts."""
    return jaccard(token_set(text1), token_set(text2))
