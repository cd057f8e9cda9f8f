"""The OpenAPI description against the real app: schemathesis generates requests from it
(valid ones and invalid ones) and sends them over HTTP to `pps.app.create_app` served by
uvicorn, with an entity's token (the operator's on operator routes) where the case sends
one; every default check must pass. A client reading `/openapi.json` then knows every
status a route answers, every body's shape and what a request may hold, and no request,
however odd, gets a 500. Below, the patterns the description gives are checked against
what the service takes, value by value.

Bounded to stay quick: a fixed seed, derandomized, a few dozen cases per operation.
"""

from __future__ import annotations

import re
from pathlib import Path

import jsonschema_rs
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis.core.parameters import ParameterLocation
from schemathesis.specs.openapi.checks import positive_data_acceptance

from engine.capture import entities
from engine.capture.words import keywords, word_pattern
from engine.kernel import timestamps
from engine.kernel.config import Settings
from engine.kernel.requests import NOT_BLANK, is_blank
from engine.search.fragments import CATEGORY_INPUT, CATEGORY_PATTERN
from engine.search.hybrid import TAG_PATTERN, TIERS_PATTERN, SearchRequest, normalise_tags
from pps.app import create_app
from tests.conftest import AppServer

EXAMPLES = 40

# Operations that refuse, on purpose and with a 422 naming the field, some requests their
# description allows, because no JSON Schema can say what they need. Only the check that
# schema-valid data is accepted is skipped there; every other check runs. Everything else
# the service refuses, the description says (patterns for timestamps, text that must not
# be blank or must hold a word, names, paths, cursors), and what a request may name that
# is not stored is a 404 or a 409, which that check counts as an answer.
REFUSES_VALID = {
    ("POST", "/v1/summaries"),  # start_id after end_id: a relation between two fields
    ("POST", "/v1/search"),  # until before since: the same
    # The hook client's transcript lines each end past the one before; Claude Code's
    # Stop, PreCompact and SessionEnd need them (or a `pps` object): relations again.
    ("POST", "/v1/hooks/claude-code"),
    ("POST", "/v1/hooks/codex"),
    ("POST", "/v1/hooks/letta-code"),
}

# The description the app serves; building the app opens nothing (its lifespan does), so
# the data dir here is never created.
schema = schemathesis.openapi.from_dict(
    create_app(Settings(data_dir=Path("never-created"), graph_backend="none")).openapi()
)


@pytest.fixture(scope="module")
def fuzzed(tmp_path_factory):
    with AppServer(tmp_path_factory.mktemp("pps") / "data") as server:
        server.token = entities.create(server.db, "fuzz")
        server.operator = entities.rotate_operator(server.db)
        yield server


@schema.parametrize()
@settings(
    max_examples=EXAMPLES,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
)
def test_every_answer_is_documented(case, fuzzed):
    token = fuzzed.operator if case.path.startswith("/v1/operator/") else fuzzed.token
    excluded = []
    if (case.method.upper(), case.path) in REFUSES_VALID:
        excluded.append(positive_data_acceptance)
    # The real token for the one the case sends; a case whose headers are the invalid part
    # (the token left out, or not a bearer token) goes as generated, to be refused.
    generated = case.headers or {}
    if "Authorization" in generated and not case.meta.is_negative_at(ParameterLocation.HEADER):
        generated = {"Authorization": f"Bearer {token}"}
    case.call_and_validate(base_url=fuzzed.url, headers=generated, excluded_checks=excluded)


# --- the description's patterns mean what the service does ------------------------------
# A pattern in the description is read by JSON Schema's rules (ECMA-262, as schemathesis's
# validator reads it); the service checks the same text its own way. They must agree on
# every value, or a client (and the run above) meets a refusal the description allows.

_EVERY_CHARACTER = [chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]


def _matches(pattern: str):
    return jsonschema_rs.Draft202012Validator({"pattern": pattern}).is_valid


def test_blank_is_the_same_to_json_schema_and_to_the_service():
    not_blank = _matches(NOT_BLANK)
    assert [c for c in _EVERY_CHARACTER if not_blank(c) == is_blank(c)] == []
    for text in ("", " \n\ufeff", "\u3000x\n", "\n\n", "x\n"):
        assert not_blank(text) != is_blank(text), repr(text)


def test_a_searchable_word_is_the_same_to_json_schema_and_to_the_service():
    """What the description calls text with a word is what `keywords` finds a word in."""
    has_word = _matches(word_pattern())
    assert [c for c in _EVERY_CHARACTER if has_word(c) != bool(keywords(c))] == []
    for text in ("!?", "\u00bf\U0002e36b\x97", " -- x", "\n"):
        assert has_word(text) == bool(keywords(text)), repr(text)
    assert keywords("the") == ["the"]  # a stopword alone is still searched for


@settings(max_examples=500, deadline=None, database=None)
@given(st.from_regex(timestamps.PATTERN, fullmatch=True))
def test_every_timestamp_the_description_allows_is_taken(text):
    assert _matches(timestamps.PATTERN)(text)
    stored = timestamps.normalise(text)
    assert timestamps.FIRST <= stored <= timestamps.LAST and len(stored) == 27


@settings(max_examples=500, deadline=None, database=None)
@given(st.text(alphabet="0123456789-:.TZ+ tx\n", max_size=32))
def test_a_timestamp_is_taken_just_when_the_description_allows_it(text):
    try:
        timestamps.normalise(text)
        taken = True
    except ValueError:
        taken = False
    assert taken == _matches(timestamps.PATTERN)(text)


_TEXT = st.text(
    alphabet=st.sampled_from(list("aAlLsShortfmngdiK\u212a_- ,\t\n\u3000\ufeff\u0130x"))
)


@settings(max_examples=300, deadline=None, database=None)
@given(
    st.one_of(_TEXT, st.lists(st.sampled_from(["all", "Domain", " longform", ""])).map(",".join))
)
def test_tiers_are_taken_just_when_the_description_allows_them(tiers):
    assert _takes(lambda: SearchRequest(query="x", tiers=tiers)) == _matches(TIERS_PATTERN)(tiers)


@settings(max_examples=300, deadline=None, database=None)
@given(st.one_of(_TEXT, st.text(alphabet="ab ,", max_size=70)))
def test_a_tag_is_taken_just_when_the_description_allows_it(tag):
    assert _takes(lambda: normalise_tags([tag])) == _matches(TAG_PATTERN)(tag)


@settings(max_examples=300, deadline=None, database=None)
@given(st.one_of(_TEXT, st.text(alphabet="aZ9_- ", max_size=70)))
def test_a_category_is_taken_just_when_the_description_allows_it(category):
    taken = bool(re.fullmatch(CATEGORY_PATTERN, category.strip().lower()))  # what store() checks
    assert taken == _matches(CATEGORY_INPUT)(category)


def _takes(make) -> bool:
    try:
        make()
    except ValueError:  # pydantic's ValidationError is one
        return False
    return True
