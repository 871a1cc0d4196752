"""Xiao et al.'s privacy computations (vfl.privacy.ldp): Theorems 2.2, 2.3, footnote 1."""

import math

import numpy as np
import pytest
from scipy import integrate

from vfl.privacy import accountant, ldp

# Spec 5.4 [CHECKED]: eq. (11) with alpha B_inf = 0.001; rows omega, columns beta = 2..10.
TABLE = {
    0.10: (0.9517, 0.9065, 0.8643, 0.8248, 0.7878),
    0.25: (0.8849, 0.7873, 0.7041, 0.6331, 0.5720),
    0.50: (0.7871, 0.6326, 0.5187, 0.4333, 0.3683),
    0.75: (0.7037, 0.5184, 0.3983, 0.3176, 0.2614),
    1.00: (0.6324, 0.4328, 0.3174, 0.2462, 0.1995),
}
BETAS = (2.0, 4.0, 6.0, 8.0, 10.0)


def test_gamma_closed_form_matches_the_spec_table():
    for omega, row in TABLE.items():
        got = ldp.gamma_bound(omega, np.array(BETAS), 0.001)
        assert np.allclose(got, row, atol=5e-5), (omega, got)


@pytest.mark.parametrize("omega, beta, aB", [(0.1, 10.0, 0.001), (0.5, 2.0, 0.001), (1.0, 6.0, 0.05), (0.3, 3.0, 0.2)])
def test_gamma_closed_form_matches_quadrature_of_eq_11(omega, beta, aB):
    phi = lambda y, x: beta / (2 * omega) * math.exp(-beta * abs(x - y))  # noqa: E731
    h = (omega - aB) / 2
    opts = dict(epsabs=1e-15, epsrel=1e-13, limit=200)

    def double(y_lo, y_hi):  # int_0^h int_{y_lo}^{y_hi} Phi dy dx, the kink y = x as a point
        def inner(x):
            return integrate.quad(phi, y_lo, y_hi, args=(x,), points=[x], **opts)[0]

        return integrate.quad(inner, 0, h, **opts)[0]

    I1, I2 = double(0, omega), double(-aB, omega - aB)
    expected = math.log(math.exp(aB * beta) * (1 - 2 * I1) + 2 * I2) / (aB * beta)
    assert ldp.gamma_bound(omega, beta, aB) == pytest.approx(expected, rel=1e-8)


def test_gamma_exact_and_corrected_bound_spec_erratum_10():
    exact = ldp.gamma_exact(0.1, 10.0, 0.001)
    assert exact == pytest.approx(0.7906, abs=5e-5)
    corrected = ldp.gamma_bound_corrected(0.1, 10.0, 0.001)
    assert corrected == pytest.approx(0.7949, abs=5e-5)
    printed = ldp.gamma_bound(0.1, 10.0, 0.001)
    assert printed < exact < corrected  # (11) as printed is not an upper bound


def test_gamma_exact_matches_monte_carlo():
    rng = np.random.default_rng(0)
    omega, beta, T = 0.5, 4.0, 0.02
    n = 400_000
    x = rng.uniform(0, omega, n) + rng.laplace(0, 1 / beta, n)
    mc = ldp.realized_loss(x, 0.0, omega, beta, T).mean() / (beta * T)
    assert ldp.gamma_exact(omega, beta, T) == pytest.approx(mc, abs=3e-3)


def test_gamma_decreases_in_omega_and_beta():
    g = ldp.gamma_bound(np.array(list(TABLE))[:, None], np.array(BETAS)[None, :], 0.001)
    assert np.all(np.diff(g, axis=0) < 0) and np.all(np.diff(g, axis=1) < 0)
    assert g.min() > 0.19 and g.max() < 0.96


def test_worst_case_totals_spec_5_6():
    k1 = np.arange(1, 101)
    beta = 1.02**k1
    assert ldp.worst_case_cumulative(14, 0.1, beta, 0.01)[-1] == pytest.approx(4.459, abs=5e-4)
    assert ldp.worst_case_cumulative(14, 0.1, 1.02 ** np.arange(100), 0.01)[-1] == pytest.approx(4.371, abs=5e-4)
    assert ldp.worst_case_cumulative(14, 0.1, beta[:50], 0.01)[-1] == pytest.approx(1.208, abs=5e-4)
    assert ldp.worst_case_cumulative(14, 0.9**k1, beta, 0.01)[-1] == pytest.approx(1.567, abs=5e-4)
    assert ldp.worst_case_cumulative(14, 0.93**k1, beta, 0.01)[-1] == pytest.approx(2.571, abs=5e-4)
    assert np.allclose(ldp.geometric_schedule(1.0, 1.02, k1), beta)


def _brute_force_loss(x, lo, hi, beta, T):
    """max over a grid of |t| <= T of |log F(tau) - log F(tau + t)| by quadrature."""

    def logF(a, b):
        pts = [p for p in (x,) if a < p < b]
        return math.log(
            integrate.quad(lambda y: math.exp(-beta * abs(x - y)), a, b, points=pts or None, epsabs=0, epsrel=1e-13)[0]
        )

    g0 = logF(lo, hi)
    return max(abs(g0 - logF(lo + t, hi + t)) for t in np.linspace(-T, T, 81))


