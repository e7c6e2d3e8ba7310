"""The trace table as one row per trace, and the trace page's span tree (issue 29, item 5).

The tree is checked on agent runs recorded from real packages (tests/fixtures/dialects: Vercel AI 7 with a tool,
CrewAI and smolagents through OpenInference, Strands, Google ADK, LangGraph through OpenLLMetry) replayed through the real collector
process: every span appears once, at the depth its parent chain gives, model calls link to their messages and
tool calls show their name, arguments and result. Lakes written with the collector's segment writer
(tests/daemon/lakes.py) give the cases no recording has: several calls per trace, a run over midnight, a
parent cycle, a chain deeper than Python's recursion limit allows for recursive drawing, hostile tool arguments.
"""

from __future__ import annotations

import html
import json
import re
from datetime import UTC, datetime
from html.parser import HTMLParser
from pathlib import Path

import pytest

from collector.views import open_scoped
from tests.daemon.lakes import span_row, write_rows
from tests.ui.conftest import client
from tests.ui.test_app import trace_links
from verdict.tenancy import TenantId, validate_tenant_id
from verdict_ui.access import Access
from verdict_ui.span_tree import TOOL_CHARS
from verdict_ui.traces import MAX_SPANS

FIXTURES = Path(__file__).parents[1] / "fixtures" / "dialects"
# sender -> (model calls per run, tool spans per run, whether its tool spans carry the arguments)
AGENTS = {"vercel-ai-7-tool": (2, 1, True), "crewai-openinference": (2, 1, True), "strands-latest": (2, 1, True),
          "smolagents-openinference": (2, 2, True), "google-adk": (2, 1, False), "langgraph-openllmetry": (1, 0, False)}
RESULT = "two charges of 12.00 EUR on 2026-12-01"


class Tree(HTMLParser):
    """The span tree of a trace page as (depth, kind, name, tool text) per drawn span, in document order."""

    def __init__(self) -> None:
        super().__init__()
        self.depth = -1
        self.nodes: list[dict] = []
        self.field: str | None = None

    def handle_starttag(self, tag, attrs):
        css = dict(attrs).get("class") or ""
        if tag == "ol" and "span-tree" in css:
            self.depth += 1
        elif tag == "div" and "span-node" in css:
            self.nodes.append({"depth": self.depth, "kind": css.split("k-")[1], "name": "", "tool": "",
                               "href": None})
            self.field = "name"
        elif tag == "span" and css in ("kind-tag", "span-ms"):
            self.field = None
        elif tag == "a" and css == "call-link":
            self.nodes[-1]["href"] = dict(attrs)["href"]
        elif tag == "details" and css == "tool-call":
            self.field = "tool"

    def handle_endtag(self, tag):
        if tag == "ol" and self.depth >= 0:
            self.depth -= 1
        elif tag in ("span", "a") and self.field is None and self.nodes:
            self.field = "name"
        elif tag in ("div", "details"):
            self.field = None

    def handle_data(self, data):
        if self.field and self.nodes:
            self.nodes[-1][self.field] += data


def drawn(page: str) -> list[dict]:
    section = page.split('<section id="timeline"', 1)[1].split("</section>", 1)[0]
    parser = Tree()
    parser.feed(section)
    for node in parser.nodes:
        node["name"] = " ".join(node["name"].split())
    return parser.nodes


@pytest.fixture(scope="module")
def agents(tmp_path_factory, request) -> Path:
    from tests.collector.conftest import replay_recordings

    manifests = {s: json.loads((FIXTURES / s / "manifest.json").read_text()) for s in AGENTS}
    return replay_recordings(tmp_path_factory.mktemp("agent-trees") / "data",
                             {s: [FIXTURES / s / name for name in manifests[s]["arrival_order"]] for s in AGENTS},
                             request)


def _depths(data_dir: Path, sender: str, trace: str) -> dict[str, int]:
    """span name -> depth by its parent chain, read from the lake (not through the UI)."""
    con = open_scoped(data_dir, validate_tenant_id(sender))
    try:
        rows = con.execute("SELECT span_id, parent_span_id, name FROM spans WHERE trace_id = $t", {"t": trace}).fetchall()
    finally:
        con.close()
    parent = {s: p for s, p, _ in rows}

    def depth(span: str) -> int:
        return 0 if parent[span] not in parent else 1 + depth(parent[span])

    return {" ".join(name.split()) + f"#{span}": depth(span) for span, _, name in rows}


