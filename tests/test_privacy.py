"""Privacy accounting: the paper's bounds, DP-ADMM's moments accountant, and
the tight PLD/RDP accountants checked against the exact composed Gaussian.

Ground truth for the tight accountants: without subsampling, T Gaussian
mechanisms with noise multipliers z_k compose exactly to one Gaussian with
``z_eff = (sum z_k^-2)^(-1/2)``, whose exact epsilon is the analytic formula of
Balle and Wang (2018). ``composed_gaussian_epsilon`` implements it by hand and
is itself checked against dp-accounting's ``get_epsilon_gaussian``.
"""

import math

import dp_accounting
import numpy as np
import pytest

from vfl import privacy
from vfl.privacy import (
    ACCOUNTANTS,
    NEIGHBOURING,
    calibrate_sigma,
    composed_gaussian_epsilon,
    corollary1,
    data_dependent_sensitivity,
    delta_of,
    dp_admm_epsilon,
    epsilon_curve,
    epsilon_of,
    gaussian_events,
    laplace_event,
    lemma1_sensitivity,
    theorem1_epsilon,
    theorem1_sigma,
)

DELTA = 1e-5
# (z, T) from "one noisy step" to "many steps with little noise"; z = 48.4 and
# 4.84 are Theorem 1's sigma/C for eps = 0.1 and 1 at delta = 1e-5.
Z_T = [(1.0, 1), (2.0, 10), (4.84, 20), (5.0, 100), (48.4, 100), (10.0, 300)]


# --------------------------------------------------------------------------
# the paper's closed forms
# --------------------------------------------------------------------------
def test_lemma1_sensitivity_formula():
    # 3/(66*2) * (1e-3*2 + (1 + 2*2)*5) = 75.006/132
    assert lemma1_sensitivity(66, 2.0, 1e-3, 2, 5.0) == pytest.approx(0.5682272727, rel=1e-9)
    # c1 enters only through lam*c1; lam = 0 is allowed (no regularizer)
    assert lemma1_sensitivity(66, 2.0, 0.0, 2, 5.0, c1=7.0) == pytest.approx(3 / 132 * 25.0)


def test_theorem1_sigma_value_and_round_trip():
    # sqrt(2 ln(1.25e5)) * 2 / 0.5
    assert theorem1_sigma(0.5, DELTA, 2.0) == pytest.approx(19.37922105, rel=1e-8)
    for eps in (0.01, 0.1, 0.5, 1.0):
        for C in (0.3, 1.0, 7.0):
            sigma = theorem1_sigma(eps, 1e-3, C)
            assert theorem1_epsilon(sigma, 1e-3, C) == pytest.approx(eps, rel=1e-12)


def test_theorem1_epsilon_may_exceed_one():
    # too little noise for Theorem 1: returned, not refused, so callers can tell
    assert theorem1_epsilon(0.5, DELTA, 1.0) > 1.0


def test_corollary1_formula():
    # sqrt(2*10*ln(1e5))*0.1 + 10*0.1*(e^0.1 - 1) = 1.517427 + 0.105171
    eps_total, delta_total = corollary1(0.1, 10, 1e-5, 1e-5)
    assert eps_total == pytest.approx(1.6225980475, rel=1e-9)
    assert delta_total == pytest.approx(1.1e-4, rel=1e-12)


def test_data_dependent_sensitivity_is_lemma1_with_current_norms():
    args = dict(d_m=10, rho=1.5, lam=0.1, n_parties=3)
    C = data_dependent_sensitivity(**args, y_norm=0.2, residual_norm=4.0, x_norm=1.0)
    assert C == pytest.approx(lemma1_sensitivity(**args, b1=4.0))
    # never below the proof's intermediate bound 3/(d rho) [lam c1 + ||y|| + rho ||r||]
    assert C >= 3 / (10 * 1.5) * (0.1 * 2 + 0.2 + 1.5 * 4.0)
    # zero iterates, no regularizer: zero (the caller must handle it)
    assert data_dependent_sensitivity(5, 1.0, 0.0, 2, 0.0, 0.0, 0.0) == 0.0


def test_neighbouring_relation_is_exported():
    assert "one feature column" in NEIGHBOURING and "D_m" in NEIGHBOURING
    assert set(privacy.__all__) >= {"NEIGHBOURING", "epsilon_curve", "dp_admm_epsilon"}


