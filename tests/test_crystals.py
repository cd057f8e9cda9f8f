"""Crystals: chained snapshots as files; the newest 8 current, the rest archived, none lost."""

from __future__ import annotations

import pytest

from engine.crystal import crystals
from engine.crystal.crystals import CrystalIn, CurrentQuery
from engine.kernel.errors import InputError, NotFound


def test_chain_numbering_and_rolling_window(tmp_path):
    for n in range(1, 11):
        crystal = crystals.crystallize(tmp_path, CrystalIn(content=f"field state {n}"))
        assert crystal.number == n
    latest = (tmp_path / "crystals" / "crystal_010.md").read_text()
    assert latest.startswith("# Crystal #10 (")
    assert "[Chain: #7 → #8 → #9 → #10]" in latest and "field state 10" in latest
    current = sorted(p.name for p in (tmp_path / "crystals").glob("crystal_*.md"))
    archived = sorted(p.name for p in (tmp_path / "crystals" / "archive").glob("*.md"))
    assert current == [f"crystal_{n:03d}.md" for n in range(3, 11)]
    assert archived == ["crystal_001.md", "crystal_002.md"]
    assert [c.number for c in crystals.current(tmp_path, CurrentQuery(count=4)).crystals] == [
        7,
        8,
        9,
        10,
    ]
    assert [(c.number, c.archived) for c in crystals.list_all(tmp_path).crystals][:3] == [
        (1, True),
        (2, True),
        (3, False),
    ]
    assert (tmp_path / "crystals" / "crystal_010.md").stat().st_mode & 0o777 == 0o600


def test_delete_takes_back_only_the_latest_and_restores_the_window(tmp_path):
    for n in range(1, 10):
        crystals.crystallize(tmp_path, CrystalIn(content=f"state {n}"))
    removed = crystals.delete_latest(tmp_path)
    assert removed.number == 9 and "state 9" in removed.content
    assert [c.number for c in crystals.current(tmp_path, CurrentQuery(count=8)).crystals] == list(
        range(1, 9)
    )
    assert crystals.crystallize(tmp_path, CrystalIn(content="again")).number == 9


def test_bad_input_and_empty(tmp_path):
    with pytest.raises(InputError):
        crystals.crystallize(tmp_path, CrystalIn(content="   "))
    with pytest.raises(NotFound):
        crystals.delete_latest(tmp_path)
    assert crystals.current(tmp_path, CurrentQuery()).crystals == []


def test_crystals_over_rest_are_per_entity(make_client, server):
    a, b = make_client(), make_client()
    made = a.post("/v1/crystals", json={"content": "Scene: the hearth."}).json()
    assert made["number"] == 1 and made["path"] == "crystals/crystal_001.md"
    assert (server.data_dir / "entities" / a.entity / made["path"]).stat().st_mode & 0o777 == 0o600
    assert [c["number"] for c in a.get("/v1/crystals").json()["crystals"]] == [1]
    assert b.get("/v1/crystals").json()["crystals"] == []
    assert b.delete("/v1/crystals/latest").status_code == 404
    assert a.delete("/v1/crystals/latest").json()["number"] == 1
    bad = a.post("/v1/crystals", json={"content": ""})
    assert bad.status_code == 422 and bad.json()["problems"][0]["field"] == "content"
