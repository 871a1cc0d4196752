"""The white-box audit's statistics (vfl.privacy.audit): log ratios, simulated audits, bounds.

Ground truths: scipy's densities and quadrature for the per-release log
ratios; the exact privacy loss N(mu^2/2, mu^2) of composed Gaussians and its
Balle-Wang delta(eps) for the hockey-stick estimators; dp-accounting's
calibration for the mechanisms that must pass or be refuted. The one-run audit, the power
chosen a priori and the truncated Chernoff-KL bound are in tests/test_audit_one_run.py.
"""

import math

import numpy as np
import pytest
from scipy import integrate, stats

from vfl.core.releases import Release
from vfl.privacy import audit as A
from vfl.privacy import calibrate_sigma, composed_gaussian_epsilon


# ------------------------------------------------ per-release log ratios --
def test_gaussian_log_ratio_matches_scipy_and_is_vectorized():
    rng = np.random.default_rng(0)
    units, size = 4, 3
    sigma = np.array([0.5, 1.0, 2.0, 3.0])
    mu, mu2 = rng.normal(size=(units, size)), rng.normal(size=(units, size))
    o = mu + sigma[:, None] * rng.normal(size=(units, size))
    got = A.gaussian_log_ratio(o, mu, mu2, sigma)
    want = stats.norm.logpdf(o, mu, sigma[:, None]).sum(1) - stats.norm.logpdf(o, mu2, sigma[:, None]).sum(1)
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
    want = stats.laplace.logpdf(o, mu, b[:, None]).sum(1) - stats.laplace.logpdf(o, mu2, b[:, None]).sum(1)
    np.testing.assert_allclose(A.laplace_log_ratio(o, mu, mu2, b), want, rtol=1e-12, atol=1e-12)


def _mixture_pdf_quad(x, lo, hi, b):
    if hi == lo:
        return stats.laplace.pdf(x, lo, b)
    pts = [x] if lo < x < hi else None
    val, _ = integrate.quad(
        lambda y: stats.laplace.pdf(x - y, 0.0, b), lo, hi, points=pts, epsabs=0.0, epsrel=1e-12, limit=200
    )
    return val / (hi - lo)


@pytest.mark.parametrize("lo, hi, b", [(0.0, 1.0, 0.5), (-2.0, 3.0, 2.0), (0.2, 0.2001, 1.0), (1.0, 1.0, 0.7)])
def test_uniform_laplace_density_against_quadrature(lo, hi, b):
    w = hi - lo
    xs = np.array(
        [
            lo - 40 * b,
            lo - 3 * b,
            lo - 1e-9,
            lo,
            lo + 0.3 * w,
            (lo + hi) / 2,
            hi - 1e-3 * w,
            hi,
            hi + 2 * b,
            hi + 25 * b,
        ]
    )
    got = A.uniform_laplace_logpdf(xs, lo, hi, b)
    want = np.log([_mixture_pdf_quad(x, lo, hi, b) for x in xs])
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9)
    # an independent closed form in the bulk: (F(x - lo) - F(x - hi)) / w
    if w > 0:
        bulk = xs[1:-1]
        cdf = (stats.laplace.cdf(bulk - lo, 0, b) - stats.laplace.cdf(bulk - hi, 0, b)) / w
        np.testing.assert_allclose(got[1:-1], np.log(cdf), rtol=1e-6)
    # a density: integrates to one
    total = sum(
        integrate.quad(lambda x: math.exp(A.uniform_laplace_logpdf(x, lo, hi, b)), a, c, epsabs=0, epsrel=1e-11)[0]
        for a, c in [(-np.inf, lo), (lo, hi), (hi, np.inf)]
    )
    assert total == pytest.approx(1.0, rel=1e-8)


