"""The `pps` command. Each command parses its options, builds Settings, and calls
one engine service. `--data-dir` and `--port` (or PPS_DATA_DIR / PPS_PORT) apply to
every command that uses them."""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path
from typing import Annotated

import typer

from engine import entities, queue
from engine.config import Settings
from engine.db import Database, ensure_private_file
from engine.errors import Conflict, InputError, NotFound

app = typer.Typer(
    help="pps — Pattern Persistence Service: one memory for every channel of an AI entity.",
    no_args_is_help=True,
    add_completion=False,
)
entity_app = typer.Typer(help="Create entities and manage their tokens.", no_args_is_help=True)
app.add_typer(entity_app, name="entity")
queue_app = typer.Typer(
    help="The durable job queue: counts by state, dead jobs with their errors, pauses.",
    invoke_without_command=True,
)
app.add_typer(queue_app, name="queue")
replay_app = typer.Typer(help="Rebuild a derived layer from its source.", no_args_is_help=True)
app.add_typer(replay_app, name="replay")

DataDir = Annotated[
    Path | None,
    typer.Option("--data-dir", help="Where data lives [env: PPS_DATA_DIR, default: ./data]."),
]
Port = Annotated[
    int | None, typer.Option("--port", help="Server port [env: PPS_PORT, default: 8000].")
]
EntityOpt = Annotated[str | None, typer.Option("--entity", help="Only this entity.")]
Url = Annotated[
    str | None,
    typer.Option("--url", help="The service [env: PPS_URL, default: http://127.0.0.1:<port>]."),
]
TokenFile = Annotated[
    Path | None, typer.Option("--token-file", help="Also write the token to this file (0600).")
]


def settings_for(**overrides) -> Settings:
    """Settings from the environment and .env, with the given command-line values on top."""
    os.umask(0o077)
    return Settings(**{k: v for k, v in overrides.items() if v is not None})


def fail(message: str) -> None:
    typer.echo(f"pps: {message}", err=True)
    raise typer.Exit(1)


@app.command()
def serve(
    data_dir: DataDir = None,
    port: Port = None,
    host: Annotated[
        str | None,
        typer.Option(help="Address to bind [env: PPS_HOST, default: 127.0.0.1]."),
    ] = None,
    allow_remote: Annotated[
        bool,
        typer.Option(
            "--allow-remote", help="Allow a non-loopback --host (put TLS and a proxy in front)."
        ),
    ] = False,
) -> None:
    """Run the HTTP service (REST under /v1, OpenAPI at /docs)."""
    import uvicorn

    from engine.app import create_app

    settings = settings_for(
        data_dir=data_dir, port=port, host=host, allow_remote=allow_remote or None
    )
    if not settings.binds_loopback and not settings.allow_remote:
        fail(
            f"refusing to listen on {settings.host}: it is not a loopback address. "
            "pps has no TLS of its own; put a TLS proxy in front and pass --allow-remote."
        )
    uvicorn.run(
        create_app(settings),
        host=settings.host,
        port=settings.port,
        log_level="info",
        access_log=False,
        timeout_graceful_shutdown=5,
    )


@entity_app.command("create")
def entity_create(name: str, data_dir: DataDir = None, token_file: TokenFile = None) -> None:
    """Create an entity; print its token (the only line on stdout). Keep it secret."""
    _issue_token(entities.create, name, data_dir, token_file)


@entity_app.command("rotate")
def entity_rotate(name: str, data_dir: DataDir = None, token_file: TokenFile = None) -> None:
    """Give an entity a new token; the old one stops working at once."""
    _issue_token(entities.rotate, name, data_dir, token_file)


@entity_app.command("list")
def entity_list(data_dir: DataDir = None) -> None:
    """List entities (names and dates; tokens are never shown again)."""
    db = Database.open(settings_for(data_dir=data_dir))
    for entity in entities.list_all(db):
        rotated = f"  rotated {entity.rotated_at}" if entity.rotated_at else ""
        typer.echo(f"{entity.name}  created {entity.created_at}{rotated}")


