"""`pps serve`: the HTTP service (REST, OpenAPI, the MCP endpoints).

What can refuse a start is checked first, in a second and before the engine loads: a
non-loopback host without --allow-remote, a data dir another server holds (one server
per data dir: its lock), a port in use.
"""

from __future__ import annotations

import errno
import logging
import socket
import sys
from typing import Annotated

import typer

from pps.cli.options import DataDir, Port, fail, settings_for

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


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
    from engine.kernel.lock import DataDirBusy, DataDirLock

    settings = settings_for(
        data_dir=data_dir, port=port, host=host, allow_remote=allow_remote or None
    )
    if not settings.binds_loopback and not settings.allow_remote:
        fail(
            f"refusing to listen on {settings.host}: it is not a loopback address. "
            "pps has no TLS of its own; put a TLS proxy in front and pass --allow-remote."
        )
    listening = _listen(settings.host, settings.port)  # before the data dir is touched
    try:
        lock = DataDirLock.acquire(
            settings.data_dir, "pps serve", host=settings.host, port=settings.port
        )
    except DataDirBusy as busy:
        listening.close()
        fail(
            f"{busy}: one server per data dir. Use that one"
            f"{f' ({busy.owner.url})' if busy.owner.url else ''}, stop it first, or give"
            " this one another --data-dir."
        )
    except OSError as exc:
        listening.close()
        fail(f"cannot use the data dir {settings.data_dir}: {exc.strerror or exc}")
    _log_plainly()
    logging.getLogger("pps.serve").info(
        "data dir %s; pid %s; http://%s:%s", settings.data_dir, lock.owner.pid, *_hostport(settings)
    )
    # Only now the heavy part: a refused start answers at once.
    import uvicorn

    from pps.app import create_app

    config = uvicorn.Config(
        create_app(settings, lock=lock),
        host=settings.host,  # for its "running on" line; it listens on `listening`
        port=settings.port,
        log_config=None,  # ours, set above
        log_level="info",
        access_log=False,
        timeout_graceful_shutdown=5,
    )
    uvicorn.Server(config).run(sockets=[listening])


def _listen(host: str, port: int) -> socket.socket:
    """The server's socket, bound now (uvicorn listens on it): a port in use fails here,
    in a second, rather than after the whole engine has started."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
    except socket.gaierror as exc:
        fail(f"cannot listen on {host}: {exc.strerror}")
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            who = "another pps serve" if _pps_answers(host, port) else "another program"
            fail(
                f"port {port} on {host} is in use by {who}: stop it, or choose"
                " another port with --port (or PPS_PORT)"
            )
        fail(f"cannot listen on {host}:{port}: {exc.strerror or exc}")
    return sock


def _pps_answers(host: str, port: int) -> bool:
    """Whether what listens on host:port answers /health as pps does."""
    import httpx

    loopback = {"0.0.0.0": "127.0.0.1", "::": "::1"}.get(host, host)
    where = f"[{loopback}]" if ":" in loopback else loopback
    try:
        body = httpx.get(f"http://{where}:{port}/health", timeout=2).json()
    except (httpx.HTTPError, ValueError):
        return False
    return isinstance(body, dict) and "database" in body.get("components", {})


def _log_plainly() -> None:
    """One plain line per record on stderr, as wide as it is (Rich's handler, which the MCP
    SDK installs when no logging is set up, wraps at 80 columns in a file)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter(LOG_FORMAT))
    root = logging.getLogger()
    for old in root.handlers[:]:
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    logging.getLogger("faiss").setLevel(logging.WARNING)  # which CPU build it tried, at start


def _hostport(settings) -> tuple[str, int]:
    host = f"[{settings.host}]" if ":" in settings.host else settings.host
    return host, settings.port
