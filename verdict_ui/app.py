"""The Starlette app: routes, tenant resolution, CSRF, security headers and error pages.

Each handler runs in Starlette's thread pool (sync endpoints): DuckDB work never blocks the event loop.
A request's tenant comes from verdict_ui.access and every read goes through that tenant's snapshot or
through verdict_daemon.review with that tenant, so another tenant's id is simply not found (404).
"""

from __future__ import annotations

import functools
import logging
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar, cast
from urllib.parse import parse_qsl, urlencode

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp

from verdict.tenancy import TenantId
from verdict_daemon.errors import DaemonError
from verdict_daemon.probes import PROBES_DIR
from verdict_daemon.report.gather import gather
from verdict_daemon.report.model import ReviewQueue
from verdict_daemon.report.panels import probe_panel, review_counts
from verdict_daemon.report.render import stylesheet
from verdict_daemon.review import get_item, list_items, record_labels
from verdict_daemon.review.queue import STATUSES
from verdict_daemon.service.conversation import judged_trace
from verdict_daemon.store.review import trace_items_in
from verdict_daemon.store.state import StateStore
from verdict_ui import export, labelling, pages, params
from verdict_ui.access import (
    REVIEWER,
    REVIEWER_COOKIE,
    SESSION_COOKIE,
    TOKEN_COOKIE,
    Access,
    NotAuthenticated,
    new_session,
    reviewer_from,
)
from verdict_ui.conversations import (
    CONVERSATIONS_TABLE,
    PAGE_SIZE,
    TURNS_TABLE,
    ConversationFilter,
    conversation_detail,
    conversation_key,
    conversation_page,
    keys_of,
    lake_clock,
    load_key,
    materialize,
)
from verdict_ui.params import BadRequest
from verdict_ui.sign_in import SIGN_IN_SECONDS
from verdict_ui.signals import (
    signal_detail,
    signal_examples,
    signal_history,
    trace_signals,
)
from verdict_ui.snapshot import Snapshot, Snapshots
from verdict_ui.traces import Facets, TraceFilter, facets, trace_detail, trace_page
from verdict_ui.traffic import TrafficFilter, traffic

if TYPE_CHECKING:
    from duckdb import DuckDBPyConnection

log = logging.getLogger("verdict.ui")
R = TypeVar("R")  # what a snapshot query returns

