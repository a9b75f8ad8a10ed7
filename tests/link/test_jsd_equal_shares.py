"""The shift's Jensen-Shannon divergence of two equal distributions is 0, never NaN with a
RuntimeWarning (scipy's sum can round to a tiny negative under its square root)."""

from __future__ import annotations

import warnings

import numpy as np

from misstep.link._shifts import _jsd


def test_equal_shares_give_zero_without_warning() -> None:
    p = np.array([0.1, 0.2, 0.3, 0.4]) / 1.0
    # A share computed two ways: equal up to rounding, the case that broke `misstep link`.
    q = np.array([1 / 10, 2 / 10, 3 / 10, 4 / 10])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert 0.0 <= _jsd(p, q) < 1e-15
        assert _jsd(np.array([1 / 3] * 3), np.array([1 / 3] * 3)) >= 0.0


def test_divergence_by_hand() -> None:
    # P=(.5,.5), Q=(1,0), M=(.75,.25): KL(P|M)=.5*log2(.5/.75)+.5*log2(2)=0.20752,
    # KL(Q|M)=log2(4/3)=0.41504; JSD=(0.20752+0.41504)/2=0.31128.
    assert abs(_jsd(np.array([0.5, 0.5]), np.array([1.0, 0.0])) - 0.31128) < 1e-5
