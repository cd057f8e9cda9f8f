"""MCP tools take the request models REST takes, written once (mcp_bridge/caller.py): a
tool's arguments are its model's fields, with their types, defaults, bounds and
descriptions; where a seed names or defaults an argument otherwise, the seed's way is
kept; and a problem only the model sees is named as the tool names the argument."""

from __future__ import annotations

import asyncio
import json

import pytest
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field, field_validator

from engine.kernel.requests import Request
from engine.recall.shapes import RecallRequest
from engine.search.hybrid import SearchRequest
from mcp_bridge import openclaw, pps
from mcp_bridge.caller import READ, Profile


def listed(profile: Profile) -> dict[str, dict]:
    async def tools():
        return {tool.name: tool.input_schema for tool in await profile.build().list_tools()}

    return asyncio.run(tools())


def test_ambient_recall_takes_the_fields_of_rests_recall_request():
    tool = listed(pps.profile)["ambient_recall"]
    model = RecallRequest.model_json_schema()
    # The seed's tool takes no max_chars; every other field is the model's, as it is.
    assert set(tool["properties"]) == set(model["properties"]) - {"max_chars"}
    for name in ("context", "limit_per_layer", "max_tokens", "trace", "session_id", "channel"):
        assert tool["properties"][name] == model["properties"][name], name
    assert tool["required"] == ["context"]
    assert tool["properties"]["limit_per_layer"]["maximum"] == 50
    # answering: the model's list, and null for none (the seed's tool took null).
    answering, of_model = tool["properties"]["answering"], model["properties"]["answering"]
    assert answering["default"] is None
    assert answering["description"] == of_model["description"]
    listing = {key: of_model[key] for key in ("type", "items", "maxItems")}
    assert answering["anyOf"] == [listing, {"type": "null"}]


def test_openclaws_memory_search_keeps_the_seeds_names_and_defaults():
    tool = listed(openclaw.profile)["memory_search"]["properties"]
    model = SearchRequest.model_json_schema()["properties"]
    assert set(tool) == {"query", "maxResults", "minScore"}
    assert tool["maxResults"]["default"] == 6
    for key in ("maximum", "minimum", "description", "type"):
        assert tool["maxResults"][key] == model["limit"][key], key
    assert tool["minScore"]["default"] is None
    assert tool["minScore"]["description"] == model["min_score"]["description"]
    assert {"type": "number", "minimum": 0.0, "maximum": 1.0} in tool["minScore"]["anyOf"]


# --- the mechanism, on a model of its own ----------------------------------------------


class Ask(Request):
    words: str = Field(min_length=1, description="What to find.")
    most: int = Field(10, ge=1, le=50, description="How many.")
    tags: list[str] = Field(default_factory=list)
    mode: str = "wide"

    @field_validator("most")
    @classmethod
    def _even(cls, value: int) -> int:
        if value % 2:
            raise ValueError("must be even")
        return value


toy = Profile("toy", "A profile for this test.")


@toy.tool(
    READ, leave=("mode",), renamed={"most": "maxHits"}, defaults={"tags": None, "mode": "narrow"}
)
def find(ask: Ask, where: str = "home") -> dict:
    """Return what it was asked, for the test to read."""
    return {"ask": ask.model_dump(), "where": where}


def calling(**arguments) -> dict:
    async def call():
        result = await toy.build().call_tool("find", arguments)
        return json.loads(result.content[0].text)

    return asyncio.run(call())


def test_a_tool_publishes_its_models_fields_under_the_seeds_names():
    schema = listed(toy)["find"]
    assert set(schema["properties"]) == {"words", "maxHits", "tags", "where"}
    assert schema["required"] == ["words"]
    most = schema["properties"]["maxHits"]
    assert (most["default"], most["minimum"], most["maximum"]) == (10, 1, 50)
    assert most["description"] == "How many."
    assert schema["properties"]["words"]["description"] == "What to find."


def test_a_tool_builds_its_model_from_the_arguments():
    assert calling(words="tea") == {
        "ask": {"words": "tea", "most": 10, "tags": [], "mode": "narrow"},
        "where": "home",
    }
    got = calling(words="tea", maxHits=4, tags=None, where="away")
    assert got["ask"] == {"words": "tea", "most": 4, "tags": [], "mode": "narrow"}
    assert got["where"] == "away"
    assert calling(words="tea", tags=["a"])["ask"]["tags"] == ["a"]


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({"words": "tea", "maxHits": 51}, "maxHits: must be less than or equal to 50"),
        ({"words": "tea", "maxHits": 3}, "maxHits: must be even"),  # the model's own check
        ({"words": ""}, "words: "),
        ({"words": "tea", "most": 4}, "most: unknown argument"),
        ({"words": "tea", "mode": "wide"}, "mode: unknown argument"),
    ],
)
def test_bad_arguments_are_named_as_the_tool_names_them(arguments, expected):
    with pytest.raises(ToolError) as refused:
        calling(**arguments)
    message = str(refused.value)
    assert message.startswith("Error executing tool find: invalid input: "), message
    assert expected in message
