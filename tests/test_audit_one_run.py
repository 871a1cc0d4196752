"""The white-box audit's one-run audit, power chosen a priori and truncated Chernoff-KL bound
(vfl.privacy.audit).

Ground truths: exact binomial enumeration and hand-derived closed forms for the one-run
audit (moved from tests/test_audit.py).
"""

import itertools
import math

import numpy as np
import pytest
from scipy import stats
from scipy.special import expit, logit

from vfl.privacy import audit as A
from vfl.privacy import composed_gaussian_epsilon
from vfl.privacy.audit.bounds import _kl as bernoulli_kl


# --------------------------------------------------------- one-run audit --
def _brute_force_p(m, r, v, eps, delta):
    """The one-run bound by enumerating all 2^r outcomes of r randomized responses."""
    q = expit(eps)
    pmf = np.zeros(r + 1)
    for bits in itertools.product((0, 1), repeat=r):
        k = sum(bits)
        pmf[k] += q**k * (1 - q) ** (r - k)
    beta = pmf[v:].sum()
    worst = max(pmf[v - i : v].sum() / i for i in range(1, v + 1)) if v else 0.0
    return min(1.0, beta + 2 * m * delta * worst)


@pytest.mark.parametrize(
    "m, r, v, eps, delta",
    [(12, 8, 6, 0.7, 1e-3), (12, 8, 8, 2.0, 1e-2), (9, 9, 3, 0.1, 1e-2), (20, 10, 9, 1.3, 0.0), (10, 10, 0, 1.0, 0.1)],
)
def test_one_run_p_value_against_enumeration(m, r, v, eps, delta):
    assert A.one_run_p_value(m, r, v, eps, delta) == pytest.approx(
        _brute_force_p(m, r, v, eps, delta), rel=1e-12, abs=1e-15
    )


def test_one_run_closed_forms():
    alpha = 0.05
    # pure DP, every guess right: p = q^n, so eps_hat = logit(alpha^(1/n))
    for n in (5, 10, 100):
        assert A.one_run_epsilon(n, n, n, 0.0, 0.95) == pytest.approx(logit(alpha ** (1 / n)), abs=1e-9)
    # two canaries, both guessed right, by hand:
    # p = q^2 + 2*2*delta * max(P[W~=1], P[W~<=1]/2)
    q, d = expit(0.8), 1e-2
    hand = q**2 + 4 * d * max(2 * q * (1 - q), (1 - q**2) / 2)
    assert A.one_run_p_value(2, 2, 2, 0.8, d) == pytest.approx(hand, rel=1e-12)
    # one canary: the bound is above the exact best accuracy (e^eps + delta)/(e^eps + 1)
    for eps, d in [(0.5, 0.1), (2.0, 1e-3)]:
        best = (math.exp(eps) + d) / (math.exp(eps) + 1)
        p = A.one_run_p_value(1, 1, 1, eps, d)
        assert p == pytest.approx(expit(eps) + 2 * d * (1 - expit(eps)))
        assert p >= best


@pytest.mark.parametrize("eps, delta", [(0.5, 0.0), (1.0, 1e-3), (2.0, 1e-2)])
def test_one_run_bound_holds_for_independent_randomized_response(eps, delta):
    # m independent (eps, delta)-DP one-bit mechanisms, each at the optimal
    # accuracy a = (e^eps + delta)/(e^eps + 1): W ~ Binomial(m, a) exactly,
    # and the theorem must bound its tail at every v (tight when delta = 0)
    m = 30
    a = (math.exp(eps) + delta) / (math.exp(eps) + 1)
    for v in range(m + 1):
        tail = stats.binom.sf(v - 1, m, a)
        p = A.one_run_p_value(m, m, v, eps, delta)
        assert tail <= p + 1e-12
        if delta == 0:
            assert p == pytest.approx(tail, rel=1e-10)


