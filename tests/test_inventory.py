"""Layer 5: what an entity has, and where it is."""

from __future__ import annotations

import pytest

from tests.mcp_client import ToolFailed, call, session


def test_wardrobe_round_trip(client):
    robe = {
        "name": "comfy robe",
        "category": "wardrobe",
        "subcategory": "loungewear",
        "description": "soft, deep blue, a gift",
        "attributes": {"colour": "blue", "material": "cotton"},
    }
    first = client.post("/v1/inventory", json=robe).json()
    assert first["created"] is True and first["item"]["attributes"]["colour"] == "blue"
    again = client.post("/v1/inventory", json={**robe, "description": "softer now"}).json()
    assert again["created"] is False and again["item"]["id"] == first["item"]["id"]
    client.post("/v1/inventory", json={"name": "silver ring", "category": "symbols"})
    client.post(
        "/v1/inventory", json={"name": "boots", "category": "wardrobe", "subcategory": "shoes"}
    )

    wardrobe = client.get("/v1/inventory", params={"category": "wardrobe"}).json()["items"]
    assert [i["name"] for i in wardrobe] == ["comfy robe", "boots"]
    shoes = client.get("/v1/inventory", params={"category": "wardrobe", "subcategory": "shoes"})
    assert [i["name"] for i in shoes.json()["items"]] == ["boots"]
    categories = client.get("/v1/inventory/categories").json()["categories"]
    assert categories == [
        {"category": "symbols", "count": 1, "subcategories": {}},
        {"category": "wardrobe", "count": 2, "subcategories": {"loungewear": 1, "shoes": 1}},
    ]
    got = client.get("/v1/inventory/item", params={"name": "comfy robe"}).json()
    assert got["description"] == "softer now"
    deleted = client.delete("/v1/inventory/item", params={"name": "comfy robe"})
    assert deleted.status_code == 200
    missing = client.get("/v1/inventory/item", params={"name": "comfy robe"})
    assert missing.status_code == 404 and "comfy robe" in missing.json()["message"]


def test_spaces_enter_and_current(client):
    client.post(
        "/v1/spaces",
        json={"name": "main room", "description": "# The hearth\nA fire.", "channel": "terminal"},
    )
    client.post("/v1/spaces", json={"name": "bedroom", "description": "Quiet."})
    client.post(
        "/v1/inventory", json={"name": "comfy robe", "category": "wardrobe", "space": "bedroom"}
    )
    view = client.post("/v1/spaces/bedroom/enter", json={"channel": "terminal"}).json()
    assert view["space"]["description"] == "Quiet."
    assert [i["name"] for i in view["items"]] == ["comfy robe"]
    assert [s["name"] for s in client.get("/v1/spaces").json()["spaces"]] == [
        "bedroom",
        "main room",
    ]
    updated = client.patch("/v1/spaces/bedroom", json={"description": "Quiet. Moonlight."})
    assert updated.json()["description"] == "Quiet. Moonlight."
    assert updated.json()["channel"] is None


def test_bad_inventory_input(client):
    cases = [
        ("post", "/v1/inventory", {"name": "", "category": "wardrobe"}, "name"),
        ("post", "/v1/inventory", {"name": "x", "category": "Not A Category!"}, "category"),
        (
            "post",
            "/v1/inventory",
            {"name": "x", "category": "wardrobe", "attributes": [1]},
            "attributes",
        ),
        ("post", "/v1/spaces", {"description": "no name"}, "name"),
    ]
    for method, path, body, field in cases:
        response = client.request(method, path, json=body)
        assert response.status_code == 422, response.text
        assert field in [p["field"] for p in response.json()["problems"]]
    assert client.get("/v1/inventory").json()["items"] == []
    assert client.post("/v1/spaces/attic/enter").status_code == 404


def test_an_item_in_a_space_that_does_not_exist_is_a_404_naming_the_space(client):
    """A space that is not there is what 404 says, in a body as in a path (a request the
    OpenAPI description allows, answered about what is stored)."""
    item = {"name": "x", "category": "wardrobe", "space": "nowhere"}
    response = client.post("/v1/inventory", json=item)
    assert response.status_code == 404, response.text
    assert response.json()["error"] == "not_found"
    [problem] = response.json()["problems"]
    assert problem["field"] == "space" and "add_space" in problem["problem"]
    assert client.get("/v1/inventory").json()["items"] == []


def test_a_name_in_two_categories_without_one_is_a_409_naming_the_category(client):
    client.post("/v1/inventory", json={"name": "star", "category": "symbols"})
    client.post("/v1/inventory", json={"name": "star", "category": "wardrobe"})
    for method in ("get", "delete"):
        response = client.request(method, "/v1/inventory/item", params={"name": "star"})
        assert response.status_code == 409, response.text
        [problem] = response.json()["problems"]
        assert problem["field"] == "category" and "symbols, wardrobe" in problem["problem"]
    assert len(client.get("/v1/inventory").json()["items"]) == 2
    one = client.get("/v1/inventory/item", params={"name": "star", "category": "symbols"})
    assert one.status_code == 200 and one.json()["category"] == "symbols"


def test_a_second_space_of_the_same_name_is_a_409_and_changes_nothing(client):
    client.post("/v1/spaces", json={"name": "kitchen", "description": "Bread."})
    duplicate = client.post("/v1/spaces", json={"name": "kitchen", "description": "Soup."})
    assert duplicate.status_code == 409, duplicate.text
    assert duplicate.json()["error"] == "conflict"
    [problem] = duplicate.json()["problems"]
    assert problem["field"] == "name" and "exists" in problem["problem"]
    [kitchen] = client.get("/v1/spaces").json()["spaces"]
    assert kitchen["description"] == "Bread."


@pytest.mark.parametrize("name", ["kitchen/pantry", "/", ".", ".."])
def test_a_space_name_that_cannot_be_a_url_path_segment_is_refused(server, client, name):
    """A space is reached at /v1/spaces/{name}: a name with '/' (or '.', '..', which
    clients fold away) could be added but never updated or entered."""
    added = client.post("/v1/spaces", json={"name": name})
    assert added.status_code == 422, added.text
    [problem] = added.json()["problems"]
    assert problem["field"] == "name", problem
    assert client.get("/v1/spaces").json()["spaces"] == []
    token = client.headers["Authorization"].removeprefix("Bearer ")

    async def script(session_):
        with pytest.raises(ToolFailed) as refused:
            await call(session_, "add_space", name=name)
        return str(refused.value)

    assert "invalid input: name: " in session(f"{server.url}/mcp", token, script)
    assert client.get("/v1/spaces").json()["spaces"] == []


def test_inventory_is_per_entity(make_client):
    a, b = make_client(), make_client()
    a.post("/v1/spaces", json={"name": "bedroom"})
    a.post("/v1/inventory", json={"name": "comfy robe", "category": "wardrobe", "space": "bedroom"})
    assert b.get("/v1/inventory").json()["items"] == []
    assert b.get("/v1/inventory/item", params={"name": "comfy robe"}).status_code == 404
    assert b.delete("/v1/inventory/item", params={"name": "comfy robe"}).status_code == 404
    assert b.get("/v1/spaces").json()["spaces"] == []
    assert b.post("/v1/spaces/bedroom/enter").status_code == 404
    # b cannot put its things into a's space by naming it
    sneaky = b.post("/v1/inventory", json={"name": "x", "category": "c", "space": "bedroom"})
    assert sneaky.status_code == 404
    assert a.get("/v1/inventory/item", params={"name": "comfy robe"}).status_code == 200
