"""Webhook delivery against real loopback HTTP servers: no redirect is followed (the token goes to the
configured URL only), the deadline bounds the whole request (a receiver dripping its answer is cut off),
and a receiver stalling on one tenant's alerts does not hold up another tenant's."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tests.daemon.conftest import INTENTS, NOW, make_config
from tests.daemon.lakes import synthetic_days, write_rows
from tests.daemon.test_daemon import _count
from verdict.tenancy import TenantId
from verdict_daemon.service import alerts
from verdict_daemon.service.cycle import build_evaluators, run_cycle
from verdict_daemon.service.daemon import Daemon

TOKEN = "webhook-secret-0123456789"
ANSWER = b"HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n"


class Receiver:
    """A loopback HTTP server; `answer(handler, body)` answers each request (any method) after it was
    recorded as (method, path, Authorization header, JSON body or None)."""

    def __init__(self, answer: Callable[[BaseHTTPRequestHandler, dict | None], None]) -> None:
        self.requests: list[tuple[str, str, str | None, dict | None]] = []
        requests = self.requests

        class Handler(BaseHTTPRequestHandler):
            def _any(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length)) if length else None
                requests.append((self.command, self.path, self.headers.get("Authorization"), body))
                answer(self, body)

            do_GET = do_POST = _any

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/alerts"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _answer(status: int, **headers: str) -> Callable[[BaseHTTPRequestHandler, dict | None], None]:
    def answer(handler: BaseHTTPRequestHandler, _body: dict | None) -> None:
        handler.send_response(status)
        for name, value in {"Content-Length": "0", **headers}.items():
            handler.send_header(name, value)
        handler.end_headers()

    return answer


class Drip:
    """Answers one byte at a time, `every` seconds apart, until the answer is out, `release` is set, or the
    client hangs up; `cut` is set when the client hung up first."""

    def __init__(self, every: float) -> None:
        self.every = every
        self.release = threading.Event()
        self.dripping = threading.Event()  # a drip is under way
        self.cut = threading.Event()
        self.finished = threading.Event()

    def __call__(self, handler: BaseHTTPRequestHandler, _body: dict | None) -> None:
        self.dripping.set()
        try:
            for byte in ANSWER:
                if self.release.wait(self.every):
                    break
                handler.wfile.write(bytes([byte]))
                handler.wfile.flush()
        except OSError:
            self.cut.set()
        finally:
            self.dripping.clear()
            self.finished.set()


def _last_error(data_dir, tenant: str) -> str:
    import duckdb

    con = duckdb.connect(str(data_dir / "state.duckdb"), read_only=True)
    try:
        return con.execute("SELECT last_error FROM alert_deliveries WHERE tenant_id = ?", [tenant]).fetchall()[0][0]
    finally:
        con.close()


@pytest.fixture
def raised(lake, monkeypatch):
    """A config whose drift run raised acme's alert (pending), the webhook token in its variable."""
    monkeypatch.setenv("VERDICT_TEST_WEBHOOK_TOKEN", TOKEN)
    config = make_config(lake, alerts={"token_env": "VERDICT_TEST_WEBHOOK_TOKEN"})
    run_cycle(config, TenantId("acme"), NOW, build_evaluators(config))
    return config


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
def test_a_redirect_is_a_failed_attempt_and_the_token_never_leaves_the_configured_url(raised, lake, status):
    elsewhere = Receiver(_answer(204))
    hook = Receiver(_answer(status, Location=elsewhere.url))
    try:
        settings = raised.alerts.model_copy(update={"webhook_url": hook.url})
        report = alerts.deliver(Daemon(raised).store, TenantId("acme"), settings)
        assert report == alerts.AlertReport(0, 1, 0)  # pending: retried later, not marked delivered
        assert elsewhere.requests == []
        assert [(m, a) for m, _p, a, _b in hook.requests] == [("POST", f"Bearer {TOKEN}")]
        assert _last_error(lake, "acme") == f"HTTP {status} (redirects are not followed)"
    finally:
        hook.close()
        elsewhere.close()


def test_the_deadline_bounds_the_whole_request_not_each_read(raised, lake):
    """One byte every 0.3 s never trips a 1 s socket timeout; the whole-request deadline cuts it off."""
    drip = Drip(every=0.3)
    hook = Receiver(drip)
    try:
        settings = raised.alerts.model_copy(update={"webhook_url": hook.url, "timeout_seconds": 1})
        report = alerts.deliver(Daemon(raised).store, TenantId("acme"), settings)
        assert drip.finished.wait(60)
        assert report == alerts.AlertReport(0, 1, 0)
        assert drip.cut.is_set()  # the receiver saw the connection go before its answer was out
        assert _last_error(lake, "acme") == "deadline 1 s exceeded"
    finally:
        drip.release.set()
        hook.close()


def test_a_receiver_stalling_on_one_tenant_does_not_hold_up_another(lake, monkeypatch):
    """acme's alerts meet a receiver that drips its answer; globex's are answered at once. The daemon's
    alert job delivers globex's while acme's POST is still hanging."""
    write_rows(lake, "globex", synthetic_days(NOW, intents=INTENTS, per_day=40, corrupt="search.v1", seed=3))
    config = make_config(lake)
    evaluators = build_evaluators(config)
    for tenant in ("acme", "globex"):
        run_cycle(config, TenantId(tenant), NOW, evaluators)
    drip = Drip(every=0.5)
    globex_during_acme: list[bool] = []

    def answer(handler: BaseHTTPRequestHandler, body: dict | None) -> None:
        if body is not None and body["tenant_id"] == "acme":
            drip(handler, body)
        else:
            globex_during_acme.append(drip.dripping.is_set())
            _answer(204)(handler, body)

    hook = Receiver(answer)
    try:
        daemon = Daemon(config.model_copy(update={"alerts": config.alerts.model_copy(
            update={"webhook_url": hook.url, "timeout_seconds": 8})}))
        job = threading.Thread(target=daemon.alert)
        job.start()
        deadline = time.monotonic() + 60
        while not globex_during_acme and time.monotonic() < deadline:
            time.sleep(0.05)
        drip.release.set()
        job.join(60)
        assert globex_during_acme == [True]  # globex's POST arrived while acme's was hanging
        assert _count(lake, "SELECT count(*) FROM alert_deliveries WHERE tenant_id = 'globex' "
                            "AND status = 'delivered'") == 1
    finally:
        drip.release.set()
        hook.close()
