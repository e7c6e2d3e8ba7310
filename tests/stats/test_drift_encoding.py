"""The drift run's row encoding against plain numpy: cell codes made dense without a sort, and the
same-weekday phase of each row from one division."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from verdict.drift.input import dense_codes
from verdict.drift.windows import WEEK_US, Layout


@settings(max_examples=300, deadline=None)
@given(size=st.integers(1, 20_000), n=st.integers(0, 3_000), seed=st.integers(0, 2**32 - 1),
       crowded=st.booleans())
def test_dense_codes_equal_numpys_unique(size, n, seed, crowded):
    """Both paths (the presence table, and np.unique when the codes are few for their range) give
    np.unique's answer: the codes present in order, each row's index among them."""
    rng = np.random.default_rng(seed)
    high = min(size, 3) if crowded else size  # a few codes repeated, or spread over the range
    codes = rng.integers(0, high, n, dtype=np.int64)
    keys, index = dense_codes(codes, size)
    want_keys, want_index = np.unique(codes, return_inverse=True)
    assert keys.tolist() == want_keys.tolist()
    assert index.tolist() == want_index.tolist()


def test_dense_codes_take_the_largest_code_and_an_empty_input():
    keys, index = dense_codes(np.array([7, 0, 7], dtype=np.int64), 8)
    assert keys.tolist() == [0, 7] and index.tolist() == [1, 0, 1]
    keys, index = dense_codes(np.zeros(0, dtype=np.int64), 8)
    assert keys.size == 0 and index.size == 0


@settings(max_examples=200, deadline=None)
@given(now=st.integers(10 * WEEK_US, 12 * WEEK_US), window=st.integers(1, WEEK_US), weeks=st.integers(0, 6),
       seed=st.integers(0, 2**32 - 1))
def test_same_weekday_phase_equals_the_two_division_formula(now, window, weeks, seed):
    layout = Layout(now=now, current_start=now - window, baseline_start=now - 3 * WEEK_US,
                    baseline_end=now - window, seasonal_weeks=weeks, reference_weeks=0)
    rng = np.random.default_rng(seed)
    ts = np.concatenate([rng.integers(0, now + WEEK_US, 500),  # around every boundary too
                         (layout.current_start + np.arange(-8, 9)[:, None] * WEEK_US + np.array([-1, 0, 1])).ravel()])
    offset = ts - layout.current_start
    in_phase = (offset % WEEK_US) < (now - layout.current_start)
    week = np.where(in_phase & (offset < 0), -(offset // WEEK_US), 0)
    assert layout.seasonal(ts).tolist() == ((week >= 1) & (week <= weeks)).tolist()