def test_realized_loss_matches_brute_force():
    rng = np.random.default_rng(1)
    for _ in range(25):
        lo = rng.normal()
        hi = lo + rng.uniform(0.01, 2.0)
        beta = rng.uniform(0.5, 10.0)
        T = rng.uniform(1e-3, 0.2)
        x = rng.uniform(lo - 1.0, hi + 1.0)
        assert ldp.realized_loss(x, lo, hi, beta, T) == pytest.approx(
            _brute_force_loss(x, lo, hi, beta, T), rel=1e-6, abs=1e-12
        )


def test_realized_loss_never_above_worst_case():
    rng = np.random.default_rng(2)
    n = 200_000
    lo = rng.normal(size=n)
    omega = np.where(rng.random(n) < 0.2, 0.0, rng.exponential(0.5, n) * rng.random(n) ** 8)
    beta = rng.uniform(0.1, 20.0, n)
    T = rng.uniform(0.0, 0.1, n)
    x = lo + rng.uniform(-3, 3, n) * np.maximum(omega, 1 / beta)
    eps = ldp.realized_loss(x, lo, lo + omega, beta, T)
    assert np.all(np.isfinite(eps)) and np.all(eps >= 0)
    assert np.all(eps <= beta * T * (1 + 1e-9) + 1e-15)
    # strictly below the worst case inside a proper interval
    inside = (omega > 4 * T) & (x > lo + 2 * T) & (x < lo + omega - 2 * T) & (T > 0)
    assert inside.sum() > 1000 and np.all(eps[inside] < beta[inside] * T[inside])


def test_realized_loss_degenerate_interval_is_pure_laplace():
    beta, T = np.array([2.0, 3.0, 5.0]), np.array([0.01, 0.02, 0.1])
    x = np.array([1.0, -2.0, 0.3])  # |x - a| >= T: exactly the worst case
    assert np.allclose(ldp.realized_loss(x, 0.0, 0.0, beta, T), beta * T, rtol=1e-12)
    # closer than T to the point mean: beta max_t ||x - t| - |x||
    assert ldp.realized_loss(0.004, 0.0, 0.0, 2.0, 0.01) == pytest.approx(2.0 * 0.01)
    assert ldp.realized_loss(0.0, 0.0, 0.0, 2.0, 0.01) == pytest.approx(2.0 * 0.01)
    # a vanishing interval tends to the same value
    assert ldp.realized_loss(1.0, 0.0, 1e-9, 2.0, 0.01) == pytest.approx(0.02, rel=1e-6)


def test_interval_log_mass_closed_forms():
    beta = 3.0
    for x, lo, hi in [(-1.0, 0.0, 0.5), (2.0, 0.0, 0.5), (0.2, 0.0, 0.5)]:
        expected = math.log(
            integrate.quad(
                lambda y, x=x: math.exp(-beta * abs(x - y)),
                lo,
                hi,
                points=[0.2] if lo < 0.2 < hi else None,
            )[0]
        )
        assert ldp.interval_log_mass(x, lo, hi, beta) == pytest.approx(expected, rel=1e-10)


def test_advanced_composition_footnote_1():
    eps = np.full(1400, 0.003)
    d = 1e-5
    paper = ldp.advanced_composition(eps, d, paper_form=True)
    assert paper == pytest.approx(1400 * 0.003 * math.tanh(0.0015) + math.sqrt(2 * 1400 * 0.003**2 * math.log(1 / d)))
    best = ldp.advanced_composition(eps, d)
    assert best <= min(paper, eps.sum())
    big = np.full(10, 2.0)
    assert ldp.advanced_composition(big, d) == pytest.approx(20.0)  # sum wins for few large steps


def test_laplace_pld_matches_pure_composition():
    # one Laplace mechanism with parameter b: epsilon -> 1/b as delta -> 0
    assert accountant.laplace_composition_epsilon([2.0], 1e-12) == pytest.approx(0.5, rel=1e-2)
    eps = 1.02 ** np.arange(1, 21) * 0.001  # 20 iterations, d = 14 coordinates
    params = np.repeat(1 / eps, 14)
    pld = accountant.laplace_composition_epsilon(params, 1e-5)
    assert pld <= ldp.advanced_composition(np.repeat(eps, 14), 1e-5) <= np.repeat(eps, 14).sum()


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: ldp.gamma_bound(0.001, 2.0, 0.001), "omega > alpha"),
        (lambda: ldp.gamma_bound(0.5, -1.0, 0.001), "beta > 0"),
        (lambda: ldp.realized_loss(0.0, 1.0, 0.0, 1.0, 0.1), "hi >= lo"),
        (lambda: ldp.realized_loss(0.0, 0.0, 1.0, 0.0, 0.1), "beta > 0"),
        (lambda: ldp.advanced_composition([0.1], 0.0), "delta"),
        (lambda: ldp.advanced_composition([-0.1], 0.1), "eps must be"),
        (lambda: accountant.laplace_composition_epsilon([0.0], 1e-5), "parameters"),
        (lambda: ldp.geometric_schedule(1.0, -1.02, 3), "growth"),
    ],
)
def test_bad_arguments(call, message):
    with pytest.raises(ValueError, match=message):
        call()