@queue_app.callback()
def queue_show(ctx: typer.Context, entity: EntityOpt = None, data_dir: DataDir = None) -> None:
    """Show jobs by state, the oldest unfinished job's age, pauses and dead jobs."""
    if ctx.invoked_subcommand is not None:
        return
    state = queue.status(Database.open(settings_for(data_dir=data_dir)), entity)
    typer.echo("jobs  " + "  ".join(f"{name} {n}" for name, n in state.counts.items()))
    age = state.oldest_pending_age_s
    typer.echo(f"oldest unfinished job: {'none' if age is None else f'{age:.1f} s old'}")
    for p in state.paused:
        typer.echo(f"paused  {p.entity} {p.kind} since {p.since}: {p.reason}")
    for job in state.dead:
        typer.echo(
            f"dead  #{job.id} {job.entity} {job.kind} {job.key} after {job.attempts} attempts:"
            f" {job.last_error}"
        )


@queue_app.command("retry")
def queue_retry(
    dead: Annotated[bool, typer.Option("--dead", help="Dead jobs too (attempts reset).")] = False,
    entity: EntityOpt = None,
    data_dir: DataDir = None,
) -> None:
    """Put retrying and waiting jobs (and dead ones, with --dead) back to pending now."""
    n = queue.retry(Database.open(settings_for(data_dir=data_dir)), entity, dead=dead)
    typer.echo(f"{n} jobs put back")


@replay_app.command("graph")
def replay_graph(
    entity: EntityOpt = None,
    fresh: Annotated[
        bool, typer.Option("--fresh", help="Empty the graph first (no server may be running).")
    ] = False,
    data_dir: DataDir = None,
) -> None:
    """Rebuild the graph from the event log (layer 1); resumable, with a progress bar."""
    from rich.progress import Progress

    from engine import texture

    settings = settings_for(data_dir=data_dir)
    if settings.graph_backend == "none":
        fail("GRAPH_BACKEND=none: there is no graph to replay into")
    db = Database.open(settings)
    names = [entity] if entity else [e.name for e in entities.list_all(db)]
    if entity and entity not in {e.name for e in entities.list_all(db)}:
        fail(f"no entity named {entity!r}")
    with Progress(transient=False) as bar:
        task = bar.add_task("replaying episodes into the graph", total=None)
        try:
            outcome = texture.rebuild(
                settings,
                db,
                names,
                fresh=fresh,
                progress=lambda done, total: bar.update(task, completed=done, total=total),
            )
        except Conflict as exc:
            fail(str(exc))
    where = "here" if outcome.ran_here else "by the running server"
    typer.echo(f"{outcome.done} of {outcome.total} episodes replayed {where}, {outcome.dead} dead")
    if outcome.waiting:
        fail(f"the replay waits: {outcome.waiting}")
    if outcome.dead:
        fail("some episodes are dead: see `pps queue`, then `pps queue retry --dead`")


def _issue_token(service, name: str, data_dir: Path | None, token_file: Path | None) -> None:
    db = Database.open(settings_for(data_dir=data_dir))
    try:
        token = service(db, name)
    except (InputError, Conflict, NotFound) as exc:
        fail(str(exc))
    if token_file is not None:
        ensure_private_file(token_file).write_text(token + "\n")
    sys.stdout.write(token + "\n")


# --- doctor: what works, and why not ---


@app.command()
def doctor(data_dir: DataDir = None, port: Port = None) -> None:
    """Check each part (database, embedding model, LLM, graph) and say why one does not
    work. Reads the running service's /health too, when it answers."""
    import httpx

    from engine import embeddings
    from engine.graph import llm
    from ingest.client import service_url

    settings = settings_for(data_dir=data_dir, port=port)
    checks: dict[str, dict] = {}
    try:
        version = Database.open(settings).schema_version()
        mode = settings.data_dir.stat().st_mode & 0o777
        checks["database"] = {"status": "ok", "schema_version": version, "data_dir_mode": oct(mode)}
    except Exception as exc:  # what is wrong is the answer
        checks["database"] = {"status": "down", "error": f"{type(exc).__name__}: {exc}"}
    with contextlib.suppress(embeddings.Unavailable):  # status() says why
        embeddings.get(settings)
    checks["embeddings"] = embeddings.status(settings)
    checks["llm"] = llm.probe(settings)
    try:
        served = httpx.get(f"{service_url(settings)}/health", timeout=3).json()
        checks["service"] = {"status": served["status"], "url": service_url(settings)}
        checks |= {f"service {k}": v for k, v in served["components"].items()}
    except (httpx.HTTPError, ValueError, KeyError):
        checks["service"] = {"status": "not running", "url": service_url(settings)}
    bad = False
    for name, check in checks.items():
        status = check.get("status")
        detail = ", ".join(f"{k}={v}" for k, v in check.items() if k != "status")
        typer.echo(f"{name:22} {status:12} {detail}")
        bad |= status in ("down", "refused", "failing")
    if bad:
        raise typer.Exit(1)


