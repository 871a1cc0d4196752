"""A run's repeats: composed in one ledger (a deployment) or independent replications (a
simulation), and said so.

A deployment publishes what every repeat releases, so its guarantee is the
composition of all of them: checked against dp-accounting directly (the
issue's numbers: a Gaussian calibrated by RDP to (1, 1e-5) costs about 1.68
over 3 repeats and 3.30 over 10 by its exact profile), and against one
ledger fed R times the releases.
"""

from __future__ import annotations

import json

import dp_accounting
import numpy as np
import pytest
from cli_helpers import invoke
from dp_accounting.pld import pld_privacy_accountant
from dp_accounting.rdp import rdp_privacy_accountant
from scipy.optimize import brentq
from test_reproduce_dp_admm import dump_toml

from vfl.core.ledger import PrivacyLedger, compose
from vfl.core.releases import Release
from vfl.experiments import runner
from vfl.experiments.config import config_from_dict
from vfl.experiments.repeats import Repeats

DELTA = 1e-5
_SYN = {"dataset": "synthetic", "options": {"n_train": 600, "n_test": 120, "n_features": 8, "seed": 3}}
#: private stacking, a deployment (exact noise, OS entropy) at (1, 1e-5), three repeats
STACKING = {
    "name": "s",
    "data": _SYN,
    "preprocessing": {"normalize_rows": True},
    "partition": {"columns": [4, 4]},
    "objective": {"lam": 1.0},
    "solver": {"name": "private_stacking", "epochs": 1},
    "privacy": {"epsilon": 1.0, "delta": DELTA},
    "run": {"repeats": 3},
}
#: DP-ADMM, a deployment: providers' rows dealt afresh per repeat
DP_ADMM = {
    "name": "d",
    "data": _SYN,
    "preprocessing": {"normalize_rows": True},
    "partition": {"agents": 5, "samples_per_agent": 100, "public": 50, "held_out": "test_part"},
    "objective": {"lam": 0.1, "reduction": "unit_mean", "regularizer": "half_l2sq"},
    "solver": {"name": "dp_admm", "epochs": 10},
    "privacy": {"epsilon": 1.0, "delta": 1e-3},
    "run": {"repeats": 3},
}


def _events(z: float, n: int, accountant):
    acc = accountant()
    acc.compose(dp_accounting.GaussianDpEvent(z), n)
    return acc.get_epsilon(DELTA)


def _rdp(z, n):
    return _events(z, n, rdp_privacy_accountant.RdpAccountant)


def _pld(z, n):
    return _events(z, n, pld_privacy_accountant.PLDAccountant)


def _z_for(epsilon: float) -> float:
    """The noise multiplier RDP calibrates to (epsilon, 1e-5) for one Gaussian release."""

    return brentq(lambda z: _rdp(z, 1) - epsilon, 0.3, 50.0, xtol=1e-13)


def _one_release(z: float, exact: bool, accountant: str) -> PrivacyLedger:
    ledger = PrivacyLedger(DELTA, accountant)
    ledger.add([Release("gaussian", np.array([0]), np.array([1.0]), np.array([z]), 10, exact)])
    return ledger


@pytest.mark.parametrize("R, issue", [(3, 1.68), (10, 3.30)])
def test_repeats_compose_as_dp_accounting_composes_them(R, issue):
    z = _z_for(1.0)
    # deployment noise is exact, accounted by RDP: R releases are RDP's composition of R
    exact = compose([_one_release(z, True, "rdp") for _ in range(R)], same_units=True)
    assert exact.epsilon() == pytest.approx(_rdp(z, R), rel=1e-9)
    # the same Gaussians' exact profile: the issue's numbers (dp-accounting's PLD is above it)
    tight = compose([_one_release(z, False, "pld") for _ in range(R)], same_units=True)
    assert round(tight.epsilon(), 2) == issue
    assert tight.epsilon() == pytest.approx(_pld(z, R), rel=2e-3)
    assert tight.epsilon() <= _pld(z, R) + 1e-9 < exact.epsilon()


def test_composition_adds_per_unit_or_charges_each_run_its_worst_unit():
    def ledger(ratios):
        x = PrivacyLedger(DELTA)
        x.add([Release("gaussian", np.arange(len(ratios)), np.asarray(ratios, float), np.ones(len(ratios)), 3)])
        return x

    a, b = ledger([0.6, 0.1]), ledger([0.1, 0.8])
    same = compose([a, b], same_units=True)  # unit 0 held the same records both times
    assert same.gaussian_mu() == pytest.approx(np.hypot(0.1, 0.8))
    dealt = compose([a, b], same_units=False)  # a record may be at unit 0, then at unit 1
    assert dealt.gaussian_mu() == pytest.approx(np.hypot(0.6, 0.8))
    assert dealt.epsilon() > same.epsilon()
    laplace = PrivacyLedger(DELTA)
    laplace.add([Release("laplace", np.arange(2), np.array([0.2, 0.5]), np.ones(2), 1)])
    both = compose([laplace, laplace], same_units=False)
    assert both.pure_epsilon() == pytest.approx(1.0) and both.laplace
    unsound = PrivacyLedger(DELTA)
    unsound.add([Release("gaussian", np.arange(1), np.array([np.nan]), np.ones(1), 1)])
    assert np.isnan(compose([a, unsound], same_units=True).epsilon())


