"""The exact sampler of deployment runs: distributions, grid releases, accounting."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from vfl.core.errors import ConfigError
from vfl.core.sampling import ExactSampler, grid_slack
from vfl.core.solver import Release, Streams, add_noise
from vfl.core.ledger import PrivacyLedger
from vfl.experiments.config import config_from_dict


def _chi2(samples, support, pmf):
    counts = np.array([(samples == k).sum() for k in support])
    expected = pmf / pmf.sum() * samples.size
    return stats.chisquare(counts, expected).pvalue


def test_bernoulli_exp_matches_exp_minus_g():
    s = ExactSampler()
    for num, den in ((0, 1), (1, 3), (3, 2), (7, 2)):
        draws = s.bernoulli_exp(np.full(200_000, num), np.full(200_000, den))
        p = np.exp(-num / den)
        assert abs(draws.mean() - p) < 5 * np.sqrt(p * (1 - p) / draws.size) + 1e-12


def test_discrete_laplace_pmf():
    s = ExactSampler()
    x = s.discrete_laplace(200_000, t=3)
    support = np.arange(-12, 13)
    assert _chi2(x[np.abs(x) <= 12], support, np.exp(-np.abs(support) / 3)) > 1e-4


def test_discrete_gaussian_pmf():
    s = ExactSampler(bits=2)  # sigma = 4
    x = s.discrete_gaussian(200_000)
    support = np.arange(-16, 17)
    assert _chi2(x[np.abs(x) <= 16], support, np.exp(-support**2 / 32.0)) > 1e-4
    assert abs(x.var() - 16) < 0.3  # the discrete Gaussian's variance is just below sigma^2


def test_grid_release_is_integer_multiple_near_the_mean():
    s = ExactSampler()
    mean = np.array([[0.1, -2.5, 3.0], [1e3, 0.0, -7.25]])
    scale = np.array([0.5, 2.0])
    out = s.add("gaussian", mean, scale)
    gamma = (scale / 2**20)[:, None]
    k = out / gamma
    assert np.array_equal(k, np.rint(k))  # every released value is on the grid
    assert np.all(np.abs(out - mean) < 8 * scale[:, None])


def test_add_noise_routes_to_the_exact_sampler_and_streams_choose_it():
    streams = Streams(0, replayable_noise=False, exact_noise=True)
    rng = streams.noise(1)
    assert isinstance(rng, ExactSampler)
    out = add_noise("laplace", np.zeros(5), 1.0, rng)
    assert np.array_equal(out * 2**20, np.rint(out * 2**20))
    assert not isinstance(Streams(0).noise(1), ExactSampler)


def test_release_charges_the_grid_and_the_ledger_uses_rdp():
    from vfl.core.solver import Solver

    solver = Solver()
    solver.begin_releases()
    solver.release(np.zeros(100), units=0, scale=2.0, sensitivity=1.0, rng=ExactSampler())
    (event,) = solver.releases()
    assert event.exact
    # the grid adds c * scale to the sensitivity; the scale grows so that their ratio is kept
    c = grid_slack("gaussian", 1.0, 100)
    assert event.sensitivity[0] == pytest.approx(1.0 + c * event.scale[0], rel=1e-12)
    assert event.scale[0] > 2.0 and event.sensitivity[0] / event.scale[0] == pytest.approx(0.5)
    exact, plain = PrivacyLedger(1e-5), PrivacyLedger(1e-5)
    exact.add([event])
    plain.add([Release("gaussian", event.units, np.array([1.0]), np.array([2.0]), 100)])
    assert exact.method.startswith("rdp") and plain.method.startswith("exact Gaussian")
    rdp = PrivacyLedger(1e-5, "rdp")
    rdp.add([Release("gaussian", event.units, np.array([1.0]), np.array([2.0]), 100)])
    assert exact.epsilon() == pytest.approx(rdp.epsilon(), rel=1e-9)  # RDP, same noise multiplier


def test_exact_laplace_uses_the_generic_pure_dp_rdp_bound():
    ledger = PrivacyLedger(1e-5)
    ledger.add([Release("laplace", np.array([0]), np.array([0.5]), np.array([1.0]), 3, True)])
    assert ledger.pure_epsilon() == pytest.approx(0.5)
    assert ledger.epsilon() <= 0.5 + 1e-12


_STACK = {"data": {"dataset": "synthetic", "options": {"n_train": 60, "n_test": 20,
                                                        "n_features": 4, "seed": 1}},
          "preprocessing": {"normalize_rows": True}, "partition": {"columns": [2, 2]},
          "solver": {"name": "private_stacking", "epochs": 1}}


def test_deployment_runs_account_by_rdp():
    deploy = config_from_dict({**_STACK, "privacy": {"epsilon": 1.0, "delta": 1e-5}})
    assert not deploy.privacy.replayable_noise and deploy.privacy.values["accountant"] == "rdp"
    sim = config_from_dict({**_STACK, "privacy": {"epsilon": 1.0, "delta": 1e-5,
                                                   "replayable_noise": True}})
    assert sim.privacy.values["accountant"] == "pld"
    with pytest.raises(ConfigError, match="deployment run draws exact discrete noise"):
        config_from_dict({**_STACK, "privacy": {"epsilon": 1.0, "delta": 1e-5,
                                                 "accountant": "pld"}})
