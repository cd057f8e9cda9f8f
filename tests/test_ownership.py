"""Each table has one owner: a table is named in SQL only by the layer that owns it; the
others call that layer's functions. Backup, which copies whole tables, is the one declared
exception. No SQL in the faces.

SQL is read from the source: every string constant that reads like SQL, checked for the
table names after FROM, JOIN, INTO, UPDATE, TABLE and EXISTS.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MIGRATIONS = ROOT / "migrations"
OWNERS = {
    "engine.store": {"jobs", "queue_pauses", "schema_migrations"},
    "engine.llm": {"graph_usage", "llm_dialects"},
    "engine.capture": {
        "entities",
        "operator_tokens",
        "events",
        "events_fts",
        "clients",
        "client_calls",
        "hook_sessions",
    },
    "engine.search": {
        "search_chunks",
        "search_files",
        "search_fts",
        "search_generations",
        "search_vectors",
    },
    "engine.graph": {
        "episodes",
        "episode_events",
        "graph_pending",
        "graph_replays",
        "graph_vectors",
    },
    "engine.crystal": {"summaries", "summaries_fts"},
    "engine.inventory": {"inventory_items", "spaces", "current_spaces"},
    "engine.contracts": {"shared_stores", "shared_members", "shared_memories"},
    "engine.recall": {"recall_log", "audit_judgments", "recall_used", "recall_held"},
    "engine.backup": {"backups"},
    "engine.forgetting": {"forgotten"},
}
EVERY_TABLE = "engine.backup"  # it copies whole tables
SQL = re.compile(r"\b(select|insert|update|delete|create|drop|alter|replace)\b", re.I)


def _tables_in_migrations() -> set[str]:
    found = set()
    for path in MIGRATIONS.glob("*.sql"):
        found |= set(
            re.findall(
                r"create\s+(?:virtual\s+)?table\s+(?:if\s+not\s+exists\s+)?(\w+)",
                path.read_text(),
                re.I,
            )
        )
    return found


def _named(text: str, tables: set[str]) -> set[str]:
    return {
        t
        for t in tables
        if re.search(rf"\b(from|join|into|update|table|exists)\s+{t}\b", text, re.I)
    }


def _owner(module: str) -> str | None:
    for prefix in OWNERS:
        if module == prefix or module.startswith(prefix + "."):
            return prefix
    return None


def _text(node: ast.AST) -> str | None:
    """A string constant's text; an f-string's, its parts joined around what it fills in."""
    if isinstance(node, ast.Constant):
        return node.value if isinstance(node.value, str) else None
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values)
    return None


def _sql_names() -> dict[str, set[str]]:
    tables = _tables_in_migrations()
    out = {}
    for package in ("engine", "pps", "mcp_bridge", "ingest"):
        for path in (ROOT / package).rglob("*.py"):
            module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            names = set()
            for node in ast.walk(ast.parse(path.read_text())):
                text = _text(node)
                if isinstance(text, str) and SQL.search(text):
                    names |= _named(text, tables)
            if names:
                out[module] = names
    return out


def test_every_table_has_an_owner():
    owned = set().union(*OWNERS.values())
    assert _tables_in_migrations() - owned == set()


def test_each_table_is_named_only_by_its_owner():
    wrong = []
    for module, names in sorted(_sql_names().items()):
        owner = _owner(module)
        if owner == EVERY_TABLE:
            continue
        mine = OWNERS.get(owner, set())
        for table in sorted(names - mine):
            wrong.append(f"{module} names {table} (owned by {_owner_of(table)})")
    assert not wrong, "\n".join(wrong)


def _owner_of(table: str) -> str:
    return next(owner for owner, tables in OWNERS.items() if table in tables)


def test_the_checker_sees_a_table_named_in_sql():
    """A test that cannot fail is a defect: the forms SQL names a table in are all seen."""
    tables = {"events", "jobs", "entities"}
    assert _named("SELECT id FROM events WHERE entity = ?", tables) == {"events"}
    assert _named("UPDATE jobs SET state = 'queued'", tables) == {"jobs"}
    assert _named("INSERT OR IGNORE INTO entities (name) VALUES (?)", tables) == {"entities"}
    assert _named("SELECT 1 FROM x JOIN events e ON e.id = x.id", tables) == {"events"}
    assert _named("the events of an entity", tables) == set()
    source = 'where = "x"\nsql = f"SELECT {where} FROM events"\n'
    found = {_text(node) for node in ast.walk(ast.parse(source))}
    assert "SELECT {} FROM events" in found