MAX_FORM_BYTES = 64 * 1024
MIN_REFRESH, MAX_REFRESH = 10, 3600  # ?refresh= bounds in seconds: no faster than a snapshot is worth, at least hourly
CSP = ("default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
       "form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
# Where the name form may return to (whole match): a review page of this app with its query (a signal's queue):
# no scheme, host or "//"; the query in urlencoded characters only (no slash, backslash, colon, @ or newline).
_BACK = re.compile(r"/review(/[A-Za-z0-9][A-Za-z0-9_.:-]{0,127})?(\?[A-Za-z0-9_.~%=&+-]{1,512})?")
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1", "[::1]")
STATUS = {"item_not_found": 404, "unknown_tenant": 404, "invalid_config": 400, "storage_locked": 503, "state_corrupt": 503,
          "tenant_required": 400, "invalid_tenant": 400}


@dataclass(frozen=True)
class Settings:
    data_dir: Path
    access: Access
    allowed_hosts: tuple[str, ...] = LOOPBACK_HOSTS  # Host headers served (DNS rebinding); ("*",) for any
    snapshot_ttl: float = 5.0
    lock_timeout: float = 10.0


def create_app(settings: Settings) -> ASGIApp:
    views = _Views(
        settings,
        Snapshots(settings.data_dir, ttl=settings.snapshot_ttl, lock_timeout=settings.lock_timeout),
        StateStore(settings.data_dir, lock_timeout=settings.lock_timeout),
        _assets(),
    )
    app = Starlette(routes=views.routes(), middleware=[Middleware(TrustedHostMiddleware, allowed_hosts=list(settings.allowed_hosts))],
                    exception_handlers=_handlers(settings.access))
    return _guard(app, settings.access)


def _assets() -> dict[str, str]:
    return {"report.css": stylesheet(),
            "ui.css": resources.files("verdict_ui").joinpath("assets/ui.css").read_text(encoding="utf-8"),
            "ui.js": resources.files("verdict_ui").joinpath("assets/ui.js").read_text(encoding="utf-8")}


@dataclass(frozen=True)
class _Views:
    """The request handlers: every read and write is for the request's tenant."""

    settings: Settings
    snapshots: Snapshots
    store: StateStore
    assets: dict[str, str]

    @property
    def access(self) -> Access:
        return self.settings.access

    def routes(self) -> list[Route]:
        read = _fresh_snapshots  # the pages that read the tenant's snapshot (GET: served again at no cost)
        return [
            Route("/", self.overview), Route("/traces", read(self.traces)), Route("/traces/{trace_id}", read(self.one_trace)),
            Route("/conversations", read(self.conversations)),
            Route("/conversations/{key:path}", read(self.one_conversation)), Route("/traffic", read(self.traffic)),
            Route("/signals", read(self.signals)), Route("/signals/{signal_id}", read(self.one_signal)),
            Route("/review", read(self.review)),
            Route("/review/{item_id}", read(self.review_item)), Route("/review/{item_id}/labels", self.label, methods=["POST"]),
            Route("/reviewer", self.set_reviewer, methods=["POST"]), Route("/login", self.login_form),
            Route("/login", self.login, methods=["POST"]), Route("/static/{name}", self.static), Route("/healthz", self.healthz),
        ]

    def tenant(self, request: Request) -> TenantId:
        return self.access.tenant_for(request.headers, request.cookies)

    def html(self, request: Request, title: str, body: str, current: str = "", refreshable: bool = False) -> HTMLResponse:
        """The page; a `refreshable` one (overview, signals, traffic) takes `?refresh=SECONDS` to reload itself."""
        refresh = (params.integer(request.query_params, "refresh", 0, MIN_REFRESH, MAX_REFRESH) if refreshable
                   else None)
        return HTMLResponse(pages.page(self.tenant(request), title, body, current, refresh))

    def csrf(self, request: Request) -> str:
        return self.access.csrf_token(request.state.session)

    async def form(self, request: Request) -> dict[str, str]:
        """The urlencoded body (bounded), after the CSRF check."""
        body = b""
        async for chunk in request.stream():
            body += chunk
            if len(body) > MAX_FORM_BYTES:
                raise BadRequest(f"form bodies are limited to {MAX_FORM_BYTES} bytes")
        try:
            fields = dict(parse_qsl(body.decode("utf-8"), keep_blank_values=True, max_num_fields=200))
        except (UnicodeDecodeError, ValueError):
            raise BadRequest("the form is not valid urlencoded UTF-8") from None
        if not self.access.csrf_ok(request.cookies.get(SESSION_COOKIE), fields.get("csrf")):
            raise HTTPException(403, "the form's CSRF token does not match this browser session; reload the page")
        return fields

    def overview(self, request: Request) -> Response:
        t = self.tenant(request)
        root = self.settings.data_dir
        try:
            data = gather(root, t, probes=probe_panel([], root / PROBES_DIR, t),
                          review=ReviewQueue(review_counts(self.store, t)), lock_timeout=self.settings.lock_timeout)
        except DaemonError as exc:  # a token holder must not learn which other tenants have data
            if exc.code != "unknown_tenant" or self.settings.access.tokens is None:
                raise
            raise DaemonError("unknown_tenant", f"tenant {t!r} has no spans and no state yet") from None
        body = pages.overview(data, pages.agreement(labelling.agreements(self.store, t)))
        return self.html(request, f"Overview — {t}", body, "/", refreshable=True)

    def traces(self, request: Request) -> Response:
        f, fmt = TraceFilter.parse(request.query_params), export.wanted(request.query_params)
        result, values = self.with_facets(request, lambda con, days: trace_page(con, f, days))
        if fmt != "html":
            after = f"/traces?{urlencode(f.query_string(before=result.next_cursor, format=fmt))}" if result.next_cursor else None
            return export.respond("traces", result.rows, fmt, after)
        return self.html(request, "Traces", pages.traces(f, result, values), "/traces")

    def one_trace(self, request: Request) -> Response:
        t = self.tenant(request)
        trace_id = params.identifier(request.path_params["trace_id"], "trace id")
        if trace_id != judged_trace(trace_id):  # a conversation unit (a signal's example, a review item): its first turn
            return RedirectResponse(pages.trace_url(judged_trace(trace_id)), status_code=303)
        day = params.day(request.query_params, "day")
        with self.snapshots.get(t).reading() as con:
            detail = trace_detail(con, trace_id, day)
            signals = trace_signals(con, trace_id) if detail is not None else ()
            items = trace_items_in(con, trace_id) if detail is not None else ()
        if detail is None:
            raise HTTPException(404, f"no trace {trace_id!r} for this tenant")
        links = pages.related(tuple(sorted({c.intent_key for c in detail.calls if c.intent_key})),
                              tuple(sorted({(j.evaluator, j.cluster) for j in detail.judgments if j.cluster},
                                           key=lambda pair: (pair[0] or "", pair[1] or ""))),
                              signals, items, (detail.conversation_id, trace_id) if detail.conversation_id else None)
        return self.html(request, f"Trace {trace_id[:16]}", links + pages.trace(detail))

    def conversations(self, request: Request) -> Response:
        f, fmt = ConversationFilter.parse(request.query_params), export.wanted(request.query_params)
        result, values = self.with_conversations(request, lambda con, values: (conversation_page(con, f), values))
        if fmt != "html":
            after = (f"/conversations?{urlencode(f.query_string(offset=str(f.offset + PAGE_SIZE), format=fmt))}"
                     if result.more else None)
            return export.respond("conversations", result.rows, fmt, after)
        return self.html(request, "Conversations", pages.conversations(f, result, values), "/conversations")

    def with_conversations(self, request: Request, query: Callable[[DuckDBPyConnection, Facets], R]) -> R:
        """`query` on the request tenant's snapshot once its conversations are computed (once per snapshot: the
        views cut every keyed trace of the lake), with the filter lists."""
        snapshot = self.snapshots.get(self.tenant(request))
        with snapshot.reading() as con:
            if "conversations" not in snapshot.memo:
                materialize(con)
                snapshot.memo["conversations"] = True
            return query(con, _facets(snapshot, con))

    def one_conversation(self, request: Request) -> Response:
        key = conversation_key(request.path_params["key"])
        seq = params.integer(request.query_params, "seq", 0, 1, 10**12) or None
        raw_trace = request.query_params.get("trace", "").strip()
        trace = params.identifier(raw_trace, "trace") if raw_trace else None
        snapshot = self.snapshots.get(self.tenant(request))
        with snapshot.reading() as con:
            if "conversations" in snapshot.memo:  # the list computed every conversation of this snapshot: read them
                tables = (TURNS_TABLE, CONVERSATIONS_TABLE)
            else:  # read its key's traces only, not the conversations of the whole lake
                if "lake_clock" not in snapshot.memo:
                    snapshot.memo["lake_clock"] = lake_clock(con)
                tables = load_key(con, key, cast(int | None, snapshot.memo["lake_clock"]))
            detail = conversation_detail(con, key, seq, trace, tables)
        if detail is None:
            raise HTTPException(404, f"no conversation {key!r}{f' number {seq}' if seq else ''} for this tenant")
        return self.html(request, f"Conversation {key[:32]}", pages.conversation(detail), "/conversations")

    def traffic(self, request: Request) -> Response:
        f, fmt = TrafficFilter.parse(request.query_params), export.wanted(request.query_params)
        result, values = self.with_facets(request, lambda con, days: traffic(con, f, days))
        if fmt != "html":
            return export.respond("traffic", result.detail, fmt)
        return self.html(request, "App traffic", pages.traffic_page(f, result, values), "/traffic", refreshable=True)

    def with_facets(self, request: Request, query: Callable[[DuckDBPyConnection, tuple[date, ...]], R]) -> tuple[R, Facets]:
        """`query` on the request tenant's snapshot, and the filter lists (computed once per snapshot)."""
        snapshot = self.snapshots.get(self.tenant(request))
        with snapshot.reading() as con:
            return query(con, snapshot.days), _facets(snapshot, con)

    def signals(self, request: Request) -> Response:
        fmt = export.wanted(request.query_params)
        with self.snapshots.get(self.tenant(request)).reading() as con:
            history = signal_history(con)
        if fmt != "html":
            return export.respond("signals", history, fmt)
        return self.html(request, "Signals", pages.signals_page(history), "/signals", refreshable=True)

    def one_signal(self, request: Request) -> Response:
        signal_id = params.identifier(request.path_params["signal_id"], "signal id")
        with self.snapshots.get(self.tenant(request)).reading() as con:
            detail = signal_detail(con, signal_id)
            talks = keys_of(con, {t.trace_id: t.started_at.date() for t in (*detail.examples, *detail.window)}
                            if detail else {})
        if detail is None:
            raise HTTPException(404, f"no signal {signal_id!r} for this tenant")
        s = detail.signal
        return self.html(request, f"Signal: {s.kind.replace('_', ' ')} in {s.cluster} × {s.dimension}",
                         pages.signal(detail, talks))

    def review(self, request: Request) -> Response:
        t = self.tenant(request)
        status = params.choice(request.query_params, "status", STATUSES, "pending")
        offset = params.integer(request.query_params, "offset", 0, 0, 10_000_000)
        shown = cast(str, status)  # a default is given
        signal, traces = self.signal_traces(request, t)
        listed = list_items(self.store, t, status=shown, limit=50, offset=offset, traces=traces)
        query = {"status": shown, **({"signal": signal} if signal else {})}
        fmt = export.wanted(request.query_params)
        if fmt != "html":
            after = (f"/review?{urlencode({**query, 'offset': offset + listed.limit, 'format': fmt})}"
                     if offset + len(listed.items) < listed.total else None)
            return export.respond("review", listed.items, fmt, after)
        body = pages.review_list(listed, query, review_counts(self.store, t), labelling.next_item(self.store, t, traces=traces),
                                 pages.agreement(labelling.agreements(self.store, t), level=2))
        return self.html(request, "Review queue", body, "/review")

    def signal_traces(self, request: Request, t: TenantId) -> tuple[str | None, tuple[str, ...] | None]:
        """`signal` of the query string and its example traces (the queue of a signal's examples); 404 for a
        signal this tenant does not have."""
        raw = request.query_params.get("signal", "").strip()
        if not raw:
            return None, None
        signal = params.identifier(raw, "signal")
        with self.snapshots.get(t).reading() as con:
            traces = signal_examples(con, signal)
        if traces is None:
            raise HTTPException(404, f"no signal {signal!r} for this tenant")
        return signal, traces

    def review_item(self, request: Request) -> Response:
        t = self.tenant(request)
        item_id = params.identifier(request.path_params["item_id"], "item id")
        detail = get_item(self.store, t, item_id)
        reviewer = reviewer_from(request.cookies)
        labelled = any(r.reviewer == reviewer for r in detail.labels)
        agreement = pages.agreement(tuple(a for a in labelling.agreements(self.store, t)
                                          if a.fingerprint == detail.item.fingerprint)) if labelled else ""
        described = labelling.dimension_descriptions(self.store, t, detail.item.fingerprint)
        signal, traces = self.signal_traces(request, t)
        talk = None
        if labelled:  # linked only after labelling, as the trace
            with self.snapshots.get(t).reading() as con:
                talk = keys_of(con, {detail.item.trace_id: date.fromisoformat(detail.item.started_at[:10])}).get(
                    detail.item.trace_id)
        body = pages.review_item(detail, reviewer, self.csrf(request), agreement,
                                 labelling.next_item(self.store, t, skip=item_id, traces=traces), described, signal, talk)
        return self.html(request, f"Review item {item_id[:16]}", body, "/review")

    async def label(self, request: Request) -> Response:
        t = self.tenant(request)
        item_id = params.identifier(request.path_params["item_id"], "item id")
        fields = await self.form(request)
        reviewer = reviewer_from(request.cookies)
        if reviewer is None:
            raise BadRequest("give your reviewer name first (the form on the item's page)")
        labels = {k.removeprefix("label."): v for k, v in fields.items() if k.startswith("label.")}
        kept = {d: v for d, v in labels.items() if v != "UNCLEAR"}  # a dimension the reviewer cannot tell: unlabelled
        signal, traces = self.signal_traces(request, t)
        if labels and not kept:  # every dimension unclear: nothing to record, on to the next item
            following = labelling.next_item(self.store, t, skip=item_id, traces=traces)
            done = f"/review?{urlencode({'status': 'all', 'signal': signal})}" if signal else "/review"
            return RedirectResponse(pages.item_url(following, signal) if following else done, 303)
        try:
            record_labels(self.store, t, item_id, kept, critique=fields.get("critique", ""), reviewer=reviewer)
        except ValueError as exc:
            raise BadRequest(str(exc)) from None
        self.snapshots.invalidate(t)
        return RedirectResponse(f"{pages.item_url(item_id, signal)}#judge", status_code=303)

    async def set_reviewer(self, request: Request) -> Response:
        self.tenant(request)
        fields = await self.form(request)
        name = fields.get("reviewer", "").strip()
        if not REVIEWER.match(name):
            raise BadRequest("reviewer: 1-64 characters, letters, digits and . _ @ + - (not starting with one)")
        back = fields.get("next", "")
        response = RedirectResponse(back if _BACK.fullmatch(back) else "/review", 303)  # never off-site
        response.set_cookie(REVIEWER_COOKIE, name, httponly=True, samesite="strict", max_age=90 * 86400)
        return response

    def login_form(self, request: Request) -> Response:
        return HTMLResponse(pages.login_page(self.csrf(request)))

    async def login(self, request: Request) -> Response:
        fields = await self.form(request)
        address = request.client.host if request.client else "unknown"
        wait = self.access.throttle.wait_seconds(address)
        if wait > 0:  # not even checked: guessing tokens from one address is slow
            seconds = math.ceil(wait)
            return HTMLResponse(pages.login_page(self.csrf(request), f"Too many wrong tokens: try again in {seconds} s."),
                                status_code=429, headers={"Retry-After": str(seconds)})
        token = fields.get("token", "")
        if self.access.tokens is None or self.access.tokens.tenant_for(token) is None:
            self.access.throttle.failed(address)
            return HTMLResponse(pages.login_page(self.csrf(request), "That token is not valid here."), status_code=401)
        self.access.throttle.succeeded(address)
        response = RedirectResponse("/", 303)
        response.set_cookie(TOKEN_COOKIE, self.access.sign_ins.add(token), max_age=SIGN_IN_SECONDS, httponly=True,
                            samesite="strict", secure=self.access.secure_cookies or request.url.scheme == "https")
        return response

    def static(self, request: Request) -> Response:
        name = request.path_params["name"]
        if name not in self.assets:
            raise HTTPException(404, "no such file")
        kind = "text/css" if name.endswith(".css") else "text/javascript"
        return Response(self.assets[name], media_type=kind, headers={"Cache-Control": "max-age=300"})

    def healthz(self, request: Request) -> Response:
        return Response("ok\n", media_type="text/plain")


def _fresh_snapshots(page: Callable[[Request], Response]) -> Callable[[Request], Response]:
    """`page`, served again from a new snapshot when its snapshot met a segment purged since it was taken
    (collector.lake_reads; Snapshot.reading marked it stale); storage_error after a few such attempts."""
    from collector.lake_reads import LakeChanged, retry_stale

    @functools.wraps(page)
    def served(request: Request) -> Response:
        try:
            return retry_stale(lambda: page(request))
        except LakeChanged as exc:
            raise DaemonError("storage_error", str(exc)) from None

    return served


def _facets(snapshot: Snapshot, con: DuckDBPyConnection) -> Facets:
    """The filter lists, computed once per snapshot."""
    return cast(Facets, snapshot.memo.get("facets") or snapshot.memo.setdefault("facets", facets(con, snapshot.days)))


def _page_tenant(access: Access, request: Request) -> str | None:
    try:
        return access.tenant_for(request.headers, request.cookies)
    except NotAuthenticated:
        return None


def _handlers(access: Access) -> dict:
    def error(request: Request, status: int, message: str) -> Response:
        return HTMLResponse(pages.error_page(_page_tenant(access, request), status, message), status_code=status)

    def http_error(request: Request, exc: HTTPException) -> Response:
        return error(request, exc.status_code, str(exc.detail))

    def bad_request(request: Request, exc: BadRequest) -> Response:
        return error(request, 400, str(exc))

    def daemon_error(request: Request, exc: DaemonError) -> Response:
        return error(request, STATUS.get(exc.code, 500), exc.message)

    def unauthenticated(request: Request, exc: NotAuthenticated) -> Response:
        if exc.status == 401 and request.method == "GET" and "text/html" in request.headers.get("accept", ""):
            return RedirectResponse("/login", 303)
        return error(request, exc.status, exc.message)

    def unexpected(request: Request, exc: Exception) -> Response:
        log.exception("verdict ui: %s %s failed", request.method, request.url.path)
        return error(request, 500, f"internal error ({type(exc).__name__}); the server log has the details")

    return {HTTPException: http_error, BadRequest: bad_request, DaemonError: daemon_error,
            NotAuthenticated: unauthenticated, Exception: unexpected}


def _guard(app: ASGIApp, access: Access) -> ASGIApp:
    """ASGI wrapper: the session cookie behind CSRF tokens, and security headers on every response."""
    from http.cookies import SimpleCookie

    async def guarded(scope, receive, send):
        if scope["type"] != "http":
            return await app(scope, receive, send)
        cookie = SimpleCookie()
        for name, value in scope.get("headers", ()):
            if name == b"cookie":
                try:
                    cookie.load(value.decode("latin-1"))
                except Exception:  # a malformed Cookie header is treated as no cookie
                    cookie = SimpleCookie()
        session = cookie[SESSION_COOKIE].value if SESSION_COOKIE in cookie else None
        fresh = session is None
        scope.setdefault("state", {})["session"] = session or new_session()

        async def send_with_headers(message):
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                headers += [(b"content-security-policy", CSP.encode()), (b"x-content-type-options", b"nosniff"),
                            (b"referrer-policy", b"no-referrer"), (b"x-frame-options", b"DENY")]
                if not any(k == b"cache-control" for k, _ in headers):
                    headers.append((b"cache-control", b"no-store"))
                if fresh:
                    secure = "; Secure" if access.secure_cookies or scope.get("scheme") == "https" else ""
                    headers.append((b"set-cookie", f"{SESSION_COOKIE}={scope['state']['session']}; Path=/; "
                                                   f"HttpOnly; SameSite=Strict{secure}".encode()))
                message = {**message, "headers": headers}
            await send(message)

        await app(scope, receive, send_with_headers)

    return guarded

