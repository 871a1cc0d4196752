"""The white-box audit's statistics (vfl.privacy.audit).

Ground truths: scipy's densities and quadrature for the per-release log
ratios; the exact privacy loss N(mu^2/2, mu^2) of composed Gaussians and its
Balle-Wang delta(eps) for the hockey-stick estimators; dp-accounting's
calibration for the mechanisms that must pass or be refuted; exact binomial
enumeration and hand-derived closed forms for the one-run audit.
"""

import itertools
import math

import numpy as np
import pytest
from scipy import integrate, stats
from scipy.special import expit, logit

from vfl.core.solver import Release
from vfl.privacy import audit as A
from vfl.privacy import calibrate_sigma, composed_gaussian_epsilon
from vfl.privacy.audit.bounds import _kl as bernoulli_kl


# ------------------------------------------------ per-release log ratios --
def test_gaussian_log_ratio_matches_scipy_and_is_vectorized():
    rng = np.random.default_rng(0)
    units, size = 4, 3
    sigma = np.array([0.5, 1.0, 2.0, 3.0])
    mu, mu2 = rng.normal(size=(units, size)), rng.normal(size=(units, size))
    o = mu + sigma[:, None] * rng.normal(size=(units, size))
    got = A.gaussian_log_ratio(o, mu, mu2, sigma)
    want = (stats.norm.logpdf(o, mu, sigma[:, None]).sum(1)
            - stats.norm.logpdf(o, mu2, sigma[:, None]).sum(1))
    assert got.shape == (units,)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    # leading batch axes (K runs x T steps) and one vector
    o3 = rng.normal(size=(7, units, size))
    assert A.gaussian_log_ratio(o3, mu, mu2, sigma).shape == (7, units)
    assert np.ndim(A.gaussian_log_ratio(o[0], mu[0], mu2[0], 2.0)) == 0
    # no cancellation far from both means: exact value is shift . (2o - mu - mu') / 2
    far = A.gaussian_log_ratio(np.array([1e9]), np.array([0.0]), np.array([1.0]), 1.0)
    assert far == pytest.approx(-(2e9 - 1.0) / 2, rel=1e-15)
    with pytest.raises(ValueError, match="one per released vector"):
        A.gaussian_log_ratio(o[0], mu[0], mu2[0], sigma)  # 4 sigmas for one vector


def test_laplace_log_ratio_matches_scipy():
    rng = np.random.default_rng(1)
    b = np.array([0.3, 1.0, 4.0])
    mu, mu2 = rng.normal(size=(3, 5)), rng.normal(size=(3, 5))
    o = mu + rng.laplace(size=(3, 5)) * b[:, None]
    want = (stats.laplace.logpdf(o, mu, b[:, None]).sum(1)
            - stats.laplace.logpdf(o, mu2, b[:, None]).sum(1))
    np.testing.assert_allclose(A.laplace_log_ratio(o, mu, mu2, b), want, rtol=1e-12,
                               atol=1e-12)


def _mixture_pdf_quad(x, lo, hi, b):
    if hi == lo:
        return stats.laplace.pdf(x, lo, b)
    pts = [x] if lo < x < hi else None
    val, _ = integrate.quad(lambda y: stats.laplace.pdf(x - y, 0.0, b), lo, hi, points=pts,
                            epsabs=0.0, epsrel=1e-12, limit=200)
    return val / (hi - lo)


@pytest.mark.parametrize("lo, hi, b", [(0.0, 1.0, 0.5), (-2.0, 3.0, 2.0), (0.2, 0.2001, 1.0),
                                       (1.0, 1.0, 0.7)])
