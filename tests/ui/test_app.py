"""`verdict ui` over HTTP (Starlette's TestClient on the real app, real DuckDB files from the real
pipeline): every page for its tenant, tenant isolation on every route, auth, CSRF, malformed input."""

from __future__ import annotations

import html
import re
from urllib.parse import quote

import duckdb
import pytest

from tests.report.conftest import HOSTILE_ANSWER
from tests.ui.conftest import TOKENS, client, csrf_of, state_rows
from verdict.tenancy import LOCAL_TENANT, TenantId
from verdict_daemon.report.escape import safe
from verdict_ui.access import Access

HTML = {"Accept": "text/html"}


def routes(ids) -> list[str]:
    """Every GET page that takes an id, with this tenant's ids."""
    return [f"/traces/{ids.judged_traces[0]}", f"/signals/{ids.signals[0]}", f"/review/{ids.items[0]}"]


def trace_links(page: str) -> list[str]:
    return re.findall(r'class="trace-link" href="/traces/([0-9a-f]+)', page)


def test_every_page_renders_for_its_tenant(ui, ids):
    acme = ui["acme"]
    overview = acme.get("/")
    assert overview.status_code == 200
    assert "Drift signals" in overview.text and "▼ regression" in overview.text
    assert 'class="signal-link" href="/signals/' in overview.text  # the report's table, linked to drill-downs
    traces = acme.get("/traces")
    assert traces.status_code == 200 and len(trace_links(traces.text)) == 50
    assert set(trace_links(traces.text)) <= set(ids["acme"].traces) | set(_lake_traces(ui, "acme"))
    for url in routes(ids["acme"]):
        page = acme.get(url)
        assert page.status_code == 200, (url, page.text[:300])
    signal = acme.get(f"/signals/{ids['acme'].signals[0]}").text
    assert "Pass rate over time" in signal and "rate-chart" in signal and 'class="example-link"' in signal


def test_the_overview_heatmap_shows_each_tested_cells_mde_in_its_tooltip(ui, lake):
    """The heatmap's tooltips (title) carry every tested cell's MDE after correction as the run stored it
    (drift_cells.mde, the detector's DriftCell.mde_adjusted; tests/report/test_cell_power.py checks the figure)."""
    stored = state_rows(lake.data_dir, """
        SELECT c.cluster, c.dimension, c.mde, c.current_n, c.baseline_n FROM drift_cells c
        JOIN drift_runs r USING (tenant_id, run_id)
        JOIN evaluators e ON e.tenant_id = c.tenant_id AND e.fingerprint = c.fingerprint
        WHERE c.tenant_id = 'acme' AND e.name = 'quality' AND c.not_tested IS NULL
        QUALIFY r.as_of = max(r.as_of) OVER ()""")
    assert stored
    overview = ui["acme"].get("/").text
    for cluster, dimension, mde, current_n, baseline_n in stored:
        assert re.search(rf'title="{re.escape(cluster)} × {dimension}: [^"]*tested: MDE {mde:.3f} \(the smallest '
                         rf'drop found with 80 % power after correction; n {current_n} vs {baseline_n}\)', overview)


def _lake_traces(ui, tenant: str) -> list[str]:
    """Trace ids of the first pages of the tenant's table (beyond the sampled ones)."""
    return trace_links(ui[tenant].get("/traces?size=200").text)


def test_ids_of_another_tenant_are_not_found_on_any_route(ui, ids):
    for me, other in (("acme", "umbrella"), ("umbrella", "acme")):
        for url in routes(ids[other]):
            response = ui[me].get(url)
            assert response.status_code == 404, (me, url)
            assert "<table" not in response.text and "<pre>" not in response.text  # nothing of the row shown
        page = ui[me].get("/review").text
        labels = ui[me].post(f"/review/{ids[other].items[0]}/labels",
                             data={"csrf": csrf_of(ui[me].get(f"/review/{ids[me].items[0]}").text),
                                   "label.completeness": "PASS", "critique": "x"})
        assert labels.status_code in (400, 404)  # no reviewer yet (400) or not found (404): never written
        assert not any(i in page for i in ids[other].items)
        listed = ui[me].get("/traces?size=200").text
        assert not set(trace_links(listed)) & set(ids[other].traces)
        overview = ui[me].get("/").text
        assert not any(s in overview for s in ids[other].signals)


