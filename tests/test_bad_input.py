"""Bad input gets a 4xx that names the field and the problem, and stores nothing."""

from __future__ import annotations

import json
import random

import httpx
import pytest
from fastapi.routing import iter_route_contexts

from engine.capture import entities
from mcp_bridge import PATHS
from tests.conftest import connect
from tests.mcp_client import ToolFailed, call, session

GOOD = {"channel": "terminal", "content": "hello"}
KIB = 1024

DEEP = 5000
NESTED = b'{"channel": "terminal", "content": "hi", "metadata": ' + b'{"a": ' * DEEP + b"1"
NESTED += b"}" * (DEEP + 1)

CASES = {
    "invalid json": (b'{"channel": "terminal", "content": ', 400, "body", "invalid JSON"),
    "nested too deeply": (NESTED, 400, "body", "nested too deeply"),
    "not an object": (42, 422, "body", "expected an event object"),
    "missing content": ({"channel": "terminal"}, 422, "content", "required"),
    "empty content": ({**GOOD, "content": "  \n"}, 422, "content", "must not be empty"),
    # U+FEFF is blank to JSON Schema (the OpenAPI description's pattern), so to us too.
    "content only blanks": ({**GOOD, "content": "\ufeff \u3000"}, 422, "content", "empty"),
    "content not text": ({**GOOD, "content": {"a": 1}}, 422, "content", "string"),
    "content over cap": ({**GOOD, "content": "x" * (256 * KIB + 1)}, 422, "content", "bytes"),
    "bad timestamp": ({**GOOD, "created_at": "last tuesday"}, 422, "created_at", "unparseable"),
    "milliseconds": ({**GOOD, "created_at": 1767528000000}, 422, "created_at", "out of range"),
    "boolean timestamp": ({**GOOD, "created_at": False}, 422, "created_at", "boolean"),
    # Timestamps as text are the grammar the OpenAPI description gives, nothing looser.
    "exponent": ({**GOOD, "created_at": "1.7e9"}, 422, "created_at", "unparseable"),
    "blank around": ({**GOOD, "created_at": " 2026-01-04"}, 422, "created_at", "unparseable"),
    "offset without colon": (
        {**GOOD, "created_at": "2026-01-04T12:00:00+0530"},
        422,
        "created_at",
        "unparseable",
    ),
    "no such day": ({**GOOD, "created_at": "2026-02-29"}, 422, "created_at", "unparseable"),
    "unknown channel format": ({**GOOD, "channel": "Disc ord!"}, 422, "channel", "channel"),
    "missing channel": ({"content": "hi"}, 422, "channel", "required"),
    "bad uid": ({**GOOD, "event_uid": "has spaces"}, 422, "event_uid", "pattern"),
    "unknown field": ({**GOOD, "colour": "red"}, 422, "colour", "unknown field"),
    "metadata not object": ({**GOOD, "metadata": [1]}, 422, "metadata", "dictionary"),
    "empty batch": ([], 422, "events", "empty"),
    "batch over maximum": ([GOOD] * 1001, 422, "events", "maximum is 1000"),
    "one bad in a batch": ([GOOD, GOOD, {**GOOD, "content": ""}], 422, "events[2].content", ""),
}


def _count(client) -> int:
    return len(client.get("/v1/events", params={"limit": 1000}).json()["events"])


@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_rejected_event_posts_name_the_field_and_store_nothing(client, case):
    body, status, field, words = CASES[case]
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    response = client.post("/v1/events", content=raw, headers={"content-type": "application/json"})
    assert response.status_code == status, response.text
    problems = response.json()["problems"]
    assert any(p["field"] == field and words in p["problem"] for p in problems), problems
    assert _count(client) == 0


def test_every_problem_in_a_batch_is_named(client):
    batch = [GOOD, {"channel": "BAD CHANNEL", "content": ""}, {"content": "x"}]
    problems = client.post("/v1/events", json=batch).json()["problems"]
    fields = {p["field"] for p in problems}
    assert fields == {"events[1].channel", "events[1].content", "events[2].channel"}
    assert _count(client) == 0