def test_uniform_laplace_density_against_quadrature(lo, hi, b):
    w = hi - lo
    xs = np.array([lo - 40 * b, lo - 3 * b, lo - 1e-9, lo, lo + 0.3 * w, (lo + hi) / 2,
                   hi - 1e-3 * w, hi, hi + 2 * b, hi + 25 * b])
    got = A.uniform_laplace_logpdf(xs, lo, hi, b)
    want = np.log([_mixture_pdf_quad(x, lo, hi, b) for x in xs])
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9)
    # an independent closed form in the bulk: (F(x - lo) - F(x - hi)) / w
    if w > 0:
        bulk = xs[1:-1]
        cdf = (stats.laplace.cdf(bulk - lo, 0, b) - stats.laplace.cdf(bulk - hi, 0, b)) / w
        np.testing.assert_allclose(got[1:-1], np.log(cdf), rtol=1e-6)
    # a density: integrates to one
    total = sum(integrate.quad(lambda x: math.exp(A.uniform_laplace_logpdf(x, lo, hi, b)),
                               a, c, epsabs=0, epsrel=1e-11)[0]
                for a, c in [(-np.inf, lo), (lo, hi), (hi, np.inf)])
    assert total == pytest.approx(1.0, rel=1e-8)


def test_uniform_laplace_limits_and_log_ratio():
    x = np.linspace(-5, 5, 41)
    # degenerate and vanishing intervals are the Laplace density at lo
    np.testing.assert_allclose(A.uniform_laplace_logpdf(x, 0.5, 0.5, 2.0),
                               stats.laplace.logpdf(x, 0.5, 2.0), rtol=1e-14)
    np.testing.assert_allclose(A.uniform_laplace_logpdf(x, 0.5, 0.5 + 1e-13, 2.0),
                               stats.laplace.logpdf(x, 0.5, 2.0), rtol=1e-10)
    # the ratio sums entries; per-vector scale; equal intervals give 0
    rng = np.random.default_rng(2)
    lo = rng.normal(size=(6, 4))
    hi = lo + rng.uniform(0, 2, size=(6, 4))
    o = rng.normal(size=(6, 4)) * 3
    b = rng.uniform(0.5, 2, size=6)
    got = A.uniform_laplace_log_ratio(o, lo, hi, lo + 0.1, hi + 0.1, b)
    want = np.array([[math.log(_mixture_pdf_quad(o[i, j], lo[i, j], hi[i, j], b[i]))
                      - math.log(_mixture_pdf_quad(o[i, j], lo[i, j] + .1, hi[i, j] + .1, b[i]))
                      for j in range(4)] for i in range(6)]).sum(1)
    assert got.shape == (6,)
    np.testing.assert_allclose(got, want, rtol=1e-8, atol=1e-10)
    assert np.all(A.uniform_laplace_log_ratio(o, lo, hi, lo, hi, b) == 0)
    # Xiao et al.'s amplification: the per-entry loss never exceeds the Laplace bound T/b
    shift = 0.05
    r = A.uniform_laplace_log_ratio(o[..., None], lo[..., None], hi[..., None],
                                    lo[..., None] + shift, hi[..., None] + shift, b[:, None])
    assert np.all(np.abs(r) <= shift / b[:, None] + 1e-12)
    with pytest.raises(ValueError, match="lo <= hi"):
        A.uniform_laplace_logpdf(0.0, 1.0, 0.0, 1.0)


def test_release_log_ratio_for_single_and_multi_unit_releases():
    rng = np.random.default_rng(3)
    multi = Release("gaussian", np.array([0, 1, 2]), np.ones(3), np.array([1.0, 2.0, 3.0]), 4)
    mu, mu2 = rng.normal(size=(3, 4)), rng.normal(size=(3, 4))
    o = rng.normal(size=(3, 4))
    np.testing.assert_allclose(A.release_log_ratio(multi, o, mu, mu2),
                               A.gaussian_log_ratio(o, mu, mu2, multi.scale))
    single = Release("laplace", np.array([5]), np.ones(1), np.array([0.5]), 4)
    got = A.release_log_ratio(single, o[0], mu[0], mu2[0])
    assert got.shape == (1,)
    assert got[0] == pytest.approx(float(A.laplace_log_ratio(o[0], mu[0], mu2[0], 0.5)))
    scalars = Release("gaussian", np.array([0, 1, 2]), np.ones(3), np.array([1.0, 1.0, 2.0]), 1)
    np.testing.assert_allclose(A.release_log_ratio(scalars, o[:, 0], mu[:, 0], mu2[:, 0]),
                               A.gaussian_log_ratio(o[:, :1], mu[:, :1], mu2[:, :1],
                                                    scalars.scale))
    with pytest.raises(ValueError, match="unknown mechanism"):
        A.release_log_ratio(Release("exp", np.array([0]), np.ones(1), np.ones(1), 1),
                            [0.0], [0.0], [1.0])
    with pytest.raises(ValueError, match="do not fit"):
        A.release_log_ratio(multi, o[:2], mu[:2], mu2[:2])