def test_a_label_for_another_tenants_item_is_not_found(writable_ui, data_dir, ids):
    acme = writable_ui["acme"]
    page = acme.get(f"/review/{ids['acme'].items[0]}").text
    acme.post("/reviewer", data={"csrf": csrf_of(page), "reviewer": "alice", "next": "/review"})
    response = acme.post(f"/review/{ids['umbrella'].items[0]}/labels",
                         data={"csrf": csrf_of(page), "label.completeness": "FAIL", "critique": "cut off"})
    assert response.status_code == 404
    assert state_rows(data_dir, "SELECT count(*) FROM review_labels")[0][0] == 0


def test_auth_is_required_with_a_token_file(lake, token_file):
    from collector.auth import TokenStore

    tokens = TokenStore.load(token_file)
    anonymous = client(lake.data_dir, Access.create(None, tokens))
    assert anonymous.get("/", headers={"Accept": "application/json"}).status_code == 401
    assert anonymous.get("/", headers=HTML).headers["location"] == "/login"  # a browser is sent to sign in
    assert anonymous.get("/traces", headers={"Authorization": "Bearer not-a-valid-token-at-all"}).status_code == 401
    only_acme = client(lake.data_dir, Access.create(TenantId("acme"), tokens))
    assert only_acme.get("/", headers={"Authorization": f"Bearer {TOKENS['umbrella']}"}).status_code == 403
    assert only_acme.get("/traces", headers={"Authorization": f"Bearer {TOKENS['acme']}"}).status_code == 200
    # The login form sets the token cookie; later requests need no header.
    login = anonymous.get("/login")
    assert login.status_code == 200
    signed = anonymous.post("/login", data={"csrf": csrf_of(login.text), "token": TOKENS["acme"]})
    assert signed.status_code == 303 and anonymous.get("/traces").status_code == 200
    bad = client(lake.data_dir, Access.create(None, tokens))
    page = bad.get("/login")
    assert bad.post("/login", data={"csrf": csrf_of(page.text), "token": "wrong-token-0123456789"}).status_code == 401


@pytest.mark.parametrize("secure", [False, True])
def test_the_login_cookie_holds_a_sign_in_id_not_the_token(lake, token_file, secure):
    from collector.auth import TokenStore

    browser = client(lake.data_dir, Access.create(None, TokenStore.load(token_file), secure_cookies=secure))
    browser.base_url = "https://testserver" if secure else browser.base_url  # a client sends Secure cookies over TLS only
    signed = browser.post("/login", data={"csrf": csrf_of(browser.get("/login").text), "token": TOKENS["acme"]})
    assert signed.status_code == 303
    cookie = next(c for c in signed.headers.get_list("set-cookie") if c.startswith("verdict_ui_token="))
    value = cookie.split(";")[0].split("=", 1)[1]
    assert TOKENS["acme"] not in cookie and len(value) >= 32
    attributes = {a.strip().split("=")[0].lower() for a in cookie.split(";")[1:]}
    assert {"max-age", "httponly", "samesite"} <= attributes
    assert ("secure" in attributes) == secure
    assert browser.get("/traces").status_code == 200  # the id signs the browser in
    stranger = client(lake.data_dir, Access.create(None, TokenStore.load(token_file)))
    stranger.cookies.set("verdict_ui_token", value)  # an id is this server's only: another process knows none
    assert stranger.get("/traces", headers={"Accept": "application/json"}).status_code == 401