@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
@pytest.mark.parametrize("path", ["/v1/events", "/v1/hooks/claude-code", "/mcp"])
def test_body_over_request_limit_is_refused_before_reading(client, path, chunked):
    huge = b'{"channel": "terminal", "content": "' + b"x" * (33 * KIB * KIB) + b'"}'
    # A generator is sent chunked (Transfer-Encoding), with no length to refuse it by.
    body = (huge[i : i + KIB * KIB] for i in range(0, len(huge), KIB * KIB)) if chunked else huge
    headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    response = client.post(path, content=body, headers=headers)
    assert response.status_code == 413, response.text
    assert response.json()["error"] == "too_large"
    assert response.json()["problems"][0]["field"] == "body"
    assert _count(client) == 0


def test_json_nested_too_deeply_over_mcp_is_refused_not_a_server_error(client):
    call = b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": '
    call += b'"store_event", "arguments": {"channel": "terminal", "content": "hi", "metadata": '
    call += b'{"a": ' * DEEP + b"1" + b"}" * (DEEP + 3)
    headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    response = client.post("/mcp", content=call, headers=headers)
    assert 400 <= response.status_code < 500, response.text
    assert response.headers["content-type"].startswith("application/json"), response.text
    assert _count(client) == 0


@pytest.mark.parametrize(
    ("path", "params", "field"),
    [
        ("/v1/events", {"limit": 0}, "limit"),
        ("/v1/events", {"limit": 100000}, "limit"),
        ("/v1/events", {"since": "soon"}, "since"),
        ("/v1/events", {"since": "2026-01-04T12:00:00.123Z "}, "since"),
        ("/v1/events", {"until": "1767528000000"}, "until"),
        ("/v1/events", {"order": "sideways"}, "order"),
        ("/v1/events", {"cursor": "not-a-cursor"}, "cursor"),
        ("/v1/events", {"channel": "NO WAY"}, "channel"),
        ("/v1/events/search", {}, "q"),
        ("/v1/events/search", {"q": "!!!"}, "q"),
        ("/v1/events/search", {"q": "robe", "until": "2026-13-45"}, "until"),
        ("/v1/turns/around", {}, "timestamp"),
        ("/v1/turns/around", {"timestamp": "noon"}, "timestamp"),
        ("/v1/turns/since", {"timestamp": "2026-W01-1"}, "timestamp"),
        ("/v1/turns/around", {"timestamp": "2026-01-01", "count": -1}, "count"),
    ],
)
def test_bad_queries_name_the_parameter(client, path, params, field):
    response = client.get(path, params=params)
    assert response.status_code == 422, response.text
    assert field in [p["field"] for p in response.json()["problems"]]


def test_a_moment_its_offset_takes_past_the_calendar_is_the_first_or_last_instant(client):
    """0001-01-01..9999-12-31 is what UTC timestamps here hold: a moment an offset takes
    past either end (the OpenAPI description allows it) is that end, not a 422."""
    late = {**GOOD, "created_at": "9999-12-31T23:59:59-14:00"}
    assert client.post("/v1/events", json=[GOOD, late]).status_code == 200
    [stored] = client.get("/v1/events", params={"since": late["created_at"]}).json()["events"]
    assert stored["created_at"] == "9999-12-31T23:59:59.999999Z"
    early = client.get("/v1/events", params={"until": "0001-01-01T00:00:00+10:00"})
    assert early.status_code == 200 and early.json()["events"] == []
    since = client.get("/v1/turns/since", params={"timestamp": "0001-01-01T00:00:00+10:00"})
    assert since.status_code == 200 and len(since.json()["turns"]) == 2


def test_a_year_before_1000_keeps_its_four_digits(client):
    """Stored timestamps are fixed width (so comparing the text compares the time): year 45
    is 0045, where the C library's `%Y` wrote 45, and the graph then could not read it."""
    post = client.post("/v1/events", json={**GOOD, "created_at": "0045-01-04T12:00:00+01:00"})
    assert post.status_code == 200, post.text
    [event] = client.get("/v1/events").json()["events"]
    assert event["created_at"] == "0045-01-04T11:00:00.000000Z"
    note = client.post("/v1/texture", json={"content": "Old news.", "created_at": "0045-01-04"})
    assert note.status_code == 202, note.text