# --------------------------------------------------------------------------
# DP-ADMM moments accountant
# --------------------------------------------------------------------------
@pytest.mark.parametrize("eps, expected", [(0.05, 0.5009), (0.1, 1.0193)])
def test_dp_admm_paper_numbers(eps, expected):
    assert dp_admm_epsilon(eps, 1e-3, 100) == pytest.approx(expected, abs=5e-5)


@pytest.mark.parametrize("eps", [0.05, 0.1, 0.5, 1.0])
def test_dp_admm_is_a_valid_bound_above_the_exact_one(eps):
    z = math.sqrt(2 * math.log(1.25 / 1e-3)) / eps
    assert dp_admm_epsilon(eps, 1e-3, 100) >= composed_gaussian_epsilon([z] * 100, 1e-3)


# --------------------------------------------------------------------------
# tight accountants vs the exact composed Gaussian
# --------------------------------------------------------------------------
@pytest.mark.parametrize("z, T", Z_T)
def test_closed_form_matches_dp_accounting_analytic_gaussian(z, T):
    exact = composed_gaussian_epsilon([z] * T, DELTA)
    library = dp_accounting.get_epsilon_gaussian(z / math.sqrt(T), DELTA)
    assert exact == pytest.approx(library, rel=1e-9)


@pytest.mark.parametrize("z, T", Z_T)
def test_pld_is_tight_and_rdp_is_an_upper_bound(z, T):
    exact = composed_gaussian_epsilon([z] * T, DELTA)
    event = gaussian_events([z] * T)
    eps_pld = epsilon_of(event, DELTA, "pld")
    eps_rdp = epsilon_of(event, DELTA, "rdp")
    assert exact * (1 - 1e-9) <= eps_pld <= exact * 1.01
    assert eps_rdp >= exact


def test_pld_beyond_its_float_range_returns_the_exact_value():
    # epsilon ~ 750: e^epsilon overflows float64 inside the PLD
    zs = [0.5] * 300
    assert epsilon_of(gaussian_events(zs), DELTA) == composed_gaussian_epsilon(zs, DELTA)
    assert _strictly_increasing(list(epsilon_curve(zs, DELTA)))


def test_heterogeneous_noise_matches_z_eff():
    rng = np.random.default_rng(0)
    for zs in (np.linspace(2.0, 10.0, 120), rng.uniform(3.0, 6.0, 40), [1.0, 5.0, 50.0]):
        z_eff = float(np.sum(np.asarray(zs) ** -2.0) ** -0.5)
        exact = composed_gaussian_epsilon(zs, DELTA)
        assert exact == pytest.approx(composed_gaussian_epsilon([z_eff], DELTA), rel=1e-10)
        event = gaussian_events(zs)
        assert exact * (1 - 1e-9) <= epsilon_of(event, DELTA, "pld") <= exact * 1.01
        assert epsilon_of(event, DELTA, "rdp") >= exact


def test_gaussian_events_groups_consecutive_equal_multipliers():
    event = gaussian_events([2.0, 2.0, 2.0, 5.0, 2.0])
    assert event == dp_accounting.ComposedDpEvent(
        [
            dp_accounting.SelfComposedDpEvent(dp_accounting.GaussianDpEvent(2.0), 3),
            dp_accounting.GaussianDpEvent(5.0),
            dp_accounting.GaussianDpEvent(2.0),
        ]
    )
    assert gaussian_events([3.0] * 1000) == dp_accounting.SelfComposedDpEvent(dp_accounting.GaussianDpEvent(3.0), 1000)
    assert gaussian_events([3.0]) == dp_accounting.GaussianDpEvent(3.0)


@pytest.mark.parametrize("accountant", ACCOUNTANTS)
def test_delta_of_inverts_epsilon_of(accountant):
    event = gaussian_events([5.0] * 50)
    eps = epsilon_of(event, DELTA, accountant)
    assert delta_of(event, eps, accountant) == pytest.approx(DELTA, rel=0.02)


def test_laplace_event():
    # a single Laplace mechanism of scale b is (1/b, 0)-DP, and no better
    eps = epsilon_of(laplace_event(2.0), DELTA)
    assert 0.5 * 0.999 <= eps <= 0.5 + 1e-6
    assert laplace_event(2.0, 10) == dp_accounting.SelfComposedDpEvent(dp_accounting.LaplaceDpEvent(2.0), 10)
    assert epsilon_of(laplace_event(2.0, 10), DELTA) < 10 * 0.5  # beats basic composition