def test_wrong_tokens_from_one_address_back_off(lake, token_file, monkeypatch):
    from collector.auth import TokenStore
    from verdict_ui import sign_in

    monkeypatch.setattr(sign_in, "FIRST_BACKOFF_SECONDS", 60.0)  # a back-off no slow machine outlasts
    browser = client(lake.data_dir, Access.create(None, TokenStore.load(token_file)))

    def attempt(token: str):
        return browser.post("/login", data={"csrf": csrf_of(browser.get("/login").text), "token": token})

    for _ in range(sign_in.FREE_FAILURES - 1):
        assert attempt("wrong-token-0123456789").status_code == 401
    assert attempt(TOKENS["acme"]).status_code == 303  # a right token clears the address's record
    for _ in range(sign_in.FREE_FAILURES):
        assert attempt("wrong-token-0123456789").status_code == 401
    refused = attempt(TOKENS["acme"])  # not even checked during the back-off
    assert refused.status_code == 429 and 1 <= int(refused.headers["retry-after"]) <= 60
    assert "try again" in refused.text


def test_a_foreign_host_header_is_refused_on_loopback(lake):
    """DNS rebinding: a page of another site must not reach the loopback server under its own name."""
    local = client(lake.data_dir, Access.create(TenantId("acme"), None), hosts=("127.0.0.1", "localhost"))
    assert local.get("/healthz", headers={"Host": "evil.example"}).status_code == 400
    assert local.get("/healthz", headers={"Host": "127.0.0.1:8765"}).status_code == 200


def test_the_cli_refuses_a_non_loopback_bind_without_tokens(lake, capsys):
    from verdict_daemon.cli import main

    code = main(["ui", "--data-dir", str(lake.data_dir), "--host", "0.0.0.0", "--port", "0"])
    err = capsys.readouterr().err
    assert code == 2 and '"code": "invalid_config"' in err and "requires a token file" in err


def test_the_cli_refuses_a_missing_data_dir_and_an_invalid_tenant(tmp_path, capsys):
    from verdict_daemon.cli import main

    assert main(["ui", "--data-dir", str(tmp_path / "missing"), "--port", "0"]) == 2
    assert "not an existing directory" in capsys.readouterr().err
    assert main(["ui", "--data-dir", str(tmp_path), "--tenant", "Bad Tenant!", "--port", "0"]) == 3
    assert '"code": "invalid_tenant"' in capsys.readouterr().err


def test_csrf_is_refused(writable_ui, data_dir, ids):
    acme, umbrella = writable_ui["acme"], writable_ui["umbrella"]
    item = ids["acme"].items[0]
    page = acme.get(f"/review/{item}").text
    assert acme.post("/reviewer", data={"csrf": csrf_of(page), "reviewer": "alice"}).status_code == 303
    form = {"label.completeness": "FAIL", "critique": "cut off"}
    missing = acme.post(f"/review/{item}/labels", data=form)
    foreign = acme.post(f"/review/{item}/labels",  # a token minted for another browser session
                        data={**form, "csrf": csrf_of(umbrella.get(f"/review/{ids['umbrella'].items[0]}").text)})
    assert missing.status_code == foreign.status_code == 403 and "CSRF" in missing.text
    assert acme.post("/reviewer", data={"reviewer": "mallory"}).status_code == 403
    assert state_rows(data_dir, "SELECT count(*) FROM review_labels")[0][0] == 0
    # the same form with its own token is recorded
    dims = re.findall(r'name="label\.([a-z_]+)" value="PASS"', acme.get(f"/review/{item}").text)
    accepted = acme.post(f"/review/{item}/labels",
                         data={"csrf": csrf_of(page), **{f"label.{d}": "PASS" for d in dims}, "critique": "fine"})
    assert accepted.status_code == 303
    assert state_rows(data_dir, "SELECT count(*) FROM review_labels")[0][0] == len(dims) > 0


@pytest.mark.parametrize(("url", "message"), [
    ("/traces?size=abc", "size: expected a whole number"),
    ("/traces?size=0", "size: must lie in [1, 200]"),
    ("/traces?size=99999999999999999999999", "size: must lie in [1, 200]"),
    ("/traces?from=yesterday", "from: expected an ISO date"),
    ("/traces?from=2026-11-20&to=2026-11-19", "from must be before to"),
    ("/traces?verdict=MAYBE", "verdict: expected one of PASS"),
    ("/traces?before=12345", "before: expected the cursor"),
    ("/traces?before=1~%27%3B%20DROP", "before: not a valid id"),
    ("/traces?intent=" + "x" * 300, "intent: at most 200"),
    ("/traces?q=%00%01", "q: at most 200 printable"),
    ("/traces/abc%20def", "trace id: not a valid id"),
    ("/traces/abc?day=someday", "day: expected an ISO date"),
    ("/signals/%27%20OR%201%3D1", "signal id: not a valid id"),
    ("/review?status=everything", "status: expected one of all, pending, labelled"),
    ("/review?offset=-1", "offset: must lie in"),
    ("/review/a%20b", "item id: not a valid id"),
])
def test_malformed_parameters_are_a_400_with_a_message(ui, url, message):
    response = ui["acme"].get(url)
    assert response.status_code == 400, response.text[:300]
    assert html.escape(message, quote=True) in response.text or message in html.unescape(response.text)