# ---------------------------------------------- simulated Gaussian audits --
T, DIM = 10, 5


def gaussian_losses(sigma, K, rng, reverse=False):
    """K exact privacy-loss samples of T adaptively composed Gaussian releases.

    Each release's mean depends on the previous released value (adaptive
    composition); the neighbour's mean, teacher-forced on the same
    transcript, is shifted by a vector of norm 1 (the sensitivity).
    """
    shift = rng.normal(size=(T, DIM))
    shift /= np.linalg.norm(shift, axis=1, keepdims=True)
    prev = np.zeros((K, DIM))
    L = np.zeros(K)
    for t in range(T):
        mu = np.tanh(prev) + 0.3 * t
        mu2 = mu + shift[t]
        if reverse:  # sample under D', loss log q/p
            mu, mu2 = mu2, mu
        o = mu + sigma * rng.normal(size=(K, DIM))
        L += A.gaussian_log_ratio(o, mu, mu2, sigma)
        prev = o
    return L


@pytest.fixture(scope="module")
def sigma_1e5():
    return calibrate_sigma(1.0, 1e-5, T)


def test_simulated_losses_follow_the_exact_gaussian_loss(sigma_1e5):
    rng = np.random.default_rng(4)
    L = gaussian_losses(sigma_1e5, 4000, rng)
    mean, std = A.gaussian_loss_moments([sigma_1e5] * T)
    s = A.summarize_losses(L)
    assert s.K == 4000
    assert abs(s.mean - mean) < 4 * std / math.sqrt(4000)
    assert s.std == pytest.approx(std, rel=0.05)
    assert s.quantiles[0.5] == pytest.approx(mean, abs=4 * 1.25 * std / math.sqrt(4000))
    assert stats.kstest(L, "norm", args=(mean, std)).pvalue > 1e-3


def test_calibrated_gaussian_passes_and_10x_undercalibrated_is_refuted(sigma_1e5):
    rng = np.random.default_rng(5)
    ok = A.audit_verdict(gaussian_losses(sigma_1e5, 500, rng),
                         gaussian_losses(sigma_1e5, 500, rng, reverse=True), 1.0, 1e-5)
    assert ok.verdict == "PASS" and not ok.refuted
    assert ok.K == ok.K_reverse == 500
    assert ok.forward.confidence == ok.reverse.confidence == pytest.approx(0.975)
    assert ok.epsilon_refuted <= 1.0
    assert ok.forward.lower <= 1e-5 <= ok.forward.upper

    bad_sigma = sigma_1e5 / 10
    LP = gaussian_losses(bad_sigma, 300, rng)
    LQ = gaussian_losses(bad_sigma, 300, rng, reverse=True)
    bad = A.audit_verdict(LP, LQ, 1.0, 1e-5)
    assert bad.verdict == "REFUTED"
    true_delta = A.gaussian_delta(1.0, [bad_sigma] * T)  # 0.7155
    for est in (bad.forward, bad.reverse):
        assert est.lower > 0.5 and est.lower <= true_delta <= est.upper
    # the empirical epsilon: above the claim, below the truth (14.43)
    true_eps = composed_gaussian_epsilon([bad_sigma] * T, 1e-5)
    assert 1.0 < bad.epsilon_refuted <= true_eps
    assert bad.epsilon_refuted == A.epsilon_lower_bound(LP, LQ, 1e-5)
    # a record for the run directory
    d = bad.to_dict()
    assert d["verdict"] == "REFUTED" and d["K_forward"] == 300
    assert d["delta_lower_forward"] == bad.forward.lower