# --------------------------------------------------------------------------
# monotonicity
# --------------------------------------------------------------------------
def _strictly_increasing(values):
    return all(b > a for a, b in zip(values, values[1:]))


@pytest.mark.parametrize("accountant", ACCOUNTANTS)
def test_tight_accountants_are_monotone(accountant):
    def eps(z, T):
        return epsilon_of(gaussian_events([z] * T), DELTA, accountant)

    more_noise = [eps(z, 20) for z in (2.0, 5.0, 10.0, 50.0)]
    assert _strictly_increasing(more_noise[::-1])
    more_epochs = [eps(5.0, T) for T in (1, 10, 50, 200)]
    assert _strictly_increasing(more_epochs)


def test_paper_and_moments_bounds_are_monotone():
    # less noise = larger per-iteration epsilon
    def cor1(e, T):
        return corollary1(e, T, DELTA, DELTA)[0]

    assert _strictly_increasing([cor1(e, 20) for e in (0.05, 0.1, 0.5, 1.0)])
    assert _strictly_increasing([cor1(0.5, T) for T in (1, 10, 20, 100)])
    assert _strictly_increasing([dp_admm_epsilon(e, 1e-3, 100) for e in (0.01, 0.05, 0.1, 0.5)])
    assert _strictly_increasing([dp_admm_epsilon(0.1, 1e-3, T) for T in (1, 10, 100, 300)])


# --------------------------------------------------------------------------
# calibration and per-epoch curves
# --------------------------------------------------------------------------
@pytest.mark.parametrize("accountant", ACCOUNTANTS)
@pytest.mark.parametrize("target, T", [(0.5, 10), (1.0, 100), (4.0, 300), (3.0, 1)])
def test_calibrate_then_account_round_trip(accountant, target, T):
    sensitivity = 0.7
    sigma = calibrate_sigma(target, DELTA, T, sensitivity, accountant)
    eps = epsilon_of(gaussian_events([sigma / sensitivity] * T), DELTA, accountant)
    assert target * 0.99 <= eps <= target * (1 + 1e-9)
    # the exact Gaussian needs no more noise than any valid accountant
    assert composed_gaussian_epsilon([sigma / sensitivity] * T, DELTA) <= target


@pytest.mark.parametrize("accountant", ACCOUNTANTS)
def test_epsilon_curve_constant_noise(accountant):
    curve = epsilon_curve([4.84] * 300, DELTA, accountant)
    assert curve.shape == (300,)
    assert _strictly_increasing(list(curve))
    for t in (1, 17, 300):
        assert curve[t - 1] == pytest.approx(epsilon_of(gaussian_events([4.84] * t), DELTA, accountant), rel=1e-9)


def test_epsilon_curve_varying_noise_matches_composition():
    zs = np.linspace(3.0, 9.0, 60)
    curve = epsilon_curve(zs, DELTA)
    for t in (1, 2, 30, 60):
        exact = composed_gaussian_epsilon(zs[:t], DELTA)
        assert exact * (1 - 1e-9) <= curve[t - 1] <= exact * 1.01
        assert curve[t - 1] == pytest.approx(epsilon_of(gaussian_events(zs[:t]), DELTA), rel=1e-3)


# --------------------------------------------------------------------------
# Corollary 1 vs tight accounting of the same noise
# --------------------------------------------------------------------------
@pytest.mark.parametrize("eps", [0.1, 0.5, 1.0])
@pytest.mark.parametrize("T", [10, 20, 100])
def test_corollary1_is_never_below_the_tight_epsilon(eps, T):
    eps_prime, delta_total = corollary1(eps, T, DELTA, DELTA)
    z = theorem1_sigma(eps, DELTA, 1.0)
    tight = epsilon_of(gaussian_events([z] * T), delta_total, "pld")
    assert eps_prime >= tight


# --------------------------------------------------------------------------
# refusals
# --------------------------------------------------------------------------
BAD_DELTAS = [0.0, 1.0, -1e-5, 1.5, float("nan")]