def test_a_malformed_form_is_a_400(writable_ui, ids):
    acme = writable_ui["acme"]
    item = ids["acme"].items[0]
    page = acme.get(f"/review/{item}").text
    token = csrf_of(page)
    assert acme.post("/reviewer", data={"csrf": token, "reviewer": "-bad name"}).status_code == 400
    acme.post("/reviewer", data={"csrf": token, "reviewer": "alice"})
    for form, message in (({"label.completeness": "MAYBE", "critique": "x"}, "exactly PASS or FAIL"),
                          ({"label.completeness": "FAIL", "critique": ""}, "critique must be one non-empty line"),
                          ({"label.nonsense": "PASS", "critique": "x"}, "were not judged on item"),
                          ({"critique": "x"}, "at least one dimension label")):
        response = acme.post(f"/review/{item}/labels", data={"csrf": token, **form})
        assert response.status_code == 400 and message in html.unescape(response.text), (form, response.text[:200])
    huge = acme.post(f"/review/{item}/labels", content=b"a=" + b"x" * 70_000,
                     headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert huge.status_code == 400 and "limited to" in huge.text


def test_blind_labelling_then_the_judges_view_and_agreement(writable_ui, data_dir, ids):
    acme = writable_ui["acme"]
    item = ids["acme"].items[0]
    [(trace, rationale)] = state_rows(
        data_dir, "SELECT i.trace_id, max(v.reason) FROM review_items i JOIN dimension_verdicts v ON "
        "v.tenant_id = i.tenant_id AND v.attempt_id = i.item_id WHERE i.item_id = $i GROUP BY 1", i=item)
    first = acme.get(f"/review/{item}").text
    assert 'id="reviewer"' in first and 'id="blind"' in first  # a name prompt, and the judge hidden
    acme.post("/reviewer", data={"csrf": csrf_of(first), "reviewer": "alice"})
    before = acme.get(f"/review/{item}").text
    assert 'id="label-form"' in before and 'id="blind"' in before
    assert "judge-view" not in before and "No labels yet" not in before  # nothing of the judge's yet
    assert rationale not in before and f'href="/traces/{trace}' not in before  # nor a link to its verdicts
    dims = re.findall(r'name="label\.([a-z_]+)" value="PASS"', before)
    acme.post(f"/review/{item}/labels", data={"csrf": csrf_of(before), **{f"label.{d}": "FAIL" for d in dims},
                                              "critique": "answer stops mid-sentence"})
    after = acme.get(f"/review/{item}").text
    assert 'id="blind"' not in after and "judge-view" in after and html.escape(rationale) in after
    assert "Judge–human agreement" in after and 'class="agreement-n">1<' in after
    # the label went through record_labels: the same records `verdict review show` reads
    rows = state_rows(data_dir, "SELECT dimension, label, reviewer, critique FROM review_labels ORDER BY 1")
    assert rows == [(d, "FAIL", "alice", "answer stops mid-sentence") for d in sorted(dims)]
    assert f'href="/traces/{trace}' in after  # the trace link, now that the judge's view is open


def test_trace_detail_shows_conversation_verdicts_attempts_and_spans(ui, ids, lake):
    acme = ui["acme"]
    trace = ids["acme"].judged_traces[0]
    page = acme.get(f"/traces/{trace}").text
    for part in ("Conversation", "Judge verdicts", "Judge attempts", "Span tree", "span-bar", "role-user",
                 "role-assistant", "gpt-4o-mini"):
        assert part in page, part
    [(fingerprints,)] = state_rows(lake.data_dir, "SELECT list(DISTINCT fingerprint ORDER BY fingerprint) FROM "
                                   "judgment_attempts WHERE trace_id = $t", t=trace)
    assert all(fp in page for fp in fingerprints)  # every attempt with its evaluator fingerprint


def test_evidence_the_rationale_quotes_is_highlighted_in_the_answer(ui, lake):
    """The report judge's completeness rationale quotes the answer's ending (tests/report/judges.py)."""
    [(trace, reason)] = state_rows(lake.data_dir, """
        SELECT a.trace_id, v.reason FROM judgment_attempts a JOIN dimension_verdicts v USING (tenant_id, attempt_id)
        WHERE a.tenant_id = 'acme' AND v.dimension = 'completeness' AND v.reason LIKE 'the answer ends with ''%'
        ORDER BY a.trace_id LIMIT 1""")
    quoted = reason.split("'")[1]
    page = ui["acme"].get(f"/traces/{trace}").text
    answer = page.split('class="msg role-assistant"', 1)[1].split("</div>", 1)[0]
    assert f"<mark>{safe(quoted)}</mark>" in answer  # matched as shown: redacted and escaped


def test_stored_content_is_escaped_and_redacted(ui):
    acme = ui["acme"]
    hostile = f"{0xbad0:032x}"
    page = acme.get(f"/traces/{hostile}").text
    assert "<script>alert" not in page and "&lt;script&gt;alert" in page
    assert "bob@example.com" not in page and HOSTILE_ANSWER not in page
    assert 'onerror="alert' not in page


def test_an_error_attempt_shows_the_models_kept_reply_redacted_and_escaped(writable_ui, data_dir):
    """A judge whose reply cannot be read leaves an ERROR attempt whose reason keeps the reply (redacted at
    judging); the trace page shows it, as text, under the verdicts and the attempts."""
    from verdict.judges.judge import Judge
    from verdict.models.scripted import ScriptedModel
    from verdict_daemon.config import Judging
    from verdict_daemon.service.judge_evaluators import JudgeEvaluator
    from verdict_daemon.service.judging import judge
    from verdict_daemon.store.state import StateStore

    ramble = "<b onclick=\"alert(1)\">Looks fine</b> to me; ask carol@example.com"
    evaluator = JudgeEvaluator("rambler", Judge(ScriptedModel([ramble], name="scripted/ramble"), retries=0),
                               {"kind": "rubric"})
    report = judge(StateStore(data_dir), TenantId("acme"), evaluator, Judging(concurrency=1, budget={"max_calls": 1}),
                   "ramble-run")
    assert report.errors == 1
    [(trace, message)] = state_rows(data_dir, "SELECT trace_id, error_message FROM judgment_attempts WHERE "
                                    "fingerprint = $fp", fp=evaluator.fingerprint)
    kept = '<b onclick="alert(1)">Looks fine</b> to me; ask <EMAIL>'
    assert message.endswith(f"the reply (redacted): {kept}")  # as stored
    page = writable_ui["acme"].get(f"/traces/{trace}").text
    verdicts = page.split("Judge verdicts", 1)[1].split("Judge attempts", 1)[0]
    attempts = page.split("Judge attempts", 1)[1]
    for section in (verdicts, attempts):
        assert f"the reply (redacted): {safe(kept)}" in section
    assert 'onclick="alert(1)"' not in page and "carol@example.com" not in page


def test_trace_filters_and_paging(ui):
    acme = ui["acme"]
    failing = acme.get("/traces?verdict=FAIL&size=200").text
    assert trace_links(failing) and "not judged" not in failing and "FAIL " in failing
    search = acme.get("/traces?intent=search.v1&size=200").text
    assert trace_links(search) and set(re.findall(r"intent=[^\"]+\">([a-z]+\.v1)</a>", search)) == {"search.v1"}
    text = acme.get("/traces?q=ONERROR").text  # case-insensitive substring of the stored messages
    assert set(trace_links(text)) == {f"{0xbad0 + i:032x}" for i in range(3)}
    first = acme.get("/traces?size=20").text
    found = re.search(r'rel="next" href="/traces\?([^"]+)"', first)
    assert found is not None, first
    cursor = html.unescape(found.group(1))
    second = acme.get(f"/traces?{cursor}").text
    assert len(trace_links(second)) == 20 and not set(trace_links(first)) & set(trace_links(second))
    assert acme.get(f"/traces?model={quote('no-such-model')}").text.count("No model call matches") == 1


def test_local_mode_serves_one_tenant_without_tokens(lake, ids):
    local = client(lake.data_dir, Access.create(TenantId("acme"), None))
    assert local.get(f"/traces/{ids['acme'].judged_traces[0]}").status_code == 200
    assert local.get(f"/traces/{ids['umbrella'].judged_traces[0]}").status_code == 404
    nobody = client(lake.data_dir, Access.create(LOCAL_TENANT, None))
    assert nobody.get("/").status_code == 404  # the local tenant has nothing in this data dir
    assert nobody.get("/traces").status_code == 200 and "No model call in the span lake yet" in nobody.get("/traces").text


def test_security_headers(ui):
    response = ui["acme"].get("/")
    assert "script-src 'self'" in response.headers["content-security-policy"]
    assert response.headers["x-frame-options"] == "DENY" and response.headers["cache-control"] == "no-store"
    session = response.headers["set-cookie"]
    assert "HttpOnly" in session and "SameSite=Strict" in session


def test_paging_walks_every_trace_once_across_date_partitions(ui, lake):
    """Pages read one date partition at a time from the newest; walked to the end they hold every trace with a
    model call exactly once, newest first (checked against `verdict sql`'s llm_calls)."""
    from collector.sql import execute

    _, expected = execute(lake.data_dir, "acme", "SELECT trace_id FROM llm_calls GROUP BY trace_id "
                                                 "ORDER BY min(start_time) DESC, trace_id DESC")
    seen: list[str] = []
    url: str | None = "/traces?size=200"
    while url:
        page = ui["acme"].get(url).text
        seen += trace_links(page)
        nxt = re.search(r'rel="next" href="(/traces\?[^"]+)"', page)
        url = html.unescape(nxt.group(1)) if nxt else None
    assert seen == [t for (t,) in expected] and len(seen) > 5 * 200  # several pages, across days


def test_the_cli_serves_on_a_free_port_and_stops_cleanly_on_sigterm(lake):
    import urllib.error
    import urllib.request

    from tests.ui.conftest import start_server

    def get(url: str, **headers) -> tuple[int, str]:
        try:
            with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=30) as response:
                return response.status, response.read().decode()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read().decode()

    process, url = start_server(lake.data_dir, "--tenant", "acme")
    try:
        assert get(f"{url}/healthz") == (200, "ok\n")
        status, overview = get(f"{url}/")
        assert status == 200 and "Overview — acme" in overview
        assert get(f"{url}/healthz", Host="attacker.example")[0] == 400
    finally:
        process.terminate()
        assert process.wait(timeout=30) == 0  # documented: 0 after Ctrl-C / SIGTERM