@pytest.mark.parametrize("method", A.AUDIT_METHODS)
def test_2x_undercalibrated_is_refuted_at_realistic_delta(sigma_1e5, method):
    # delta(1) of sigma/2 is 0.0104, a thousand times the claim
    rng = np.random.default_rng(6)
    LP = gaussian_losses(sigma_1e5 / 2, 1000, rng)
    res = A.audit_verdict(LP, None, 1.0, 1e-5, method=method, rng=rng)
    assert res.verdict == "REFUTED" and res.reverse is None
    assert res.forward.confidence == 0.95
    assert 1.0 < res.epsilon_refuted <= composed_gaussian_epsilon([sigma_1e5 / 2] * T, 1e-5)


def test_calibrated_gaussian_passes_at_a_large_delta_where_power_matters():
    # at (1, 0.05) the bounds are informative: the truth (0.05) sits inside them
    sigma = calibrate_sigma(1.0, 0.05, T)
    rng = np.random.default_rng(7)
    LP, LQ = gaussian_losses(sigma, 2000, rng), gaussian_losses(sigma, 2000, rng, reverse=True)
    res = A.audit_verdict(LP, LQ, 1.0, 0.05)
    assert res.verdict == "PASS"
    for est in (res.forward, res.reverse):
        assert 0.02 < est.lower <= 0.05 <= est.upper < 0.09
    assert 0.5 < res.epsilon_refuted <= 1.0
    refuted = A.audit_verdict(gaussian_losses(sigma / 2, 2000, rng), None, 1.0, 0.05)
    assert refuted.verdict == "REFUTED"  # true delta(1) = 0.32


def test_pure_dp_claim_is_refuted_by_any_loss_above_epsilon():
    L = np.array([0.1, -0.3, 0.2, 1.5])
    assert A.audit_verdict(L, None, 1.0, 0.0).verdict == "REFUTED"
    assert A.audit_verdict(L, None, 2.0, 0.0).verdict == "PASS"
    assert A.epsilon_lower_bound(L, None, 0.0) == pytest.approx(1.5, abs=1e-6)


# ----------------------------------------------- confidence bounds --
def test_kl_bounds_closed_forms_and_comparison_with_clopper_pearson():
    K, alpha = 200, 0.05
    zero = A.estimate_delta(np.full(K, -1.0), 0.5)
    assert zero.estimate == 0 and zero.lower == 0
    # no positive Y: the Chernoff-KL upper bound is exactly Clopper-Pearson's
    assert zero.upper == pytest.approx(1 - alpha ** (1 / K), rel=1e-12)
    # for 0/1 samples Chernoff is looser than the exact binomial tail
    for k in (1, 5, 50, 150, 199):
        L = np.r_[np.full(k, np.inf), np.full(K - k, -np.inf)]
        kl = A.estimate_delta(L, 0.0)
        cp_lo = stats.beta.ppf(alpha, k, K - k + 1)
        cp_hi = stats.beta.ppf(1 - alpha, k + 1, K - k)
        assert kl.estimate == k / K
        assert kl.lower <= cp_lo < k / K < cp_hi <= kl.upper
        assert kl.upper - kl.lower < 2.5 * (cp_hi - cp_lo)


@pytest.mark.slow
def test_bounds_cover_the_true_delta_at_about_the_nominal_rate():
    mu, K, R = 1.0, 200, 400
    eps = np.array([0.5, 2.5])
    truth = A.gaussian_delta(eps, 1 / mu)  # 0.238 and 0.0063
    rng = np.random.default_rng(8)
    cover = {m: np.zeros((2, 2)) for m in A.AUDIT_METHODS}
    for _ in range(R):
        L = rng.normal(mu**2 / 2, mu, K)
        for m in A.AUDIT_METHODS:
            e = A.estimate_delta(L, eps, method=m, rng=rng)
            assert np.all(e.lower <= e.upper)
            if m == "kl":
                assert np.all(e.lower <= e.estimate) and np.all(e.estimate <= e.upper)
            cover[m] += [e.lower <= truth, e.upper >= truth]
    cover = {m: c / R for m, c in cover.items()}
    # randomized Clopper-Pearson: exact binomial, valid; close to nominal where
    # K delta is not small (sd 0.011 at R = 400), conservative by discreteness
    # where it is (K delta(2.5) = 1.3: the upper bound almost never fails)
    assert np.all(cover["clopper-pearson"] >= 0.92)
    assert np.all(cover["clopper-pearson"][:, 0] <= 0.985)
    # Chernoff-KL: valid, conservative
    assert np.all(cover["kl"] >= 0.95)


