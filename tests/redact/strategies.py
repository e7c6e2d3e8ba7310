"""Hypothesis strategies: text built from detector-shaped fragments, separators and noise, so
that property tests hit detector boundaries and overlaps, not just random characters."""

from __future__ import annotations

from hypothesis import strategies as st

from tests.redact.corpus import NEGATIVE, POSITIVE

FRAGMENTS = sorted({text for _, text, _ in POSITIVE} | set(NEGATIVE) | {
    "@", ".", ":", "=", "-", " ", "+", "(", ")", "/", "'", '"', "\\", "<", ">", "\n", "_",
    "://", "::", "a", "Z", "0", "1", "4111", "555", "sk-", "eyJ", "AKIA", "DE89", "password",
    "token", "Bearer ", "Basic ", "-----BEGIN PRIVATE KEY-----", "-----END PRIVATE KEY-----",
    "<EMAIL>", "<SECRET>", "<API_KEY:0123456789ab>", "<PHONE:abcdefabcdef>", "İ", "ß", "\u200b",
})  # fmt: skip

fragment_text = st.lists(
    st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=8)), max_size=12
).map("".join)

json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True),
    st.text(max_size=20),
    fragment_text,
)
json_keys = st.one_of(
    st.text(max_size=10),
    st.sampled_from(["password", "api_key", "Authorization", "token", "name", "email", "x"]),
)
json_values = st.recursive(
    json_scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=5),
        st.tuples(children, children),
        st.dictionaries(json_keys, children, max_size=5),
    ),
    max_leaves=25,
)