def test_every_signal_of_the_overview_opens_its_drill_down(ui, ids):
    overview = ui["acme"].get("/").text
    linked = re.findall(r'class="signal-link" href="/signals/([0-9A-Za-z_.:-]+)"', overview)
    assert sorted(linked) == sorted(ids["acme"].signals)
    for signal_id in linked:
        page = ui["acme"].get(f"/signals/{signal_id}")
        assert page.status_code == 200 and "Examples stored with the signal" in page.text


def test_the_name_form_never_redirects_off_site(writable_ui, ids):
    acme = writable_ui["acme"]
    token = csrf_of(acme.get(f"/review/{ids['acme'].items[0]}").text)
    for target in ("//evil.example/", "/\\evil.example", "https://evil.example/", "/traces/../../x", "/review\n",
                   "/review?next=https://evil.example/", "/review?x=//evil.example", "/review/a?\r\nSet-Cookie: x=1",
                   "/review?", "/review/..?status=all", "/review#x", "/review?x=@evil.example"):
        response = acme.post("/reviewer", data={"csrf": token, "reviewer": "alice", "next": target})
        assert response.status_code == 303 and response.headers["location"] == "/review", target
    back = acme.post("/reviewer", data={"csrf": token, "reviewer": "alice", "next": f"/review/{ids['acme'].items[0]}"})
    assert back.headers["location"] == f"/review/{ids['acme'].items[0]}"
    queue = f"/review/{ids['acme'].items[0]}?signal={ids['acme'].signals[0]}"  # an item inside a signal's queue
    assert acme.post("/reviewer", data={"csrf": token, "reviewer": "alice", "next": queue}).headers["location"] == queue