@pytest.mark.parametrize("header", [None, "Bearer pps_not-a-real-token", "Basic dXNlcjpwdw==", ""])
def test_missing_or_wrong_token_is_401_and_stores_nothing(server, client, header):
    anonymous = connect(server, None)
    headers = {"Authorization": header} if header is not None else {}
    for method, path in [
        ("post", "/v1/events"),
        ("get", "/v1/events"),
        ("get", "/v1/events/search"),
    ]:
        response = anonymous.request(method, path, json=GOOD, params={"q": "x"}, headers=headers)
        assert response.status_code == 401, response.text
        assert response.json()["problems"][0]["field"] == "Authorization"
        challenge = response.headers["WWW-Authenticate"]
        if header == "Bearer pps_not-a-real-token":  # a token came, and is no one's
            assert challenge == (
                'Bearer error="invalid_token", error_description="unknown or revoked token"'
            )
        else:
            assert challenge == "Bearer"
    assert _count(client) == 0


def _mutations(rng: random.Random):
    values = [None, "", " ", 0, -1, 1.5, 1e308, True, [], {}, "x" * 300, "\x00", "é" * 10, [GOOD]]
    keys = [
        "channel",
        "content",
        "created_at",
        "event_uid",
        "metadata",
        "author",
        "role",
        "session_id",
        "event_type",
        "entity",
        "",
    ]
    for _ in range(300):
        event = dict(GOOD)
        for _ in range(rng.randint(1, 3)):
            event[rng.choice(keys)] = rng.choice(values)
        yield event if rng.random() < 0.7 else [GOOD, event]


def test_random_malformed_events_never_cause_a_500(client):
    statuses = set()
    for body in _mutations(random.Random(2026)):
        response = client.post("/v1/events", json=body)
        assert response.status_code < 500, (body, response.text)
        statuses.add(response.status_code)
        if response.status_code != 200:
            assert response.json()["problems"], response.text
    assert 422 in statuses


# --- numbers and flags as JSON has them (issue 15) ---

INT64_PAST = 2**63  # one past SQLite's largest integer


def _json_kind(schema: dict) -> str | None:
    """The one JSON type a schema (or its anyOf with null) declares, else None."""
    kinds = {option.get("type") for option in schema.get("anyOf", [schema])} - {"null"}
    return kinds.pop() if len(kinds) == 1 else None


def _typed_fields(openapi: dict):
    """(method, path, 'query' or 'body', field, JSON kind) of every route's field."""
    schemas = openapi["components"]["schemas"]
    for path, operations in openapi["paths"].items():
        concrete = path.replace("{", "").replace("}", "")  # /v1/spaces/{name} -> /v1/spaces/name
        for method, operation in operations.items():
            for param in operation.get("parameters", []):
                if param["in"] == "query":
                    yield method, concrete, "query", param["name"], _json_kind(param["schema"])
            body = operation.get("requestBody", {}).get("content", {}).get("application/json")
            schema = body["schema"] if body else {}
            for ref in filter(None, (s.get("$ref") for s in schema.get("anyOf", [schema]))):
                properties = schemas[ref.rsplit("/", 1)[-1]].get("properties", {})
                for name, schema in properties.items():
                    yield method, concrete, "body", name, _json_kind(schema)


def _refusal(response, field: str) -> str | None:
    """Why `response` is not a 422 naming `field` (for a reason other than its absence)."""
    if response.status_code != 422:
        return f"{response.status_code}: {response.text[:200]}"
    problems = response.json()["problems"]
    if not any(p["field"] == field and p["problem"] != "required" for p in problems):
        return f"422 without {field}: {problems}"
    return None


def test_every_number_and_flag_field_takes_only_its_json_kind(server, client):
    """Where a route takes a whole number, `true` is refused (Python would read it as 1)
    and so is one past 64 bits (SQLite's integers); where it takes a number, `true` is
    refused; where it takes true or false, 1 is refused. Each a 422 naming the field
    (the operator's routes asked with the operator's token)."""
    operator = {"Authorization": f"Bearer {entities.rotate_operator(server.db)}"}
    openapi = client.get("/openapi.json").json()
    bad = {"integer": [True, INT64_PAST, -INT64_PAST - 1], "number": [True], "boolean": [1, 0.0]}
    failures, tried = [], 0
    for method, path, where, field, kind in _typed_fields(openapi):
        for value in bad.get(kind, []):
            if where == "query" and kind != "integer":
                continue  # a query string has no JSON kinds ('1' is a fine flag there)
            sent = {"params": {field: str(value)}} if where == "query" else {"json": {field: value}}
            if path.startswith("/v1/operator/"):
                sent["headers"] = operator
            try:
                why = _refusal(client.request(method, path, **sent), field)
            except httpx.TransportError as exc:  # a 500 may leave the connection dead
                why = f"no answer: {exc!r}"
            tried += 1
            if why:
                failures.append(f"{method.upper()} {path} {field}={value!r}: {why}")
    assert tried > 40
    assert not failures, "\n".join(failures)