# --- mcp: the stdio bridge for clients that spawn a command ---


@app.command("mcp")
def mcp_stdio(
    profile: Annotated[
        str, typer.Option("--profile", help="pps, wordwalker, openclaw or shared-memory.")
    ] = "pps",
    url: Url = None,
    token_file: Annotated[
        Path | None, typer.Option("--token-file", help="The entity token [env: PPS_TOKEN_FILE].")
    ] = None,
    port: Port = None,
) -> None:
    """Serve an MCP profile on stdio, forwarding every call to the running service with the
    entity's token (from PPS_TOKEN or PPS_TOKEN_FILE)."""
    import anyio

    from ingest.client import ClientConfigError, read_token, service_url
    from mcp_bridge import stdio
    from mcp_bridge.mount import PROFILES

    if profile not in PROFILES:
        fail(f"unknown profile {profile!r}: use one of {', '.join(PROFILES)}")
    settings = settings_for(port=port, url=url, token_file=token_file)
    try:
        token = read_token(settings)
    except ClientConfigError as exc:
        fail(str(exc))
    path, _ = PROFILES[profile]
    anyio.run(stdio.serve, service_url(settings) + path, token, f"pps-{profile}")


# --- ingest: Claude Code hooks, the client's spool, importers (calls into ingest/) ---

hooks_app = typer.Typer(
    help="Put the Claude Code hooks in a settings file, or take them out.", no_args_is_help=True
)
app.add_typer(hooks_app, name="hooks")
ingest_app = typer.Typer(
    help="The client's spool: events taken on but not yet acknowledged.", no_args_is_help=True
)
app.add_typer(ingest_app, name="ingest")
import_app = typer.Typer(
    help="Import history: Claude Code transcripts, a Discord daemon's database, markdown "
    "journals, an OpenClaw workspace. Re-runs store nothing twice.",
    no_args_is_help=True,
)
app.add_typer(import_app, name="import")

AttachName = Annotated[str | None, typer.Option("--name", help="Its name (default: the folder's).")]


@app.command("hook")
def hook(
    event: Annotated[
        str, typer.Argument(help="SessionStart, UserPromptSubmit, Stop, PreCompact, SessionEnd.")
    ],
) -> None:
    """Run a Claude Code hook: its JSON on stdin, context to inject on stdout. Always exits 0
    within PPS_HOOK_BUDGET_S; problems go to hooks.log in PPS_CLIENT_DIR."""
    from ingest import claude_code

    try:
        settings = settings_for()
    except Exception:  # a broken setting must not break the session either
        return
    claude_code.main(event, settings)


@hooks_app.command("install")
def hooks_install(
    target: Annotated[str, typer.Argument(help="Where: claude-code.")] = "claude-code",
    project: Annotated[
        Path | None,
        typer.Option(
            "--project",
            file_okay=False,
            help="Into DIR/.claude/settings.local.json [default: the current folder].",
        ),
    ] = None,
    user: Annotated[
        bool, typer.Option("--user", help="Into ~/.claude/settings.json (every project).")
    ] = False,
    token_file: Annotated[
        Path | None,
        typer.Option("--token-file", help="The token file the hooks read [env: PPS_TOKEN_FILE]."),
    ] = None,
    url: Url = None,
    port: Port = None,
) -> None:
    """Merge our hooks into a Claude Code settings file; nobody else's hooks are touched."""
    from ingest import claude_settings
    from ingest.client import service_url

    if target != "claude-code":
        fail(f"unknown target {target!r}: only claude-code")
    if project is not None and user:
        fail("choose --project DIR or --user, not both")
    settings = settings_for(port=port, url=url, token_file=token_file)
    env = {"PPS_URL": service_url(settings)}
    if settings.token_file is not None:
        env["PPS_TOKEN_FILE"] = str(settings.token_file.expanduser().resolve())
    if os.environ.get("PPS_CLIENT_DIR"):
        env["PPS_CLIENT_DIR"] = str(settings.client_dir.expanduser().resolve())
    path = claude_settings.settings_path(project=project, user=user)
    try:
        changes = claude_settings.install(path, env, settings.hook_budget_s)
    except claude_settings.SettingsError as exc:
        fail(str(exc))
    typer.echo(
        f"{path}: added {', '.join(changes.added) or 'none'};"
        f" updated {', '.join(changes.updated) or 'none'}"
    )
    if "PPS_TOKEN_FILE" not in env:
        typer.echo(
            "warning: no token file given; the hooks will need PPS_TOKEN_FILE (or PPS_TOKEN)"
            " in Claude Code's environment. Pass --token-file to name one.",
            err=True,
        )
    elif not os.access(env["PPS_TOKEN_FILE"], os.R_OK):
        typer.echo(f"warning: cannot read {env['PPS_TOKEN_FILE']} yet", err=True)