def test_a_trace_across_midnight_shows_all_its_spans_with_the_day_hint(tmp_path):
    """The table links a call with its date partition; a trace running over midnight (its root span from
    23:59:50 to 00:00:40, one call on each side) is whole on the page from either call's link."""
    from datetime import UTC, datetime

    from tests.daemon.lakes import span_row, write_rows

    trace = "ab" * 16
    root = span_row(trace, datetime(2026, 11, 19, 23, 59, 50, tzinfo=UTC), intent="late.v1", query="q0",
                    answer="a0.", span_id="0" * 16)
    root.update(end_time=root["start_time"] + 50 * 10**9, operation=None, name="agent run")
    calls = [span_row(trace, datetime(2026, 11, d, h, m, s, tzinfo=UTC), intent="late.v1", query=f"q{d}",
                      answer=f"a{d}.", span_id=str(d) * 4 + "c" * 8) for d, h, m, s in ((19, 23, 59, 55), (20, 0, 0, 30))]
    for call in calls:
        call["parent_span_id"] = "0" * 16
    write_rows(tmp_path, "acme", [root, *calls])
    local = client(tmp_path, Access.create(TenantId("acme"), None))
    for day in ("2026-11-19", "2026-11-20"):
        page = local.get(f"/traces/{trace}?day={day}").text
        assert all(part in page for part in ("agent run", "19" * 4 + "c" * 8, "20" * 4 + "c" * 8)), day
    assert local.get(f"/traces/{trace}?day=2026-11-01").status_code == 200  # a wrong hint: every partition