def test_one_run_epsilon_properties():
    m, r, delta = 1000, 200, 1e-5
    assert A.one_run_epsilon(m, r, r // 2, delta) == 0.0  # chance
    assert A.one_run_epsilon(m, r, 0, delta) == 0.0
    eps = [A.one_run_epsilon(m, r, v, delta) for v in range(120, 201, 10)]
    assert np.all(np.diff(eps) > 0) and eps[0] > 0  # monotone in v above chance
    # more delta, or more canaries behind the same guesses, certify less
    assert A.one_run_epsilon(m, r, 170, 0.0) > A.one_run_epsilon(m, r, 170, 1e-4) > A.one_run_epsilon(m, r, 170, 1e-3)
    assert A.one_run_epsilon(200, r, 170, 1e-4) > A.one_run_epsilon(5000, r, 170, 1e-4)
    # delta -> 0 recovers the pure bound
    assert A.one_run_epsilon(m, r, 170, 1e-12) == pytest.approx(A.one_run_epsilon(m, r, 170, 0.0), abs=1e-6)
    # the returned epsilon is the first one the test does not reject
    e = A.one_run_epsilon(m, r, 170, delta)
    assert A.one_run_p_value(m, r, 170, e - 1e-6, delta) < 0.05
    assert A.one_run_p_value(m, r, 170, e + 1e-6, delta) >= 0.05


def test_one_run_pure_bound_approaches_randomized_response_accuracy():
    # delta = 0, 75% accuracy: eps_hat rises to log(0.75/0.25) = log 3 as r grows
    eps = [A.one_run_epsilon(r, r, 3 * r // 4, 0.0) for r in (40, 400, 4000, 40000)]
    assert np.all(np.diff(eps) > 0) and eps[-1] < math.log(3)
    assert eps[-1] == pytest.approx(math.log(3), abs=0.02)


def test_one_run_p_value_is_monotone_in_epsilon_where_it_matters():
    # one_run_epsilon does not assume it, but the first crossing is then unique
    grid = np.linspace(0, 6, 121)
    for m, r, v, d in [(1000, 200, 150, 1e-4), (100, 100, 80, 1e-2), (5000, 500, 300, 1e-5)]:
        p = [A.one_run_p_value(m, r, v, e, d) for e in grid]
        assert np.all(np.diff(p) >= -1e-15)


# --------------------------------------------------- power, chosen a priori --
def test_refutation_thresholds_and_the_automatic_bound():
    # Chernoff-KL refutes once the mean passes y*, with K kl(y* || delta) = log(1/alpha)
    y = A.refutation_threshold(30, 1e-5)
    assert 30 * bernoulli_kl(y, 1e-5) == pytest.approx(np.log(20.0), rel=1e-6)
    # Clopper-Pearson: one hit refutes 1e-3 at K = 30 (P[Bin >= 1] = 0.03 < 0.05)
    assert A.refutation_threshold(30, 1e-3, method="clopper-pearson") == pytest.approx((2 / 3) / 30)
    assert A.choose_bound(30, 1e-3) == "clopper-pearson"
    assert A.choose_bound(30, 1e-5) == "kl"
    # no outcome of 10 draws refutes delta = 0.9 at 99%: kl(1 || 0.9) < log(100) / 10
    assert A.refutation_threshold(10, 0.9, 0.99) == np.inf


def test_powerful_epsilon_finds_more_power_than_the_printed_point():
    """At a small printed epsilon the profile point refutes a 1.5x noise error the point cannot."""

    mu, K, delta = 0.2, 300, 1e-5
    eps = composed_gaussian_epsilon([1.0 / mu], delta)
    e_star = A.powerful_epsilon(mu, K, eps)
    assert 0 < e_star <= eps
    rng = np.random.default_rng(0)
    m2 = 1.5 * mu  # the true mechanism: noise off by 1.5x
    LP = rng.normal(m2**2 / 2, m2, size=K)
    LQ = rng.normal(m2**2 / 2, m2, size=K)
    at_point = A.audit_verdict(LP, LQ, eps, delta)
    at_profile = A.audit_verdict(LP, LQ, e_star, A.gaussian_delta(e_star, 1 / mu))
    assert at_point.verdict == "PASS" and at_profile.verdict == "REFUTED"


# ------------------------------------------- truncated Chernoff-KL --
def test_truncation_level_is_the_alternatives_quantile():
    mu, K, eps = 1e-3, 500, 0.0
    m = 2 * mu
    top = m * m / 2 + stats.norm.isf(1 / (4 * K)) * m
    assert A.truncation_level(mu, K, eps) == pytest.approx(-math.expm1(eps - top), rel=1e-12)
    # above the quantile there is nothing to cap: no truncation
    assert A.truncation_level(mu, K, 1.0) == 1.0
    # a large mu caps nothing: tau within rounding of 1
    assert A.truncation_level(3.0, 30, 8.0) > 1 - 1e-6


def test_truncated_kl_at_no_cap_is_kl_and_its_lower_bound_is_valid():
    rng = np.random.default_rng(11)
    L = rng.normal(0.5, 1.0, 300)
    eps = np.array([0.0, 0.5, 2.0])
    kl = A.estimate_delta(L, eps)
    same = A.estimate_delta(L, eps, method="truncated-kl", clip=1.0)
    np.testing.assert_array_equal(kl.lower, same.lower)
    np.testing.assert_array_equal(kl.upper, same.upper)
    # capped: below the mean of the capped samples, monotone in epsilon
    capped = A.estimate_delta(L, eps, method="truncated-kl", clip=0.1)
    Y = A.hockey_stick_samples(L, eps)
    assert np.all(capped.lower <= np.minimum(Y, 0.1).mean(axis=1))
    assert np.all(np.diff(capped.lower) <= 0)
    np.testing.assert_array_equal(capped.upper, kl.upper)  # truncation bounds from below only


@pytest.mark.slow
def test_truncated_kl_covers_the_true_delta_even_when_the_cap_is_too_low():
    """Valid whatever tau: a cap chosen for a 2x error still covers a 6x one (it loses power,
    not coverage)."""
    K, R = 400, 300
    mu_claim = 1e-3
    rng = np.random.default_rng(12)
    for factor in (1.0, 6.0):
        mu = factor * mu_claim
        tau = A.truncation_level(mu_claim, K, 0.0)
        truth = float(A.gaussian_delta(0.0, 1 / mu))
        miss = 0
        for _ in range(R):
            e = A.estimate_delta(rng.normal(mu**2 / 2, mu, K), 0.0, method="truncated-kl", clip=tau)
            miss += e.lower > truth
        assert miss / R <= 0.05


def test_truncated_kl_refutes_a_tiny_profile_that_kl_cannot():
    """A claimed mu of 2.2e-4 (Algorithm 2 with the paper's sigma), the truth 1.8 times that
    (noise at a third, 0.59 of the bound exercised): the curve's delta(0) is 9.0e-5 against
    1.6e-4. At K = 1000 Chernoff-KL on [0, 1] needs about 2e5 runs; capped at tau it refutes."""
    mu_c, K = 2.2474e-4, 1000
    mu = 0.59 / 0.33 * mu_c
    delta = float(A.gaussian_delta(0.0, 1 / mu_c))
    rng = np.random.default_rng(13)
    LP, LQ = (rng.normal(mu**2 / 2, mu, K) for _ in range(2))
    tau = A.truncation_level(mu_c, K, 0.0)
    assert A.choose_bound(K, delta, 0.9875, clip=tau) == "truncated-kl"
    assert A.choose_bound(K, delta, 0.9875) in ("kl", "clopper-pearson")
    capped = A.audit_verdict(LP, LQ, 0.0, delta, 0.975, method="truncated-kl", clip=tau)
    assert capped.verdict == "REFUTED" and capped.clip == tau
    assert A.audit_verdict(LP, LQ, 0.0, delta, 0.975).verdict == "PASS"
    # the mechanism as claimed (0.59 of mu_c) is not refuted
    calm = 0.59 * mu_c
    LP, LQ = (rng.normal(calm**2 / 2, calm, K) for _ in range(2))
    assert A.audit_verdict(LP, LQ, 0.0, delta, 0.975, method="truncated-kl", clip=tau).verdict == "PASS"
    # its epsilon lower bound agrees with the verdict, as the other bounds' do
    LP, LQ = (rng.normal(0.02, 0.2, 2000) for _ in range(2))
    tau = 0.5
    e_hat = A.epsilon_lower_bound(LP, LQ, 1e-3, method="truncated-kl", clip=tau)
    assert e_hat > 0
    for f, want in ((0.999, "REFUTED"), (1.001, "PASS")):
        assert A.audit_verdict(LP, LQ, e_hat * f, 1e-3, method="truncated-kl", clip=tau).verdict == want
    # a cap at or below the claimed delta can refute nothing
    assert A.refutation_threshold(K, 0.2, method="truncated-kl", clip=0.1) == np.inf
    assert A.epsilon_lower_bound(LP, LQ, 0.2, method="truncated-kl", clip=0.1) == 0.0


def test_truncated_kl_argument_checks():
    with pytest.raises(ValueError, match="truncated-kl"):
        A.estimate_delta([0.0], 1.0, clip=0.5)
    for bad in (0.0, 1.5, np.nan):
        with pytest.raises(ValueError, match="clip"):
            A.estimate_delta([0.0], 1.0, method="truncated-kl", clip=bad)
