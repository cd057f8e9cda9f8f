"""`pps doctor`: what works, and why not.

One line per component, printed as soon as it is checked: the database, the service, the
graph, the LLM, the embedding model, then what only a server knows: its workers and the
files of the homes it could not index; last, the hooks installed (Claude Code, Letta Code,
Codex; the user's and this folder's settings): whether the service takes the token each
one sends. With a server running on the data dir (it holds the data dir's lock, which
names its port), its /health is asked once and is the verdict for what the server runs
(the graph, the models: none is loaded here); the database and the LLM's endpoint are
checked here too, and where the two differ the line gives the worse with both reasons.
Without one, everything is checked here (the embedded FalkorDB started and stopped under
the lock, the models loaded).
"""

from __future__ import annotations

import contextlib
import os
from typing import TYPE_CHECKING

import typer

from engine.kernel.config import default_folder
from engine.kernel.lock import SERVE, owner
from pps.cli.options import DataDir, Port, settings_for

if TYPE_CHECKING:
    from engine.api import Service
    from engine.api.statuses import Statuses

BAD = ("down", "refused", "failing", "full")
_RANK = {"failing": 1, "full": 2, "refused": 2, "down": 2}
_CHECKED_HERE = {"database", "graph", "llm", "embeddings", "reranker", "backup", "summaries"}
"""Components this command checks itself; the server's others are printed as it says."""


def doctor(data_dir: DataDir = None, port: Port = None) -> None:
    """Check each part (database, service, graph, LLM, embedding model), one line each as
    it finishes, and say why one does not work; then the last backup. With a server
    running on the data dir, its /health counts too."""
    settings = settings_for(data_dir=data_dir, port=port)
    report = _Report()
    typer.echo(f"{'data dir':12} {settings.data_dir!s}  ({_why_this_dir(data_dir, settings)})")

    from engine.api import Service  # loaded once the first line is out
    from engine.api.statuses import Statuses

    service, served = _service(settings)
    with contextlib.ExitStack() as held:
        opened: Service | None = None
        try:
            opened = held.enter_context(Service.open(settings))
            mode = settings.data_dir.stat().st_mode & 0o777
            database = {"status": "ok", "schema_version": opened.statuses.schema_version()}
            database["data_dir_mode"] = oct(mode)
        except Exception as exc:  # what is wrong is the answer
            database = {"status": "down", "error": f"{type(exc).__name__}: {exc}"}
        # What needs no database is checked all the same when it does not open.
        statuses = opened.statuses if opened is not None else Statuses(settings)
        if (served or {}).get("database", {}).get("status", "ok") != "ok":  # full, say
            database = _one(database, served, "database")
        if dropped := (served or {}).get("database", {}).get("dropped_writes"):
            database["dropped_writes"] = dropped  # by the server's reads, for lack of space
        report.line("database", database)
        report.line("service", service)
        graph = statuses.graph("pps doctor") if served is None else {}
        report.line("graph", _one(graph, served, "graph"))

        here = statuses.llm_probe()  # the SDKs are not needed to ask the endpoint
        report.line("llm", _llm(here, statuses.llm(), served) | statuses.llm_structured_output())

        # The models: the server's, as it reports them; loaded here only when none runs.
        report.line("embeddings", _one(_embeddings_here(statuses, served), served, "embeddings"))
        report.line("reranker", _one(_reranker_here(statuses, served), served, "reranker"))
        for name, state in (served or {}).items():  # what only the server knows
            if name not in _CHECKED_HERE:
                report.line(name, _workers(state) if name == "workers" else state)
        report.line("summaries", _one(_summaries_here(opened, served), served, "summaries"))
        report.line("backup", _backup(opened, served))
        for check in _installed_hooks():
            report.line("hooks", check)
    if report.bad:
        raise typer.Exit(1)


class _Report:
    def __init__(self):
        self.bad = False

    def line(self, name: str, check: dict) -> None:
        status = check.get("status")
        detail = ", ".join(f"{k}={v}" for k, v in check.items() if k != "status")
        typer.echo(f"{name:12} {status:12} {detail}".rstrip())
        self.bad |= status in BAD


def _why_this_dir(given, settings) -> str:
    if given is not None:
        return "--data-dir"
    if os.environ.get("PPS_DATA_DIR", "").strip():
        return "PPS_DATA_DIR"
    if settings.data_dir != default_folder("data_dir"):
        return "PPS_DATA_DIR in .env"
    return "the default: your data folder; --data-dir or PPS_DATA_DIR for another"