@pytest.mark.parametrize("sender", AGENTS)
def test_a_recorded_agent_run_is_drawn_as_its_span_tree(agents, sender):
    calls, count, with_arguments = AGENTS[sender]
    ui = client(agents, Access.create(TenantId(sender), None))
    listing = ui.get("/traces").text
    traces = trace_links(listing)
    assert len(traces) == 2, sender  # two runs, one row each (with their model calls summed up)
    assert listing.count(f"{calls} call{'s' if calls > 1 else ''} · ") == 2, sender
    for trace in traces:
        page = ui.get(f"/traces/{trace}").text
        nodes = drawn(page)
        expected = _depths(agents, sender, trace)
        assert len(nodes) == len(expected), sender  # every span once
        assert sorted((n["depth"], n["name"]) for n in nodes) == sorted(
            (d, key.rsplit("#", 1)[0]) for key, d in expected.items()), sender  # each span at its parent chain's depth
        assert max(n["depth"] for n in nodes) >= 2, sender  # agent → (step →) model call / tool
        models = [n for n in nodes if n["kind"] == "model"]
        assert len(models) == calls, sender
        for model in models:  # each links to its call's messages on the page
            assert re.fullmatch(r"#call-[0-9a-f]{16}", model["href"]), model
            assert f'id="{model["href"][1:]}"' in page
        tools = [n for n in nodes if n["kind"] == "tool"]
        assert len(tools) == count and all(t["depth"] > 0 for t in tools), (sender, nodes)
        if tools:
            assert "lookup_charge" in tools[0]["tool"], tools[0]
        if with_arguments:
            assert '"card_last4": "1111"' in html.unescape(tools[0]["tool"]), tools[0]  # the arguments, pretty-printed
        assert any(n["kind"] == "agent" for n in nodes), (sender, nodes)


def test_the_vercel_tool_call_shows_its_result_under_its_step(agents):
    ui = client(agents, Access.create(TenantId("vercel-ai-7-tool"), None))
    trace = trace_links(ui.get("/traces").text)[0]
    nodes = drawn(ui.get(f"/traces/{trace}").text)
    assert [(n["depth"], n["kind"]) for n in nodes] == [(0, "agent"), (1, "span"), (2, "model"), (2, "tool"),
                                                        (1, "span"), (2, "model")]
    assert RESULT in nodes[3]["tool"]


def _lake_with_runs(root: Path) -> dict[str, list[dict]]:
    """Tenant acme: run A (an agent span over three calls, one failed), run B over midnight (a call each side),
    run C (one call)."""
    def call(trace, at, n, *, status="UNSET", parent=None, tokens=(10, 5)):
        row = span_row(trace, at, intent="billing.v1", query=f"question {trace[:2]} {n}", answer=f"answer {trace[:2]} {n}.",
                       span_id=f"{trace[:2]}{n:014x}", status=status)
        row.update(parent_span_id=parent, input_tokens=tokens[0], output_tokens=tokens[1])
        return row

    a, b, c = "a" * 32, "b" * 32, "c" * 32
    agent = span_row(a, datetime(2026, 11, 19, 12, 0, 0, tzinfo=UTC), intent=None, query="", answer="", span_id="a" * 16)
    agent.update(operation="invoke_agent", name="invoke_agent support", end_time=agent["start_time"] + 4 * 10**9,
                 input_messages=None, output_messages=None)
    runs = {
        a: [agent, *(call(a, datetime(2026, 11, 19, 12, 0, n, tzinfo=UTC), n, parent="a" * 16,
                          status="ERROR" if n == 2 else "UNSET") for n in (1, 2, 3))],
        b: [call(b, datetime(2026, 11, 19, 23, 59, 58, tzinfo=UTC), 1), call(b, datetime(2026, 11, 20, 0, 0, 2, tzinfo=UTC), 2)],
        c: [call(c, datetime(2026, 11, 20, 8, 0, 0, tzinfo=UTC), 1, tokens=(7, 3))],
    }
    write_rows(root, "acme", [r for rows in runs.values() for r in rows])
    return runs


