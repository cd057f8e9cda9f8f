"""The OpenAPI description against the real app: schemathesis generates requests from it
(valid ones and invalid ones) and sends them over HTTP to `pps.app.create_app` served by
uvicorn, with an entity's token (the operator's on operator routes); every default check
must pass. A client reading `/openapi.json` then knows every status a route answers and
every body's shape, and no request, however odd, gets a 500.

Bounded to stay quick: a fixed seed, derandomized, a few dozen cases per operation.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis import GenerationMode
from schemathesis.core.parameters import ParameterLocation
from schemathesis.specs.openapi.checks import allow_header_conformance, positive_data_acceptance

from engine.capture import entities
from engine.store.config import Settings
from pps.app import create_app
from tests.conftest import AppServer

EXAMPLES = 40

# Operations that refuse some values their schema allows, on purpose, with a 422 naming
# the field: a JSON Schema cannot say "a cursor this service gave out", "an event id
# that exists", "a space you added", "a query with a searchable word" or "a timestamp"
# (ISO-8601 or epoch seconds, as text). Only the check that schema-valid data is
# accepted is skipped there; every other check runs.
REFUSES_VALID = {
    ("POST", "/v1/events"),  # the body: an event object or a list (the schema says Any)
    ("GET", "/v1/events"),  # cursor
    ("GET", "/v1/events/search"),  # since/until timestamps; q without a searchable word
    ("GET", "/v1/turns/around"),  # timestamp
    ("POST", "/v1/summaries"),  # start_id/end_id of events that exist
    ("GET", "/v1/summaries/search"),  # query without a searchable word
    ("GET", "/v1/turns/since"),  # timestamp
    ("GET", "/v1/turns/since-summary"),  # cursor
    ("POST", "/v1/inventory"),  # space: one that was added
    ("POST", "/v1/spaces"),  # name: no '/', it is part of the space's URL
    ("PATCH", "/v1/spaces/{name}"),  # channel and description rules
    ("GET", "/v1/texture/timeline"),  # since/until timestamps
    ("POST", "/v1/texture"),  # created_at timestamp
    ("POST", "/v1/texture/triplets"),  # created_at timestamp
    ("POST", "/v1/texture/search"),  # since/until timestamps
    ("POST", "/v1/search"),  # since/until timestamps
    ("POST", "/v1/anchors"),  # a title and content that are not only spaces
    ("POST", "/v1/fragments"),  # text that is not only spaces
    ("POST", "/v1/recall"),  # the moment: "startup", or text with words
    ("GET", "/v1/inventory/item"),  # a name in two categories needs the category
    ("DELETE", "/v1/inventory/item"),  # the same
    ("GET", "/v1/files"),  # a path the file system can hold (name and path length)
    ("POST", "/v1/audit/judgments"),  # log_id: a 64-bit id (the schema's maximum is a float)
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
    if _shadowed(case.path):
        # `Allow` on /v1/texture/search lists DELETE, rightly: DELETE /v1/texture/{uuid}
        # serves that path too (uuid "search"). The check reads only this path's entry.
        excluded.append(allow_header_conformance)
    headers = {"Authorization": f"Bearer {token}"}
    if _headers_made_invalid(case):
        headers = None  # the case's own, invalid Authorization is the point: a 401 is due
    case.call_and_validate(base_url=fuzzed.url, headers=headers, excluded_checks=excluded)


def _headers_made_invalid(case) -> bool:
    """Whether schemathesis made this case's headers invalid on purpose (the security
    scheme's Authorization among them): sending a valid token instead would make a
    request it counts as invalid succeed."""
    header = case.meta.components.get(ParameterLocation.HEADER) if case.meta else None
    return header is not None and header.mode == GenerationMode.NEGATIVE


def _shadowed(path: str) -> bool:
    """Whether another, templated path of the description matches this one too."""
    for other in schema.raw_schema["paths"]:
        if other != path and "{" in other:
            pattern = re.sub(r"\{[^}]+\}", "[^/]+", other)
            if re.fullmatch(pattern, path):
                return True
    return False
