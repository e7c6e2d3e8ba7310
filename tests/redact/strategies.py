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

# Ordinary chat prose: nearly every sentence has a "b", some the words "basic" and "bearer", some
# a number, a colon or a dash that opens a scanner's gate without being a secret.
PROSE = [
    "Thanks for bearing with us while we looked into the billing problem.",
    "The basic plan covers one workspace; the business plan adds single sign-on.",
    "She was the bearer of bad news: the build broke before the board meeting.",
    "Basically, a bigger batch size made the job about twice as fast.",
    "We booked the table for the 14th, but the band cancelled.",
    "Both branches were rebased last week and nobody objected.",
    "The basics: be brief, be kind and cite the invoice number.",
    "Could you double-check whether the subscription renews in February?",
    "Über die Abrechnung: bitte bis Freitag bestätigen.",
    "İstanbul'daki ofisimiz pazartesi açık, basit bir soru için yazabilirsiniz.",
    "Le forfait de base coûte 9 euros par mois.",
    "",
]
# One secret of every detector's class, in ordinary spellings and a few odd cases.
SECRETS = sorted({text for _, text, _ in POSITIVE} | {
    "Authorization: BeArEr abcdefgh12345678", "bAsIc dXNlcjpwYXNz", "İ bearer abc.def-123456",
    "İ basıc dXNlcjpwYXNz", "BASIC dXNlcjpwYXNz",
})  # fmt: skip


natural_text = st.lists(st.sampled_from(PROSE), min_size=1, max_size=8).map(" ".join)
# The same prose with one to three secrets planted among its sentences.
planted_text = (
    st.tuples(st.lists(st.sampled_from(PROSE), min_size=1, max_size=6),
              st.lists(st.sampled_from(SECRETS), min_size=1, max_size=3))
    .flatmap(lambda pieces: st.permutations(pieces[0] + pieces[1]))
    .map(" ".join)
)  # fmt: skip