def test_the_table_has_one_row_per_trace_with_its_calls_summed(tmp_path):
    """On the code before, run A was three rows and B two (one per model call)."""
    _lake_with_runs(tmp_path)
    ui = client(tmp_path, Access.create(TenantId("acme"), None))
    a, b, c = "a" * 32, "b" * 32, "c" * 32
    assert trace_links(ui.get("/traces").text) == [c, b, a]  # newest first by first call, each once
    for size in (1, 2):  # paging by keyset, across the midnight partition boundary
        seen: list[str] = []
        url: str | None = f"/traces?size={size}"
        while url:
            page = ui.get(url).text
            seen += trace_links(page)
            nxt = re.search(r'rel="next" href="(/traces\?[^"]+)"', page)
            url = html.unescape(nxt.group(1)) if nxt else None
        assert seen == [c, b, a], size
    rows = {r["trace_id"]: r for r in json.loads(ui.get("/traces?format=json").text)["rows"]}
    assert (rows[a]["calls"], rows[a]["input_tokens"], rows[a]["output_tokens"]) == (3, 30, 15)
    assert (rows[a]["status_code"], rows[a]["errors"]) == ("ERROR", 1)  # the worst call's status, and how many
    assert rows[a]["latency_ms"] == pytest.approx(4000)  # the trace's span: the agent span, not a call's 50 ms
    assert rows[a]["question"] == "question aa 1" and rows[a]["answer"] == "answer aa 3."  # first ask, last answer
    assert rows[b]["calls"] == 2 and rows[b]["day"] == "2026-11-19" and rows[b]["latency_ms"] == pytest.approx(4050)
    assert (rows[c]["calls"], rows[c]["input_tokens"], rows[c]["latency_ms"]) == (1, 7, pytest.approx(50))
    assert rows[c]["worst"] is None and rows[c]["verdicts"] == {}
    on_the_20th = trace_links(ui.get("/traces?date=2026-11-20").text)  # a filter on calls: B matches by its second
    assert on_the_20th == [c, b]
    assert trace_links(ui.get("/traces?q=question%20aa%202").text) == [a]  # a trace matches by any of its calls


def _tool_span(trace: str, n: int, parent: str | None, **attributes) -> dict:
    row = span_row(trace, datetime(2026, 11, 19, 12, 0, 0, tzinfo=UTC), intent=None, query="", answer="",
                   span_id=f"{n:016x}")
    row.update(parent_span_id=parent, operation="execute_tool", name=f"execute_tool {n}", input_messages=None,
               output_messages=None, attributes=json.dumps(attributes), start_time=row["start_time"] + n * 1000)
    return row


def test_hostile_tool_arguments_are_escaped_redacted_and_bounded(tmp_path):
    trace = "d" * 32
    hostile = {"html": "<script>alert('x')</script><img src=x onerror=alert(1)>", "mail": "write to eve@example.com",
               "long": "y" * (TOOL_CHARS + 500)}
    rows = [_tool_span(trace, 1, None, **{"gen_ai.tool.name": "<b>lookup</b>",
                                          "gen_ai.tool.call.arguments": json.dumps(hostile),
                                          "gen_ai.tool.call.result": "<iframe src=//evil></iframe> done"})]
    write_rows(tmp_path, "acme", rows)
    page = client(tmp_path, Access.create(TenantId("acme"), None)).get(f"/traces/{trace}").text
    tool = page.split('<details class="tool-call">', 1)[1].split("</details>", 1)[0]
    assert "<script>" not in page and "<iframe" not in page and "<b>lookup" not in page and "<img" not in page
    assert "&lt;script&gt;alert" in tool and "&lt;b&gt;lookup&lt;/b&gt;" in tool and "&lt;iframe" in tool
    assert "eve@example.com" not in page and "&lt;EMAIL&gt;" in tool  # redacted again on the page
    assert "more characters)" in tool and "y" * (TOOL_CHARS + 1) not in tool  # bounded, and says so


def test_a_deep_chain_and_a_parent_cycle_draw_every_span_once(tmp_path):
    """A chain as deep as the spans drawn (a recursive drawing would exceed Python's recursion limit) and two
    spans naming each other as parent (no root reaches them): each span appears exactly once."""
    trace = "e" * 32
    chain = [_tool_span(trace, n, f"{n - 1:016x}" if n > 1 else None) for n in range(1, MAX_SPANS - 1)]
    cycle = [_tool_span(trace, 9000, f"{9001:016x}"), _tool_span(trace, 9001, f"{9000:016x}")]
    write_rows(tmp_path, "acme", chain + cycle)
    page = client(tmp_path, Access.create(TenantId("acme"), None)).get(f"/traces/{trace}").text
    nodes = drawn(page)
    assert len(nodes) == len(chain) + 2
    assert [n["depth"] for n in nodes[:len(chain)]] == list(range(len(chain)))
    assert sorted(n["depth"] for n in nodes[len(chain):]) == [0, 1]  # the cycle hangs from its earliest span
    section = page.split('<section id="timeline"', 1)[1].split("</section>", 1)[0]
    assert section.count('<ol class="span-tree">') == section.count("</ol>") and section.count("<li>") == section.count("</li>")