def test_an_offset_past_64_bits_is_a_422_naming_it(client):
    response = client.get("/v1/turns/since-summary", params={"offset": str(INT64_PAST)})
    assert response.status_code == 422, response.text
    assert response.json()["error"] == "invalid_input"
    [problem] = response.json()["problems"]
    assert problem["field"] == "offset" and "64-bit" in problem["problem"]


def test_every_mcp_tool_takes_only_the_json_kind_its_schema_declares(server, client):
    """The same over MCP, on every profile: the SDK would turn `true` into 1 (and 1 into
    true) before a tool ran. Each refusal is a tool error naming the argument."""
    token = client.headers["Authorization"].removeprefix("Bearer ")
    bad = {"integer": [True, INT64_PAST], "number": [True], "boolean": [1]}

    async def script(session_) -> list[str]:
        failures = []
        for tool in (await session_.list_tools()).tools:
            for argument, schema in tool.input_schema.get("properties", {}).items():
                for value in bad.get(_json_kind(schema), []):
                    try:
                        answer = await call(session_, tool.name, **{argument: value})
                    except ToolFailed as refused:
                        text = str(refused)
                        if "invalid input" in text and f"{argument}: " in text:
                            continue
                        answer = text
                    failures.append(f"{tool.name}({argument}={value!r}): {answer}"[:300])
        return failures

    failures = [f for path in PATHS.values() for f in session(server.url + path, token, script)]
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize(
    ("method", "path"),
    [("get", "/v1/nope"), ("patch", "/v1/spaces/kitchen/pantry"), ("get", "/nope"), ("get", "/v1")],
)
def test_an_unknown_route_is_a_404_in_the_one_error_shape(client, method, path):
    response = client.request(method, path)
    assert response.status_code == 404, response.text
    body = response.json()
    assert body["error"] == "not_found"
    assert [p["field"] for p in body["problems"]] == ["path"]
    assert path in body["message"]


@pytest.mark.parametrize(
    ("method", "path", "allowed"),
    [
        ("delete", "/v1/spaces", "GET, POST"),
        ("put", "/v1/events", "GET, POST"),
        ("post", "/v1/anchors/x.md", "GET, PUT, DELETE"),
        ("put", "/v1/inventory/item", "GET, DELETE"),
    ],
)
def test_a_method_a_route_does_not_take_is_a_405_listing_every_one_it_does(
    client, method, path, allowed
):
    response = client.request(method, path)
    assert response.status_code == 405, response.text
    assert response.headers["Allow"] == allowed
    body = response.json()
    assert body["error"] == "method_not_allowed"
    [problem] = body["problems"]
    assert problem["field"] == "method" and allowed in problem["problem"]


def test_a_fixed_path_lists_its_own_methods_not_its_neighbours(server, client):
    """OPTIONS (a method no route takes) on every fixed path lists the methods served at
    that path itself: /v1/anchors/search is its route's (POST), not also those of
    /v1/anchors/{name} (GET, PUT, DELETE), whose pattern the path fits too."""
    served: dict[str, set[str]] = {}
    for route in iter_route_contexts(server.app.router.routes):
        if "{" not in route.path:
            served.setdefault(route.path, set()).update(route.methods or ())
    wrong = {}
    for path, methods in served.items():
        response = client.options(path)
        assert response.status_code == 405, (path, response.text)
        listed = set(response.headers["Allow"].split(", "))
        if listed != methods:
            wrong[path] = (sorted(listed), sorted(methods))
    assert not wrong, wrong
    assert len(served) >= 80  # every fixed path of REST, the web face and MCP
    # A path only a pattern fits still lists that route's methods.
    assert client.options("/v1/anchors/x.md").headers["Allow"] == "GET, PUT, DELETE"
