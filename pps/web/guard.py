"""What every request to the web face passes before a page sees it: the Host and Origin it
came with (DNS rebinding, cross-site posts), the session cookie, and, for a write, the
session's CSRF token.

A refusal is an exception: pages (pps.web.pages) answer it with an HTML page (or, not
signed in, a redirect to the sign-in page); the JSON endpoints under /ui/api answer it
in the service's one error shape (pps.http.errors).
"""

from __future__ import annotations

import hmac
import re
import secrets
from typing import Annotated, TypeVar
from urllib.parse import urlsplit

from fastapi import Depends, Request
from fastapi.responses import Response

from engine.api import Memory, Service
from engine.kernel.config import Settings
from pps.web.sessions import Session, Sessions, SignIns

COOKIE = "pps_ui"
"""The session id. HttpOnly, SameSite=Strict, Path=/ui; not Secure: pps serves plain
http on loopback, where a Secure cookie would never be sent back (behind a TLS proxy the
browser still keeps it to the one origin by SameSite and Path)."""
LOGIN_COOKIE = "pps_ui_login"
"""The sign-in form's CSRF token (double submit): the form carries the same value."""
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]")


class Refused(Exception):
    """A request the web face will not serve: `status`, the `error` word of the JSON
    shape, the `field` at fault and the `problem`, in words."""

    def __init__(self, status: int, error: str, field: str, problem: str):
        super().__init__(problem)
        self.status, self.error, self.field, self.problem = status, error, field, problem


class SignInNeeded(Refused):
    def __init__(self, problem: str = "not signed in, or the session ended"):
        super().__init__(401, "unauthorized", "session", problem)


def service(request: Request) -> Service:
    return request.app.state.service


def sessions(request: Request) -> Sessions:
    return request.app.state.ui_sessions


def sign_ins(request: Request) -> SignIns:
    return request.app.state.ui_sign_ins


def client_address(request: Request) -> str:
    """Who the sign-in throttle counts: the client's address (behind a proxy, the
    proxy's, every client's alike)."""
    return request.client.host if request.client else "unknown"


def same_origin(request: Request) -> None:
    """Refuse a request whose Host is not this server's (DNS rebinding: a page on another
    site whose name now points at 127.0.0.1) or whose Origin is another site's. Bound to
    loopback, Host must be 127.0.0.1, localhost or [::1] (any port), as the MCP mount
    checks; bound elsewhere (behind a proxy), any Host, but Origin must name it. A write
    (POST) must say where it comes from: an Origin, else a Referer, of this site."""
    settings: Settings = request.app.state.settings
    host = request.headers.get("host", "")
    if settings.binds_loopback and _hostname(host) not in LOOPBACK_HOSTS:
        raise Refused(421, "misdirected_request", "Host", f"not this server: {host!r}")
    origin = request.headers.get("origin")
    if origin is None and request.method == "POST":
        referer = request.headers.get("referer")
        if referer:
            parts = urlsplit(referer)
            origin = f"{parts.scheme}://{parts.netloc}"
    if origin is None:
        if request.method == "POST":
            raise Refused(403, "forbidden", "Origin", "a write must come with its Origin")
        return
    if urlsplit(origin).netloc != host:
        raise Refused(403, "forbidden", "Origin", f"another site's request: {origin!r}")


_HOST = re.compile(r"(\[[0-9A-Fa-f:.]+\]|[^\[\]:/@\s]+)(?::\d{1,5})?")
"""A Host header: a name, an IPv4 address or a bracketed IPv6 one, then an optional port."""


def _hostname(host: str) -> str | None:
    """The host part of a Host header (`[::1]:8000` is `[::1]`); None for anything that
    is not one (`[::1]evil`)."""
    match = _HOST.fullmatch(host)
    return match[1] if match else None


def current(request: Request) -> Session | None:
    """The request's open session, if it has one. A session whose entity's token was
    rotated since it began is ended here, at its next request."""
    store = sessions(request)
    session = store.get(request.cookies.get(COOKIE))
    if session is None:
        return None
    if service(request).entities.token_issued(session.entity) != session.issued:
        store.end(session.id)
        return None
    return session


def signed_in(request: Request) -> Session:
    session = current(request)
    if session is None:
        raise SignInNeeded()
    request.state.ui_session = session
    return session


def session_memory(request: Request, session: Annotated[Session, Depends(signed_in)]) -> Memory:
    """The signed-in entity's memory: the only one a page reaches."""
    return service(request).memory(session.entity)


def new_form_token() -> str:
    return secrets.token_urlsafe(32)


def check_csrf(session_token: str, given: str | None) -> None:
    if not given or not hmac.compare_digest(session_token.encode(), given.encode()):
        raise Refused(403, "forbidden", "csrf", "missing or wrong CSRF token; reload the page")


async def csrf(request: Request, session: Annotated[Session, Depends(signed_in)]) -> Session:
    """A signed-in write: the session's CSRF token in the form field `csrf` or the header
    `X-CSRF-Token`, compared in constant time."""
    given = request.headers.get("x-csrf-token")
    if given is None:
        form = await request.form()
        value = form.get("csrf")
        given = value if isinstance(value, str) else None
    check_csrf(session.csrf, given)
    return session


SignedIn = Annotated[Session, Depends(signed_in)]
Write = Annotated[Session, Depends(csrf)]
SessionMemory = Annotated[Memory, Depends(session_memory)]


def set_session_cookie(response: Response, session: Session) -> None:
    """A browser-session cookie (no Max-Age): when the session ends is the server's say
    (pps.web.sessions), and closing the browser forgets it."""
    response.set_cookie(COOKIE, session.id, path="/ui", httponly=True, samesite="strict")


def clear_session_cookie(response: Response) -> None:
    response.delete_cookie(COOKIE, path="/ui", httponly=True, samesite="strict")


_R = TypeVar("_R", bound=Response)


def harden(response: _R) -> _R:
    """Headers every page carries: our own scripts and styles only, no framing, no
    caching of pages that show memory, no Referer sent to other sites."""
    response.headers["Content-Security-Policy"] = (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:;"
        " connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    )
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["X-Frame-Options"] = "DENY"
    response.headers["Referrer-Policy"] = "same-origin"
    response.headers["Cache-Control"] = "no-store"
    return response
