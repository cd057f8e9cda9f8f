"""A new graph on each backend (tests/graphs.py), with no extraction LLM configured.

Its indexes are made before the first query: a new entity's texture search answers ok
(not "no such fulltext schema index", as a new Neo4j answered), and its first recall's
graph layer finds them made (a new Neo4j spent seconds making indexes and compiling the
search inside it; how fast it answers is bench/'s to measure, not a test's). The graph
jobs wait for an LLM, all of them, and every face says so and why: the queue, `pps
queue`, /health, the recall manifest, the graph and queue pages."""

from __future__ import annotations

import pytest

from tests.conftest import AppServer, connect, wait_for
from tests.test_ui import UI

BUDGET_MS = 300  # the graph layer's default budget


@pytest.fixture(scope="module")
def server(tmp_path_factory, graph_target):
    graph_target.new()
    with AppServer(
        tmp_path_factory.mktemp("first-query") / "data",
        **graph_target.settings(),
        llm_provider="none",
        recall_graph_budget_ms=BUDGET_MS,
    ) as app:
        yield app


def test_a_new_entitys_first_recall_finds_the_graph_ready(server):
    """The graph layer is not down and names no missing index: the indexes were made
    before the first query. Whether it also answers within its budget is timing, which
    bench/ measures: a loaded machine may make it `timeout`, and recall answers with the
    other layers, as it does for any layer past its budget."""
    client = connect(server, server.pps("entity", "create", "altair").strip())
    client.post("/v1/anchors", json={"title": "Robe", "content": "The comfy blue robe."})
    answer = client.post("/v1/recall", json={"context": "the comfy robe"}).json()
    graph = answer["manifest"]["graph"]
    assert graph["status"] != "down" and "index" not in (graph["detail"] or ""), graph
    assert "comfy blue robe" in answer["context"]


def test_a_new_entitys_texture_search_answers_ok_and_empty(server):
    client = connect(server, server.pps("entity", "create", "vega").strip())
    found = client.post("/v1/texture/search", json={"query": "where does Vega live"})
    assert found.status_code == 200
    assert found.json() == {"facts": [], "status": "ok"}


def test_graph_jobs_wait_for_an_llm_and_every_face_says_why(server):
    token = server.pps("entity", "create", "deneb").strip()
    client = connect(server, token)
    assert client.post("/v1/texture", json={"content": "Deneb sings in Oslo."}).status_code == 202

    def graph_jobs() -> dict[str, int]:
        return client.get("/v1/texture/stats").json()["jobs"]

    wait_for(lambda: graph_jobs()["waiting"], 10, "a pause")
    # Queued while the queue waits: it waits too, with the same reason (it was pending).
    assert client.post("/v1/texture", json={"content": "Deneb moved to Bergen."}).status_code == 202
    jobs = wait_for(lambda: (j := graph_jobs())["waiting"] + j["pending"] == 2 and j, 10, "a job")
    assert jobs["waiting"] == 2 and jobs["pending"] == 0
    queue = client.get("/v1/queue").json()
    [paused] = queue["paused"]
    assert paused["jobs"] == 2 and "LLM_PROVIDER" in paused["reason"]

    shown = server.pps("queue", "--entity", "deneb")
    assert "  waiting 2  " in shown
    assert "waiting  deneb graph_episode: 2 jobs since" in shown and "LLM_PROVIDER" in shown

    graph = client.get("/health").json()["components"]["graph"]
    assert graph["jobs_waiting"] == 2 and "LLM_PROVIDER" in graph["waiting_for"]

    answer = client.post("/v1/recall", json={"context": "where does Deneb sing"}).json()
    report = answer["manifest"]["graph"]
    assert report["status"] == "waiting" and "LLM_PROVIDER" in report["detail"]

    ui = UI(server, token)
    assert ui.sign_in().status_code == 303
    for page in ("/ui/graph", "/ui/queue"):
        text = ui.get(page).text
        assert 'id="graph-waiting"' in text, page
        assert "Graph extraction waits" in text and "LLM_PROVIDER" in text
        assert "docs/settings.md" in text


def test_indexes_that_cannot_be_made_are_said_in_health(tmp_path, graph_target):
    with AppServer(
        tmp_path / "data",
        **graph_target.settings(),
        llm_provider="none",
        embedding_model="no-such-org/no-such-model",  # the vector index needs its size
    ) as server:
        client = connect(server, server.pps("entity", "create", "rigel").strip())
        graph = wait_for(
            lambda: (g := client.get("/health").json()["components"]["graph"])["status"]
            == "failing" and g, 15, "health to say the graph is failing",
        )  # fmt: skip
        assert "no-such-org/no-such-model" in graph["indexes"]
        found = client.post("/v1/texture/search", json={"query": "where"}).json()
        assert found["facts"] == [] and found["status"].startswith("unavailable")


def test_a_shared_store_beside_its_members_leaves_the_graph_ok(tmp_path, graph_target):
    """A shared store has an index key (`shared:<store>`) and no graph: the graph's
    indexes are made for its members, never for it (Graphiti refuses a ':' in a graph
    id), so /health stays `ok` and the members' graph reads answer."""
    with AppServer(tmp_path / "data", **graph_target.settings(), llm_provider="none") as server:
        client = connect(server, server.pps("entity", "create", "vega").strip())
        server.pps("shared", "create", "notes")
        server.pps("shared", "add", "notes", "vega")
        server.app.state.service.runtime.graph.prepare()  # what the preparer's next tick does
        graph = client.get("/health").json()["components"]["graph"]
        assert graph["status"] == "ok" and "indexes" not in graph, graph
        found = client.post("/v1/texture/search", json={"query": "where"}).json()
        assert found == {"facts": [], "status": "ok"}