@hooks_app.command("uninstall")
def hooks_uninstall(
    target: Annotated[str, typer.Argument(help="Where: claude-code.")] = "claude-code",
    project: Annotated[
        Path | None,
        typer.Option("--project", file_okay=False, help="From DIR/.claude/settings.local.json."),
    ] = None,
    user: Annotated[bool, typer.Option("--user", help="From ~/.claude/settings.json.")] = False,
) -> None:
    """Remove our hooks (only ours) from a Claude Code settings file."""
    from ingest import claude_settings

    if target != "claude-code":
        fail(f"unknown target {target!r}: only claude-code")
    if project is not None and user:
        fail("choose --project DIR or --user, not both")
    path = claude_settings.settings_path(project=project, user=user)
    try:
        changes = claude_settings.uninstall(path)
    except claude_settings.SettingsError as exc:
        fail(str(exc))
    typer.echo(f"{path}: removed {', '.join(changes.removed) or 'nothing (none were ours)'}")


@ingest_app.command("flush")
def ingest_flush(url: Url = None, port: Port = None) -> None:
    """Send the spool now, in order (waiting for a flush running elsewhere)."""
    from ingest.client import Client, ClientConfigError

    try:
        client = Client.from_settings(settings_for(url=url, port=port))
    except ClientConfigError as exc:
        fail(str(exc))
    with client:
        result = client.flush(wait=True)
        kept = client.spool.rejected_count()
        typer.echo(
            f"sent: {result.stored} stored, {result.duplicates} duplicates,"
            f" {result.rejected} rejected; {result.pending} waiting in {client.spool.path}"
        )
        if kept:
            typer.echo(f"{kept} rejected events are kept in {client.spool.rejected_path}")
    if result.error is not None:
        fail(f"stopped: {result.error}")


def _import(source: str, url: str | None, port: int | None, work) -> None:
    """Build the client and an Import, run `work(importer, progress)`, print the summary."""
    from rich.console import Console
    from rich.progress import Progress

    from ingest.client import Client, ClientConfigError
    from ingest.importers import Import, Summary

    settings = settings_for(url=url, port=port)
    try:
        client = Client.from_settings(settings)
    except ClientConfigError as exc:
        fail(str(exc))
    with client, Progress(console=Console(stderr=True), transient=True) as progress:
        importer = Import(client, Summary(source), max_content_bytes=settings.max_content_bytes)
        summary = work(importer, progress)
    _print_summary(summary, client.spool.rejected_path)


def _print_summary(summary, rejected_path: Path | None = None, *, sent: bool = True) -> None:
    typer.echo(f"{summary.source}: {summary.files} files, {summary.read} records read")
    rows = [
        ("imported", summary.imported, "new events stored"),
        ("duplicates", summary.duplicates, "already stored"),
        ("not events", summary.other, "tool results, system lines, ..."),
        ("skipped", summary.skipped, "bad records, not sent"),
        ("rejected", summary.rejected, f"refused by the service, kept in {rejected_path}"),
        ("spooled", summary.spooled, "wait in the spool for `pps ingest flush`"),
    ]
    for name, count, what in rows if sent else rows[3:4]:
        if count or name in ("imported", "duplicates", "skipped"):
            typer.echo(f"  {name:<11} {count:>9,}  {what}")
    if summary.errors:
        typer.echo("first errors:")
        for error in summary.errors:
            typer.echo(f"  {error}")
    if summary.service_error:
        typer.echo(f"the service did not take everything: {summary.service_error}", err=True)