def test_estimate_is_unbiased_and_curve_is_monotone():
    mu = 1.5
    L = np.random.default_rng(9).normal(mu**2 / 2, mu, 20000)
    eps = np.linspace(0, 4, 9)
    e = A.estimate_delta(L, eps)
    truth = A.gaussian_delta(eps, 1 / mu)
    assert np.all(e.lower <= truth) and np.all(truth <= e.upper)
    for a in (e.estimate, e.lower, e.upper):
        assert np.all(np.diff(a) <= 0)
    np.testing.assert_allclose(A.hockey_stick_samples(L, eps).mean(1), e.estimate)
    assert A.hockey_stick_samples(L, 1.0).shape == (20000,)


def test_gaussian_delta_reuses_the_balle_wang_curve():
    z = [3.0, 4.0, 12.0]  # mu^2 = 1/9 + 1/16 + 1/144 = 0.1806
    mu = math.sqrt(sum(x**-2 for x in z))
    assert A.gaussian_loss_moments(z) == pytest.approx((mu**2 / 2, mu))
    eps = np.array([0.0, 0.3, 1.0])
    want = stats.norm.cdf(-eps / mu + mu / 2) - np.exp(eps) * stats.norm.cdf(-eps / mu - mu / 2)
    np.testing.assert_allclose(A.gaussian_delta(eps, z), want, rtol=1e-10)
    # consistent with the accountant: delta(eps(delta)) = delta
    e = composed_gaussian_epsilon(z, 1e-5)
    assert A.gaussian_delta(e, z) == pytest.approx(1e-5, rel=1e-8)


def test_epsilon_lower_bound_agrees_with_the_verdict():
    rng = np.random.default_rng(10)
    LP, LQ = rng.normal(2.0, 2.0, 800), rng.normal(2.0, 2.0, 800)
    e_hat = A.epsilon_lower_bound(LP, LQ, 1e-3)
    assert e_hat > 0
    assert A.audit_verdict(LP, LQ, e_hat * 0.999, 1e-3).verdict == "REFUTED"
    assert A.audit_verdict(LP, LQ, e_hat * 1.001, 1e-3).verdict == "PASS"
    # the clopper-pearson variant, same coin flips for verdict and epsilon
    r1 = A.audit_verdict(LP, LQ, 1.0, 1e-3, method="clopper-pearson",
                         rng=np.random.default_rng(0))
    e_cp = A.epsilon_lower_bound(LP, LQ, 1e-3, method="clopper-pearson",
                                 rng=np.random.default_rng(0))
    assert r1.epsilon_refuted == e_cp
    for f in (0.999, 1.001):
        v = A.audit_verdict(LP, LQ, e_cp * f, 1e-3, method="clopper-pearson",
                            rng=np.random.default_rng(0)).verdict
        assert v == ("REFUTED" if f < 1 else "PASS")


def test_argument_checks():
    with pytest.raises(ValueError, match="NaN"):
        A.estimate_delta([0.0, np.nan], 1.0)
    with pytest.raises(ValueError, match="1-D"):
        A.estimate_delta(np.zeros((2, 2)), 1.0)
    with pytest.raises(ValueError, match="needs rng"):
        A.estimate_delta([0.0], 1.0, method="clopper-pearson")
    with pytest.raises(ValueError, match="method"):
        A.estimate_delta([0.0], 1.0, method="bernstein")
    with pytest.raises(ValueError, match="confidence"):
        A.audit_verdict([0.0], None, 1.0, 1e-5, confidence=1.0)
    with pytest.raises(ValueError, match="delta"):
        A.audit_verdict([0.0], None, 1.0, 1.0)
    with pytest.raises(ValueError, match="epsilon"):
        A.estimate_delta([0.0], -1.0)
    with pytest.raises(ValueError, match="v <= r <= m"):
        A.one_run_epsilon(10, 5, 6, 1e-5)