def test_a_stored_cluster_id_in_a_page_title_is_escaped(data_dir, server):
    """A signal whose cluster id is markup (parse_cluster_id admits any printable text): the real server's
    signal page carries it escaped in <title> and <h1>, never as markup."""
    import urllib.request

    con = duckdb.connect(str(data_dir / "state.duckdb"))
    try:
        columns = [c for (c,) in con.execute("SELECT column_name FROM duckdb_columns() "
                                             "WHERE table_name = 'drift_signals' ORDER BY column_index").fetchall()]
        chosen = ", ".join({"signal_id": "'sig-hostile'", "cluster": "'<script>alert(1)</script>'"}.get(c, c)
                           for c in columns)
        con.execute(f"INSERT INTO drift_signals SELECT {chosen} FROM drift_signals WHERE tenant_id = 'acme' LIMIT 1")
    finally:
        con.close()
    with urllib.request.urlopen(f"{server}/signals/sig-hostile", timeout=60) as response:
        text = response.read().decode()
    assert "<script>alert(1)</script>" not in text
    title = re.search(r"<title>(.*?)</title>", text, re.S)
    assert title is not None and "&lt;script&gt;alert(1)&lt;/script&gt;" in title.group(1)


def test_the_overview_marks_cells_below_min_usable_as_not_tested(small_lake):
    """The overview shows the report's heatmap: a cell with fewer usable judgments in the current window than
    the run's min_usable (30) says it was not tested, with the window that would make it testable, and the
    run line says why its other cells were not tested."""
    overview = client(small_lake, Access.create(TenantId("umbrella"), None)).get("/")
    assert overview.status_code == 200
    marks = re.findall(r"not tested: n=(\d+) &lt; min_usable 30; a (\d+)-day window would reach it", overview.text)
    assert marks and all(int(n) < 30 and int(days) > 1 for n, days in marks)
    assert "not tested for fewer than 30 usable judgments in the current window" in overview.text