@import_app.command("claude-code")
def import_claude_code(
    paths: Annotated[
        list[Path], typer.Argument(exists=True, help="Transcript files or folders (*.jsonl).")
    ],
    url: Url = None,
    port: Port = None,
) -> None:
    """Claude Code session transcripts, turn by turn, with the hooks' uids."""
    from ingest.importers import claude_code as transcripts

    _import("claude-code", url, port, lambda i, p: transcripts.run(i, paths, progress=p))


@import_app.command("discord-db")
def import_discord_db(
    database: Annotated[Path, typer.Argument(exists=True, dir_okay=False)],
    url: Url = None,
    port: Port = None,
) -> None:
    """A Discord daemon's SQLite database: its events and messages tables."""
    from ingest.importers import discord_db

    def work(importer, progress):
        try:
            return discord_db.run(importer, database, progress=progress)
        except discord_db.DatabaseError as exc:
            fail(str(exc))

    _import("discord-db", url, port, work)


@import_app.command("journals")
def import_journals(
    folder: Annotated[Path, typer.Argument(exists=True, file_okay=False)],
    attach: Annotated[
        bool, typer.Option("--attach", help="Attach the folder as a domain collection instead.")
    ] = False,
    name: AttachName = None,
    url: Url = None,
    port: Port = None,
) -> None:
    """Dated markdown journals as longform events (or, with --attach, a collection)."""
    from ingest.client import ClientConfigError
    from ingest.importers import journals

    if attach:
        try:
            entry = journals.attach(settings_for(url=url, port=port), folder, name)
        except ClientConfigError as exc:
            fail(str(exc))
        typer.echo(f"attached {entry.path} as collection {entry.name!r} ({entry.files} files)")
        typer.echo(
            "the service searches domain collections inside the entity's home: copy or move"
            f" the folder to <home>/{entry.name} and add {entry.name!r} to"
            " PPS_DOMAIN_COLLECTIONS (a symlink leaving the home is not followed)"
        )
        return
    _import("journals", url, port, lambda i, p: journals.run(i, folder, progress=p))


@import_app.command("openclaw")
def import_openclaw(
    workspace: Annotated[Path, typer.Argument(exists=True, file_okay=False)],
    name: AttachName = None,
    url: Url = None,
    port: Port = None,
) -> None:
    """An OpenClaw workspace (MEMORY.md, memory/*.md) attached as the memory files."""
    from ingest.client import ClientConfigError
    from ingest.importers import openclaw

    try:
        entry, summary = openclaw.attach(settings_for(url=url, port=port), workspace, name)
    except (ClientConfigError, openclaw.WorkspaceError) as exc:
        fail(str(exc))
    _print_summary(summary, sent=False)
    typer.echo(f"attached {entry.path} as memory files {entry.name!r} ({entry.files} files)")
    typer.echo(
        "for the service to search them in place, make the workspace the entity's home:"
        f' PPS_ENTITY_HOMES=\'{{"<entity>": "{entry.path}"}}\''
    )


@app.command()
def reindex(
    entity: EntityOpt = None,
    re_embed: Annotated[
        bool, typer.Option("--re-embed", help="Embed every chunk again, not only those missing.")
    ] = False,
    data_dir: DataDir = None,
) -> None:
    """Rebuild the search index from the files on disk and the event log (progress bar).
    Vectors of another model are replaced; safe while the server runs."""
    from rich.progress import Progress

    from engine import embeddings, watch
    from engine.index import Index

    settings = settings_for(data_dir=data_dir)
    db = Database.open(settings)
    known = [e.name for e in entities.list_all(db)]
    if entity is not None and entity not in known:
        fail(f"no entity named {entity!r}")
    index = Index(settings, db)
    unavailable = None
    with Progress(transient=False) as bar:
        for name in [entity] if entity else known:
            task = bar.add_task(f"{name}: files", total=None)

            def show(stage: str, done: int, total: int, task=task, name=name) -> None:
                bar.update(task, description=f"{name}: {stage}", completed=done, total=total)

            try:
                report = watch.sync(index, name, rebuild=True, re_embed=re_embed, progress=show)
            except embeddings.Unavailable as exc:
                unavailable = str(exc)
                continue
            bar.console.print(
                f"{name}: {report.added + report.updated + report.unchanged} files indexed,"
                f" {report.removed} removed, {report.embedded} chunks embedded"
            )
            for error in report.errors:
                bar.console.print(f"{name}: could not read {error}")
    if unavailable:
        fail(f"files and words are indexed, but not by meaning: {unavailable}")


def main() -> None:
    app()


if __name__ == "__main__":
    main()
