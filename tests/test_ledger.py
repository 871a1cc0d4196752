"""The privacy ledger: Laplace releases charged in l2, and the profile it claims."""

from __future__ import annotations

import math

import numpy as np
import pytest
from dp_accounting.rdp import rdp_privacy_accountant

from vfl.core.ledger import PrivacyLedger, _laplace_rdp
from vfl.core.releases import Release
from vfl.core.sampling import ExactSampler, grid_slack
from vfl.core.solver import Solver
from vfl.privacy import gaussian_delta

ORDERS = PrivacyLedger(1e-5)._orders


def _laplace(l1, scale, l2=None, units=(0,), size=14):
    units = np.asarray(units)
    return Release(
        "laplace",
        units,
        np.full(units.shape, l1),
        np.full(units.shape, scale),
        size,
        False,
        None if l2 is None else np.full(units.shape, l2),
    )


def test_laplace_rdp_is_below_the_zcdp_bound_of_pure_dp():
    """Bun and Steinke 2016, Prop. 3.3: an eps-DP mechanism is (alpha, alpha eps^2 / 2)-RDP."""
    eps = np.geomspace(1e-4, 5.0, 60)[:, None]
    rdp = _laplace_rdp(eps, ORDERS[None, :])
    assert np.all(rdp <= ORDERS[None, :] * eps**2 / 2 * (1 + 1e-9))
    assert np.all(rdp <= eps * (1 + 1e-12))


def test_the_l2_charge_bounds_the_exact_rdp_of_every_shift_it_admits():
    """Independent Laplace coordinates: the RDP of a shift ``a`` is ``sum_j D(|a_j| / b)``
    exactly. Every shift within the stated l1 and l2 bounds is charged at least that."""
    rng = np.random.default_rng(0)
    b = 0.7
    for _ in range(200):
        d = int(rng.integers(1, 20))
        a = rng.exponential(size=d) * rng.choice([1e-3, 0.1, 1.0, 5.0])
        a[1:][rng.random(d - 1) < 0.3] = 0.0  # some coordinates unmoved, never all
        exact = _laplace_rdp(np.abs(a)[:, None] / b, ORDERS[None, :]).sum(axis=0)
        ledger = PrivacyLedger(1e-5)
        ledger.add([_laplace(np.abs(a).sum(), b, np.linalg.norm(a), size=d)])
        assert np.all(exact <= ledger._lap_rdp[0] * (1 + 1e-9) + 1e-15)


def test_a_spread_shift_costs_d_times_less_rdp_and_a_smaller_epsilon():
    """Xiao et al.'s algorithms: one sample moves the iterate by alpha B_1 in l1 (sqrt(2d) w on
    disjoint halves of the support) but only alpha B_2 = alpha sqrt(2) w in l2."""
    d, w, T = 14, 0.01, 100
    l1_only, both = PrivacyLedger(1e-5), PrivacyLedger(1e-5)
    for _ in range(T):
        l1_only.add([_laplace(math.sqrt(2 * d) * w, 1.0)])
        both.add([_laplace(math.sqrt(2 * d) * w, 1.0, math.sqrt(2) * w)])
    # at small shifts both are near alpha (shift / b)^2 / 2: the ratio is d
    assert l1_only._lap_rdp[0, 0] / both._lap_rdp[0, 0] == pytest.approx(d, rel=0.02)
    assert both.epsilon() < l1_only.epsilon() / 3
    assert both.pure_epsilon() == l1_only.pure_epsilon() == pytest.approx(T * math.sqrt(2 * d) * w)
    assert both.laplace_mu() == pytest.approx(math.sqrt(T) * math.sqrt(2) * w)
    assert l1_only.laplace_mu() == math.inf  # no l2 bound stated: no l2 charge


def test_a_release_without_an_enforced_l2_bound_keeps_the_l1_charge():
    nan_l2, plain = PrivacyLedger(1e-5), PrivacyLedger(1e-5)
    nan_l2.add([_laplace(0.2, 1.0, float("nan"))])
    plain.add([_laplace(0.2, 1.0)])
    assert np.array_equal(nan_l2._lap_rdp, plain._lap_rdp)


def test_delta_at_is_the_profile_the_printed_point_lies_on():
    gauss = PrivacyLedger(1e-5)
    gauss.add([Release("gaussian", np.array([0, 1]), np.array([1.0, 0.5]), np.array([2.0, 2.0]), 3)])
    eps = gauss.epsilon()
    assert gauss.delta_at(eps)[0] == pytest.approx(1e-5, rel=1e-3)
    assert gauss.delta_at([0.1, 1.0])[0] == pytest.approx(gaussian_delta(0.1, 2.0))
    lap = PrivacyLedger(1e-5)
    for _ in range(50):
        lap.add([_laplace(0.05, 1.0, 0.02)])
    curve = lap.delta_at(np.linspace(0.0, 3.0, 31))
    assert np.all(np.diff(curve) <= 0) and curve[0] > 1e-3
    assert lap.delta_at(lap.epsilon())[0] <= 1e-5 * (1 + 1e-6)
    assert lap.delta_at(lap.pure_epsilon())[0] == 0.0  # basic composition: pure DP there
    unsound = PrivacyLedger(1e-5)
    unsound.add([_laplace(float("nan"), 1.0)])
    assert np.isnan(unsound.delta_at(1.0)).all()


def test_the_exact_sampler_adds_its_grid_to_the_l2_bound_too():
    solver = Solver()
    solver.begin_releases()
    solver.release(
        np.zeros(9), units=0, scale=2.0, sensitivity=1.0, l2_sensitivity=0.5, rng=ExactSampler(), mechanism="laplace"
    )
    (event,) = solver.releases()
    assert event.exact
    assert event.sensitivity[0] == pytest.approx(1.0 + grid_slack("laplace", 1.0, 9) * event.scale[0])
    assert event.l2_sensitivity[0] == pytest.approx(0.5 + grid_slack("gaussian", 1.0, 9) * event.scale[0])


def test_units_that_spent_alike_are_converted_once(monkeypatch):
    """The worst unit's epsilon and delta(epsilon) over 1000 agents alike and one apart: the
    one apart's, each unit's RDP curve converted once per distinct curve."""
    alike, apart = PrivacyLedger(1e-5), PrivacyLedger(1e-5)
    alike.add([_laplace(1.0, 2.0, 0.5, units=range(1000))])
    alike.add([_laplace(1.0, 2.0, 0.5, units=[1000]) for _ in range(3)])
    for _ in range(3):
        apart.add([_laplace(1.0, 2.0, 0.5)])
    calls = []
    real = rdp_privacy_accountant.compute_epsilon
    monkeypatch.setattr(rdp_privacy_accountant, "compute_epsilon", lambda *a: calls.append(1) or real(*a))
    worst = alike.epsilon()
    assert len(calls) == 2  # two curves: the thousand alike, and the one apart
    assert worst == apart.epsilon()
    np.testing.assert_array_equal(alike.delta_at([0.5, 2.0]), apart.delta_at([0.5, 2.0]))