class _Kept(Repeats):
    last = None

    def __init__(self, *args):
        super().__init__(*args)
        _Kept.last = self


@pytest.mark.parametrize("raw", [STACKING, DP_ADMM], ids=["parties", "providers"])
def test_a_deployments_epsilon_is_one_ledger_of_every_repeats_releases(raw, monkeypatch):
    monkeypatch.setattr(runner, "Repeats", _Kept)
    config = config_from_dict(raw)
    result = runner.run_experiment(config, with_baselines=False)
    spent = result.manifest.dump()["privacy"]["spent"]
    # one ledger fed every repeat's releases (providers: every release charged to one unit,
    # since the rows are dealt afresh and each repeat's providers are charged alike)
    delta = config.privacy.values["delta"]
    ledger = PrivacyLedger(delta, config.privacy.values["accountant"])
    for history in _Kept.last.histories:
        for released in history:
            if raw is DP_ADMM:
                released = [
                    Release(r.mechanism, np.zeros(1, int), r.sensitivity[:1], r.scale[:1], r.size, r.exact)
                    for r in released
                ]
            ledger.add(released)
    assert len(_Kept.last.histories) == 3
    assert spent["epsilon_tight"] == pytest.approx(ledger.epsilon(), rel=1e-12)
    assert result.metrics["epsilon_tight"].iloc[-1] == spent["epsilon_tight"]
    one = spent["repeats"]["per_repeat_epsilon_tight"]
    assert len(one) == 3 and max(one) <= 1.0 + 1e-9 and one[0] == pytest.approx(1.0, rel=1e-4)
    # and against dp-accounting: each repeat is one Gaussian of its composed noise multiplier
    assert (
        spent["epsilon_tight"] == pytest.approx(_rdp(_z_for(one[0]), 3), rel=1e-6)
        if raw is STACKING
        else spent["epsilon_tight"] > 1.5
    )
    # every repeat's rows carry the run's epsilon at that iteration, the same in each
    reps = result.repeats
    assert reps.groupby("epoch")["epsilon_tight"].nunique().max() == 1
    assert spent["repeats"]["composed"] and "composed in one ledger" in spent["repeats"]["meaning"]


def _write(tmp_path, raw):
    path = tmp_path / f"{raw['name']}.toml"
    path.write_text(dump_toml(raw))
    return path


def test_the_summary_says_what_the_repeats_cost(tmp_path):
    cfg = _write(tmp_path, STACKING)
    deployment = invoke("run", "--config", cfg, "--out", tmp_path / "d", "--release-only")
    assert deployment.returncode == 0, deployment.stderr
    eps = json.loads((tmp_path / "d" / "manifest.json").read_text())["privacy"]["spent"]
    # RDP's composition of three (1, 1e-5) releases, printed rounded up
    assert eps["epsilon_tight"] == pytest.approx(_rdp(_z_for(1.0), 3), rel=1e-4)
    assert "privacy guarantee: (1.825, 1e-05)-DP after 1 round" in deployment.stdout
    assert (
        "repeats: the 3 repeats released 3 models of the same records; the guarantee is "
        "all of them composed in one ledger (one repeat alone: epsilon 1)"
    ) in deployment.stdout
    simulation = invoke("run", "--config", cfg, "--out", tmp_path / "s", "--set", "privacy.replayable_noise=true")
    assert simulation.returncode == 0, simulation.stderr
    assert "privacy guarantee: (1, 1e-05)-DP" in simulation.stdout
    assert (
        "repeats: the 3 repeats are independent replications of a simulation (replayable "
        "noise), each (1, 1e-05)-DP on its own; the 3 together are not covered by that "
        "epsilon"
    ) in simulation.stdout
    man = json.loads((tmp_path / "s" / "manifest.json").read_text())
    assert man["privacy"]["spent"]["repeats"]["composed"] is False
    assert "independent replications" in man["privacy"]["spent"]["repeats"]["meaning"]
    single = invoke("run", "--config", cfg, "--out", tmp_path / "one", "--set", "run.repeats=1")
    assert single.returncode == 0 and "repeats:" not in single.stdout


def test_the_budget_holds_across_a_deployments_repeats():
    raw = {**DP_ADMM, "privacy": {**DP_ADMM["privacy"], "budget_epsilon": 1.5}}
    result = runner.run_experiment(config_from_dict(raw), with_baselines=False, stop_at_budget=True)
    budget = result.manifest.dump()["privacy"]["budget"]
    stop = budget["stopped"]
    # repeat 0 spends 1; repeat 1 stops before the iteration that would pass 1.5; repeat 2
    # releases nothing
    assert stop["repeat"] == 1 and stop["epsilon_spent"] <= 1.5 < stop["epsilon_next_epoch"]
    lengths = result.repeats.groupby("repeat")["epoch"].max().tolist()
    assert lengths == [10, stop["after_epoch"], 0]
    assert result.manifest.dump()["privacy"]["spent"]["epsilon_tight"] == pytest.approx(
        stop["epsilon_spent"], rel=1e-12
    )
    assert result.metrics["epsilon_tight"].max() <= 1.5
    # a simulation's repeats are replications: each stops at the budget on its own
    sim = {**raw, "privacy": {**raw["privacy"], "replayable_noise": True}}
    result = runner.run_experiment(config_from_dict(sim), with_baselines=False, stop_at_budget=True)
    assert result.repeats.groupby("repeat")["epoch"].max().tolist() == [10, 10, 10]
