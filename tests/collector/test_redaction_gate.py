"""The collector's compiled redaction gates (verdict/redact/_gate.c: `content_keys`, `structural`,
`token_shaped`) decide exactly as the Python they replace (`ServerRedaction._content`, the
`structural` method, `_token_shaped`): on attribute maps with structural and other keys, strings
around the token limit, spaces, `@`, control and non-ASCII characters (printable or not), small
and large integers, bools, floats, None, lists, maps, bytes and str/int subclasses."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from collector import redaction
from collector.redaction import (
    _MAX_TOKEN,
    STRUCTURAL_KEYS,
    ServerRedaction,
    _token_shaped,
    is_structural,
)
from tests.redact.test_gates import run_without_gate

_gate = pytest.importorskip("verdict.redact._gate", reason="not built: python setup.py build_ext --inplace")


class _Str(str):
    pass


class _Int(int):
    pass


_STRUCTURAL = sorted(STRUCTURAL_KEYS)[:12] + ["gen_ai.usage.input_tokens"]
_OTHER = ["user.note", "db.password", "http.request.header.authorization", "x"]
_token_chars = st.sampled_from(list("ab-_.:/0Z") + [" ", "@", "\t", "\n", "\x7f", "\x00", "é", "\u200b", "\u2028",
                                                    "\U0001f600", "\ud800", "\xa0"])  # fmt: skip
tokens = st.one_of(
    st.lists(_token_chars, max_size=8).map("".join),
    st.integers(_MAX_TOKEN - 2, _MAX_TOKEN + 2).map(lambda n: "a" * n),
    st.integers(_MAX_TOKEN - 2, _MAX_TOKEN + 2).map(lambda n: "é" * n),
    st.text(max_size=12),
    st.sampled_from(["gpt-4o-mini", "chatcmpl-0a1b", "stop", "jane@example.com", "a sentence", ""]),
)
values = st.one_of(
    tokens, st.booleans(), st.floats(allow_nan=False), st.none(),
    st.integers(-(10**6) - 2, -(10**6) + 2), st.integers(10**6 - 2, 10**6 + 2), st.integers(-(2**70), 2**70),
    st.lists(tokens, max_size=3), st.lists(st.one_of(tokens, st.integers()), max_size=3),
    st.dictionaries(st.text(max_size=3), tokens, max_size=2), st.binary(max_size=4), st.tuples(tokens),
    tokens.map(_Str), st.integers().map(_Int),
)  # fmt: skip
attribute_maps = st.dictionaries(st.sampled_from(_STRUCTURAL + _OTHER), values, max_size=8)


@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=tokens)
@example(text="a" * _MAX_TOKEN)
@example(text="a" * (_MAX_TOKEN + 1))
@example(text="\u2028")  # not printable, not ASCII
def test_token_shaped_compiled_equals_python(text: str) -> None:
    assert redaction.token_shaped(text) is _token_shaped(text)


@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(attrs=attribute_maps)
@example(attrs={"gen_ai.request.model": "gpt-4o", "gen_ai.usage.input_tokens": 999_999, "user.note": 999_999})
@example(attrs={"gen_ai.usage.input_tokens": 1_000_000, "user.note": 1_000_000, "x": -1_000_000})
@example(attrs={"gen_ai.response.finish_reasons": ["stop", "a b"], "gen_ai.request.model": _Str("m")})
def test_content_keys_compiled_equals_the_python_loop(attrs: dict) -> None:
    server = ServerRedaction.create("content", "never")
    for key in attrs:
        is_structural(key)  # a key the loop has seen (else the compiled path defers to it: below)
    keys = _gate.content_keys(attrs, redaction._STRUCTURAL_SEEN, _MAX_TOKEN)
    assert keys == list(server._content(dict(attrs)))
    assert server.attributes(dict(attrs)) == ServerRedaction("content", server.content, server.value).attributes(dict(attrs))


def test_content_keys_defers_to_the_loop_for_keys_it_has_not_seen() -> None:
    assert _gate.content_keys({"never.seen.before.key": "x"}, {}, _MAX_TOKEN) is None
    assert _gate.content_keys({_Str("gen_ai.request.model"): "x"}, redaction._STRUCTURAL_SEEN, _MAX_TOKEN) is None
    server = ServerRedaction.create("content", "never")
    attrs = {"gen_ai.request.model": "gpt-4o", "a.new.key.for.this.test": "mail jane@example.com"}
    assert server.attributes(attrs) == {"gen_ai.request.model": "gpt-4o", "a.new.key.for.this.test": "mail <EMAIL>"}
    assert redaction._STRUCTURAL_SEEN["a.new.key.for.this.test"] is False  # the loop learnt it


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=st.one_of(st.none(), tokens, tokens.map(_Str)))
def test_structural_compiled_equals_the_method(value: str | None) -> None:
    server = ServerRedaction.create("content", "never")
    assert server.structural is not ServerRedaction.structural.__get__(server)  # the compiled one
    assert server.structural(value) == ServerRedaction.structural(server, value)
    for mode in ("all", "off"):  # the method, as before
        other = ServerRedaction.create(mode, "never")
        assert other.structural(value) == ServerRedaction.structural(other, value)


def test_without_the_compiled_module_the_collector_redacts_the_same() -> None:
    attrs = {"gen_ai.request.model": "gpt-4o", "gen_ai.usage.input_tokens": 12, "user.note": "mail jane@example.com",
             "gen_ai.response.finish_reasons": ["stop"], "server.address": "a b"}  # fmt: skip
    script = """
        import json
        from collector import redaction
        assert redaction._content_keys is None and redaction.token_shaped is redaction._token_shaped
        server = redaction.ServerRedaction.create("content", "never")
        attrs = json.loads(sys.stdin.read())
        print(json.dumps([server.attributes(attrs), server.structural("gpt-4o"), server.structural("a b")]))
    """
    server = ServerRedaction.create("content", "never")
    expected = [server.attributes(dict(attrs)), server.structural("gpt-4o"), server.structural("a b")]
    assert json.loads(run_without_gate(script, json.dumps(attrs))) == expected
    assert expected[0] == {**attrs, "user.note": "mail <EMAIL>"}