@pytest.mark.parametrize("delta", BAD_DELTAS)
def test_bad_delta_is_refused(delta):
    event = gaussian_events([1.0])
    calls = [
        lambda: theorem1_sigma(0.5, delta, 1.0),
        lambda: theorem1_epsilon(1.0, delta, 1.0),
        lambda: corollary1(0.5, 10, delta, 1e-5),
        lambda: dp_admm_epsilon(0.1, delta, 10),
        lambda: epsilon_of(event, delta),
        lambda: composed_gaussian_epsilon([1.0], delta),
        lambda: calibrate_sigma(1.0, delta, 10),
        lambda: epsilon_curve([1.0], delta),
    ]
    for call in calls:
        with pytest.raises(ValueError, match="delta"):
            call()
    with pytest.raises(ValueError, match="delta_prime"):
        corollary1(0.5, 10, 1e-5, delta)


@pytest.mark.parametrize("eps", [0.0, -0.1, float("inf")])
def test_bad_epsilon_is_refused(eps):
    event = gaussian_events([1.0])
    for call in (
        lambda: theorem1_sigma(eps, DELTA, 1.0),
        lambda: corollary1(eps, 10, DELTA, DELTA),
        lambda: dp_admm_epsilon(eps, DELTA, 10),
        lambda: delta_of(event, eps),
    ):
        with pytest.raises(ValueError, match="epsilon"):
            call()
    with pytest.raises(ValueError, match="target_epsilon"):
        calibrate_sigma(eps, DELTA, 10)


def test_theorem1_refuses_epsilon_above_one_with_the_reason():
    with pytest.raises(ValueError, match=r"Theorem 1 holds only for epsilon in \(0, 1\]"):
        theorem1_sigma(1.5, DELTA, 1.0)


@pytest.mark.parametrize("name", ["PLD", "moments", "", None])
def test_unknown_accountant_is_refused(name):
    event = gaussian_events([1.0])
    for call in (
        lambda: epsilon_of(event, DELTA, name),
        lambda: delta_of(event, 1.0, name),
        lambda: calibrate_sigma(1.0, DELTA, 10, accountant=name),
        lambda: epsilon_curve([1.0], DELTA, name),
    ):
        with pytest.raises(ValueError, match="accountant"):
            call()


def test_other_bad_parameters_are_refused():
    cases = [
        (lambda: gaussian_events([1.0, 0.0]), "noise_multipliers"),
        (lambda: gaussian_events([1.0, -2.0]), "noise_multipliers"),
        (lambda: gaussian_events([]), "noise_multipliers"),
        (lambda: composed_gaussian_epsilon([[1.0]], DELTA), "noise_multipliers"),
        (lambda: epsilon_curve([1.0, float("inf")], DELTA), "noise_multipliers"),
        (lambda: calibrate_sigma(1.0, DELTA, 0), "T"),
        (lambda: corollary1(0.5, 2.5, DELTA, DELTA), "T"),
        (lambda: dp_admm_epsilon(0.1, DELTA, 0), "T"),
        (lambda: calibrate_sigma(1.0, DELTA, 10, sensitivity=0.0), "sensitivity"),
        (lambda: theorem1_sigma(0.5, DELTA, -1.0), "sensitivity"),
        (lambda: theorem1_epsilon(0.0, DELTA, 1.0), "sigma"),
        (lambda: lemma1_sensitivity(0, 1.0, 0.1, 2, 1.0), "d_m"),
        (lambda: lemma1_sensitivity(5, 0.0, 0.1, 2, 1.0), "rho"),
        (lambda: lemma1_sensitivity(5, 1.0, -0.1, 2, 1.0), "lam"),
        (lambda: lemma1_sensitivity(5, 1.0, 0.1, 0, 1.0), "n_parties"),
        (lambda: lemma1_sensitivity(5, 1.0, 0.1, 2, 0.0), "b1"),
        (lambda: data_dependent_sensitivity(5, 1.0, 0.1, 2, -1.0, 0.0, 0.0), "y_norm"),
        (lambda: laplace_event(0.0), "parameter"),
        (lambda: laplace_event(1.0, 0), "count"),
        (lambda: epsilon_of("gaussian", DELTA), "event"),
        (lambda: epsilon_of(dp_accounting.UnsupportedDpEvent(), DELTA), "event"),
    ]
    for call, name in cases:
        with pytest.raises(ValueError, match=name):
            call()