# --------------------------------------------------------- one-run audit --
def _brute_force_p(m, r, v, eps, delta):
    """The one-run bound by enumerating all 2^r outcomes of r randomized responses."""
    q = expit(eps)
    pmf = np.zeros(r + 1)
    for bits in itertools.product((0, 1), repeat=r):
        k = sum(bits)
        pmf[k] += q**k * (1 - q) ** (r - k)
    beta = pmf[v:].sum()
    worst = max(pmf[v - i:v].sum() / i for i in range(1, v + 1)) if v else 0.0
    return min(1.0, beta + 2 * m * delta * worst)


@pytest.mark.parametrize("m, r, v, eps, delta", [
    (12, 8, 6, 0.7, 1e-3), (12, 8, 8, 2.0, 1e-2), (9, 9, 3, 0.1, 1e-2), (20, 10, 9, 1.3, 0.0),
    (10, 10, 0, 1.0, 0.1)])
def test_one_run_p_value_against_enumeration(m, r, v, eps, delta):
    assert A.one_run_p_value(m, r, v, eps, delta) == pytest.approx(
        _brute_force_p(m, r, v, eps, delta), rel=1e-12, abs=1e-15)


def test_one_run_closed_forms():
    alpha = 0.05
    # pure DP, every guess right: p = q^n, so eps_hat = logit(alpha^(1/n))
    for n in (5, 10, 100):
        assert A.one_run_epsilon(n, n, n, 0.0, 0.95) == pytest.approx(
            logit(alpha ** (1 / n)), abs=1e-9)
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
    assert A.one_run_epsilon(m, r, 170, 0.0) > A.one_run_epsilon(m, r, 170, 1e-4) \
        > A.one_run_epsilon(m, r, 170, 1e-3)
    assert A.one_run_epsilon(200, r, 170, 1e-4) > A.one_run_epsilon(5000, r, 170, 1e-4)
    # delta -> 0 recovers the pure bound
    assert A.one_run_epsilon(m, r, 170, 1e-12) == pytest.approx(
        A.one_run_epsilon(m, r, 170, 0.0), abs=1e-6)
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
    from vfl.privacy import composed_gaussian_epsilon

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
            e = A.estimate_delta(rng.normal(mu**2 / 2, mu, K), 0.0, method="truncated-kl",
                                 clip=tau)
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
    assert A.audit_verdict(LP, LQ, 0.0, delta, 0.975, method="truncated-kl",
                           clip=tau).verdict == "PASS"
    # its epsilon lower bound agrees with the verdict, as the other bounds' do
    LP, LQ = (rng.normal(0.02, 0.2, 2000) for _ in range(2))
    tau = 0.5
    e_hat = A.epsilon_lower_bound(LP, LQ, 1e-3, method="truncated-kl", clip=tau)
    assert e_hat > 0
    for f, want in ((0.999, "REFUTED"), (1.001, "PASS")):
        assert A.audit_verdict(LP, LQ, e_hat * f, 1e-3, method="truncated-kl",
                               clip=tau).verdict == want
    # a cap at or below the claimed delta can refute nothing
    assert A.refutation_threshold(K, 0.2, method="truncated-kl", clip=0.1) == np.inf
    assert A.epsilon_lower_bound(LP, LQ, 0.2, method="truncated-kl", clip=0.1) == 0.0


def test_truncated_kl_argument_checks():
    with pytest.raises(ValueError, match="truncated-kl"):
        A.estimate_delta([0.0], 1.0, clip=0.5)
    for bad in (0.0, 1.5, np.nan):
        with pytest.raises(ValueError, match="clip"):
            A.estimate_delta([0.0], 1.0, method="truncated-kl", clip=bad)