def test_uniform_laplace_limits_and_log_ratio():
    x = np.linspace(-5, 5, 41)
    # degenerate and vanishing intervals are the Laplace density at lo
    np.testing.assert_allclose(
        A.uniform_laplace_logpdf(x, 0.5, 0.5, 2.0), stats.laplace.logpdf(x, 0.5, 2.0), rtol=1e-14
    )
    np.testing.assert_allclose(
        A.uniform_laplace_logpdf(x, 0.5, 0.5 + 1e-13, 2.0), stats.laplace.logpdf(x, 0.5, 2.0), rtol=1e-10
    )
    # the ratio sums entries; per-vector scale; equal intervals give 0
    rng = np.random.default_rng(2)
    lo = rng.normal(size=(6, 4))
    hi = lo + rng.uniform(0, 2, size=(6, 4))
    o = rng.normal(size=(6, 4)) * 3
    b = rng.uniform(0.5, 2, size=6)
    got = A.uniform_laplace_log_ratio(o, lo, hi, lo + 0.1, hi + 0.1, b)
    want = np.array(
        [
            [
                math.log(_mixture_pdf_quad(o[i, j], lo[i, j], hi[i, j], b[i]))
                - math.log(_mixture_pdf_quad(o[i, j], lo[i, j] + 0.1, hi[i, j] + 0.1, b[i]))
                for j in range(4)
            ]
            for i in range(6)
        ]
    ).sum(1)
    assert got.shape == (6,)
    np.testing.assert_allclose(got, want, rtol=1e-8, atol=1e-10)
    assert np.all(A.uniform_laplace_log_ratio(o, lo, hi, lo, hi, b) == 0)
    # Xiao et al.'s amplification: the per-entry loss never exceeds the Laplace bound T/b
    shift = 0.05
    r = A.uniform_laplace_log_ratio(
        o[..., None], lo[..., None], hi[..., None], lo[..., None] + shift, hi[..., None] + shift, b[:, None]
    )
    assert np.all(np.abs(r) <= shift / b[:, None] + 1e-12)
    with pytest.raises(ValueError, match="lo <= hi"):
        A.uniform_laplace_logpdf(0.0, 1.0, 0.0, 1.0)


def test_release_log_ratio_for_single_and_multi_unit_releases():
    rng = np.random.default_rng(3)
    multi = Release("gaussian", np.array([0, 1, 2]), np.ones(3), np.array([1.0, 2.0, 3.0]), 4)
    mu, mu2 = rng.normal(size=(3, 4)), rng.normal(size=(3, 4))
    o = rng.normal(size=(3, 4))
    np.testing.assert_allclose(A.release_log_ratio(multi, o, mu, mu2), A.gaussian_log_ratio(o, mu, mu2, multi.scale))
    single = Release("laplace", np.array([5]), np.ones(1), np.array([0.5]), 4)
    got = A.release_log_ratio(single, o[0], mu[0], mu2[0])
    assert got.shape == (1,)
    assert got[0] == pytest.approx(float(A.laplace_log_ratio(o[0], mu[0], mu2[0], 0.5)))
    scalars = Release("gaussian", np.array([0, 1, 2]), np.ones(3), np.array([1.0, 1.0, 2.0]), 1)
    np.testing.assert_allclose(
        A.release_log_ratio(scalars, o[:, 0], mu[:, 0], mu2[:, 0]),
        A.gaussian_log_ratio(o[:, :1], mu[:, :1], mu2[:, :1], scalars.scale),
    )
    with pytest.raises(ValueError, match="unknown mechanism"):
        A.release_log_ratio(Release("exp", np.array([0]), np.ones(1), np.ones(1), 1), [0.0], [0.0], [1.0])
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
    ok = A.audit_verdict(
        gaussian_losses(sigma_1e5, 500, rng), gaussian_losses(sigma_1e5, 500, rng, reverse=True), 1.0, 1e-5
    )
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
    r1 = A.audit_verdict(LP, LQ, 1.0, 1e-3, method="clopper-pearson", rng=np.random.default_rng(0))
    e_cp = A.epsilon_lower_bound(LP, LQ, 1e-3, method="clopper-pearson", rng=np.random.default_rng(0))
    assert r1.epsilon_refuted == e_cp
    for f in (0.999, 1.001):
        v = A.audit_verdict(LP, LQ, e_cp * f, 1e-3, method="clopper-pearson", rng=np.random.default_rng(0)).verdict
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
