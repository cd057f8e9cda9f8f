"""The daily LLM budget of each entity, which graph extraction and summaries share: what
one piece of work spent (`Usage`), what today's work has spent, and whether it is spent.
Counted in the database, so a restart does not reset it."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from engine.kernel.config import Settings
from engine.store.db import Database


@dataclass
class Usage:
    """LLM calls and tokens spent by one piece of work."""

    calls: int = 0
    tokens: int = 0
    seconds: float = 0.0
    """Time spent waiting for the LLM (what worker overhead is measured without)."""
    failed: int = 0
    """Calls that raised. Graphiti swallows some failures (edge timestamps, summaries)
    and carries on with less; an episode with a failed call is not complete."""
    last_error: str | None = None


BUDGET_SPENT = "daily LLM budget spent"


def usage_today(db: Database, entity: str) -> dict[str, int]:
    row = db.conn.execute(
        "SELECT calls, tokens FROM graph_usage WHERE entity = ? AND day = ?",
        (entity, _today()),
    ).fetchone()
    return {"calls": row["calls"], "tokens": row["tokens"]} if row else {"calls": 0, "tokens": 0}


def budget_spent(db: Database, settings: Settings, entity: str) -> str | None:
    """What of the entity's daily LLM budget (graph extraction and summaries share it) is
    spent, in words, or None while some is left."""
    used = usage_today(db, entity)
    if settings.graph_daily_calls and used["calls"] >= settings.graph_daily_calls:
        return f"{used['calls']} of {settings.graph_daily_calls} calls"
    if settings.graph_daily_tokens and used["tokens"] >= settings.graph_daily_tokens:
        return f"{used['tokens']} of {settings.graph_daily_tokens} tokens"
    return None


def spend(db: Database, entity: str, usage) -> None:
    """Count an LLM exchange's calls and tokens against today's budget."""
    if not usage.calls and not usage.tokens:
        return
    with db.write() as conn:
        conn.execute(
            "INSERT INTO graph_usage (entity, day, calls, tokens) VALUES (?, ?, ?, ?)"
            " ON CONFLICT (entity, day) DO UPDATE SET calls = calls + excluded.calls,"
            " tokens = tokens + excluded.tokens",
            (entity, _today(), usage.calls, usage.tokens),
        )


def _today() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%d")