def _service(settings) -> tuple[dict, dict | None]:
    """The service's line, and the /health components of the server holding the data
    dir (None when no server runs on it)."""
    import httpx

    from ingest.client import service_url

    holder = owner(settings.data_dir)
    if holder is not None and holder.command == SERVE and holder.url:
        where = {"url": holder.url, "pid": holder.pid}
        try:
            served = httpx.get(f"{holder.url}/health", timeout=5).json()
            components = served["components"]
        except (httpx.HTTPError, ValueError, KeyError) as exc:
            return {"status": "down", **where, "error": f"/health: {exc}"}, None
        return {"status": "running", **where}, components
    if holder is not None:
        return {"status": "not running", "data_dir": f"in use by {holder}"}, None
    url = service_url(settings)
    try:
        httpx.get(f"{url}/health", timeout=3).raise_for_status()
    except httpx.HTTPError:
        return {"status": "not running", "url": url}, None
    note = (
        f"no server runs on this data dir; {url} answers, but it serves another"
        " (its entities and tokens are not these)"
    )
    return {"status": "not running", "note": note}, None


def _embeddings_here(statuses: Statuses, served: dict | None) -> dict:
    return {} if served is not None else statuses.embeddings(load=True)


def _reranker_here(statuses: Statuses, served: dict | None) -> dict:
    return {} if served is not None else statuses.reranker(load=True)


def _summaries_here(opened: Service | None, served: dict | None) -> dict:
    if served is not None or opened is None:
        return {}
    return opened.statuses.summaries()


def _one(here: dict, served: dict | None, name: str) -> dict:
    """One verdict from this command's check and the server's report of the same part:
    the worse one, with the other's reason when it differs."""
    there = (served or {}).get(name)
    if not there:
        return here
    if not here:
        return there
    if _RANK.get(str(here.get("status")), 0) > _RANK.get(str(there.get("status")), 0):
        worse, other, other_is = here, there, "server"
    else:
        worse, other, other_is = there, here, "from_here"
    verdict = {**worse}
    if other.get("status") != worse.get("status"):
        why = other.get("error") or other.get("reason")
        verdict[other_is] = other.get("status") + (f" ({why})" if why else "")
    return verdict


def _backup(opened: Service | None, served: dict | None) -> dict:
    """The last backup: when, how long ago, which archive (its name), or `none`."""
    if opened is None:
        return (served or {}).get("backup") or {"status": "none", "why": "no database"}
    latest = opened.backups.last()
    line = opened.backups.status()
    if latest is not None:
        line["age"] = _age(line.pop("age_s"))
        line["archive"] = latest.archive
        line["scope"] = latest.entity or "all"
    return line


def _age(seconds: int) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds // size} {unit}"
    return f"{seconds} s"


def _workers(served: dict) -> dict:
    """The server's workers on one line: each job kind that is not ok, and why."""
    line = {"status": served.get("status")}
    for kind, state in served.get("kinds", {}).items():
        if state.get("status") == "down":
            line[kind] = f"down ({state.get('alive')} of {state.get('threads')} threads alive)"
        elif state.get("status") != "ok":
            doing, error = state.get("doing"), state.get("error")
            line[kind] = f"{state.get('status')} since {state.get('since')} ({doing}: {error})"
    if served.get("unrecorded_outcomes"):
        line["unrecorded_outcomes"] = served["unrecorded_outcomes"]
    return line


def _llm(here: dict, described: dict, served: dict | None) -> dict:
    """The LLM: what the server's extraction saw (failing, refused) and whether its
    endpoint answers from here. When this shell's settings name another LLM than the
    server's, the server's is what counts."""
    there = (served or {}).get("llm")
    here = {"status": here["status"], **described, **here}
    if there is None:
        return here
    same = all(there.get(k) == v for k, v in described.items() if k != "reason")
    if not same:
        mine = ", ".join(f"{k}={v}" for k, v in described.items() if k != "reason")
        return {**there, "note": f"this shell's settings name another LLM ({mine})"}
    verdict = _one(here, {"llm": there}, "llm")
    if here.get("status") == "ok" and verdict.get("status") != "ok":
        verdict["from_here"] = "the endpoint answers GET /models"
    return verdict


def _installed_hooks() -> list[dict]:
    """One line per host, service and token the installed hooks send with (Claude Code,
    Letta Code, Codex: the user's settings, then this folder's): whether the service
    takes it (`refused`: a 401, the hooks inject nothing)."""
    from ingest import hosts

    lines = []
    for one in hosts.installed():
        where = {"host": one.host.name, "file": one.path}
        if one.hooks is None:
            lines.append({"status": "failing", **where, "error": one.problem})
            continue
        hooks = one.hooks
        where |= {"events": ",".join(hooks.events), "token": hooks.source}
        taken = _taken(hooks)
        if one.untrusted:  # whatever the service says, Codex runs none of these
            taken = {"status": "failing", "error": hosts.untrusted_says(one)}
        lines.append({**taken, **where, "url": hooks.url})
    return lines


def _taken(hooks) -> dict:
    """Whether the service at `hooks.url` takes `hooks.token`."""
    from ingest.client import answers_token

    if hooks.token is None:
        return {"status": "failing", "error": hooks.problem}
    status = answers_token(hooks.url, hooks.token, timeout=5)
    if status == 200:
        return {"status": "ok"}
    if status == 401:
        return {"status": "refused", "error": "401: the service does not take this token"}
    return {"status": "not answering" if status is None else "failing", "status_code": status}
