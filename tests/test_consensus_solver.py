"""Huang et al.'s consensus ADMM solvers (vfl.admm.consensus) as code: one vectorized
iteration against the per-provider loop, the sensitivities the releases carry, argument
checks, the provider split, pre-training and the central solve, and the solver interface.
"""

import math

import numpy as np
import pytest
import scipy.sparse as sp
from consensus_helpers import REGS, SOLVERS, loss_grad, make, objective, planted
from sklearn.linear_model import LogisticRegression

from vfl.admm.consensus import (
    DPADMM,
    ConsensusADMM,
    ConsensusADMMPerturbed,
    enforce_row_bound,
    split_providers,
    theorem1_sigma,
    theorem3_eta,
    theorem4_eta,
)
from vfl.admm.local_solvers import kkt_residual, newton, smooth_grad
from vfl.admm.pretrain import central_solve, consensus_optimum, pretrain_dw
from vfl.core.errors import ConfigError
from vfl.core.layouts import HorizontalData
from vfl.core.objective import Objective
from vfl.core.params import validate_table
from vfl.core.streams import Streams
from vfl.experiments.audit import audit_config
from vfl.experiments.config import config_from_dict, load_config
from vfl.experiments.runner import run_experiment


# ----------------------------------------- vectorized == loop over providers --
def reference_iteration(data, reg, state, *, rho, lam, eta=None, noise=None, exact=False):
    """One iteration written per provider, the way the listings read."""
    N, m, d = data.A.shape
    w, Wt, gamma = state
    lam_n = lam / N
    local = []
    for i in range(N):
        A, b = data.A[i], data.b[i]
        if exact:
            c = w + gamma[i] / rho
            a1, a2 = (lam_n, 0.0) if reg == "l1" else (0.0, lam_n)
            wi = newton(A[None], b[None], c[None], alpha1=a1, alpha2=a2, rho=rho, tol=1e-13).w[0]
        else:
            sub = np.sign(Wt[i]) if reg == "l1" else Wt[i]
            g = loss_grad(A, b, Wt[i]) + lam_n * sub
            wi = (rho * w + gamma[i] + Wt[i] / eta - g) / (rho + 1 / eta)
        local.append(wi + (0.0 if noise is None else noise[i]))
    new_w = np.mean(local, axis=0) - np.mean(gamma, axis=0) / rho
    new_gamma = np.array([gamma[i] - rho * (local[i] - new_w) for i in range(N)])
    return new_w, np.array(local), new_gamma


@pytest.mark.parametrize("cls", SOLVERS)
@pytest.mark.parametrize("reg", REGS)
def test_one_iteration_matches_the_per_provider_loop(cls, reg):
    data = planted(N=5, m=12, d=3)
    privacy = {} if cls is ConsensusADMM else {"epsilon_per_iteration": 0.3, "delta": 1e-4}
    s = make(cls, data, reg, privacy=privacy, seed=11)
    for _ in range(3):
        s.step()
    state = (s.w.copy(), s.W_shared.copy(), s.gamma.copy())
    k = s.iteration
    if cls is ConsensusADMM:
        noise, eta = None, None
    else:  # the solver's one draw of N x d normals from the run's noise stream
        rng = Streams(seed=11).noise()
        for _ in range(k):
            rng.standard_normal((s.N, s.d))
        sigma = s.sigma if cls is ConsensusADMMPerturbed else float(s.sigma_schedule(k))
        noise = sigma * rng.standard_normal((s.N, s.d))
        eta = float(s.eta_schedule(k)) if cls is DPADMM else None
    s.step()
    w, shared, gamma = reference_iteration(
        data, reg, state, rho=1.0, lam=0.17, eta=eta, noise=noise, exact=cls is not DPADMM
    )
    np.testing.assert_allclose(s.W_shared, shared, atol=1e-9)
    np.testing.assert_allclose(s.w, w, atol=1e-9)
    np.testing.assert_allclose(s.gamma, gamma, atol=1e-9)


# ------------------------------------------------------------- releases --
def test_dp_admm_releases_carry_lemma1_sensitivity():
    s = make(DPADMM, planted(), "l1", params={"D_w": 3.0}, privacy={"epsilon_per_iteration": 0.05})
    for k in range(3):
        planned = s.planned_releases()
        s.step()
        (r,) = s.releases()
        eta = theorem3_eta(k, D_w=3.0, lam=0.17, N=s.N, d=s.d)
        assert r.mechanism == "gaussian" and r.size == s.d
        np.testing.assert_array_equal(r.units, np.arange(s.N))
        np.testing.assert_allclose(r.sensitivity, 2 / (s.m * (1 + 1 / eta)))
        np.testing.assert_allclose(r.scale, theorem1_sigma(eta, m=s.m, rho=1.0, epsilon=0.05, delta=1e-3))
        np.testing.assert_allclose(r.noise_multiplier, math.sqrt(2 * math.log(1.25e3)) / 0.05)
        np.testing.assert_allclose(planned[0].scale, r.scale)
        np.testing.assert_allclose(planned[0].sensitivity, r.sensitivity)
    assert s.privacy_info().dump()["dp_guarantee"] is True


@pytest.mark.parametrize("mode", ["paper", "corrected"])
def test_algorithm2_releases_carry_the_enforced_bound(mode):
    s = make(
        ConsensusADMMPerturbed, planted(), "half_l2sq", privacy={"epsilon_per_iteration": 0.05, "sensitivity": mode}
    )
    s.step()
    (r,) = s.releases()
    enforced = 2 / (s.m * (1 + 0.17 / s.N)) + 2 * 1e-9 / (1 + 0.17 / s.N)
    np.testing.assert_allclose(r.sensitivity, enforced, rtol=1e-14)
    calibrated = 2 * s.N / (s.m * 0.17) if mode == "paper" else enforced
    np.testing.assert_allclose(r.scale, calibrated * math.sqrt(2 * math.log(1.25e3)) / 0.05)
    z = math.sqrt(2 * math.log(1.25e3)) / 0.05
    if mode == "paper":  # over-calibrated: the paper's bound misses rho (erratum E13)
        assert r.noise_multiplier[0] == pytest.approx(z * calibrated / enforced)
        assert calibrated / enforced > 30  # N (rho + lam/N) / lam = 36 here, ~590 in the paper
    else:
        assert r.noise_multiplier[0] == pytest.approx(z)


def test_algorithm2_unconverged_local_solve_has_no_sensitivity():
    s = make(
        ConsensusADMMPerturbed,
        planted(),
        "l1",
        params={"max_inner": 1, "inner_tol": 1e-14, "local_solver": "fista"},
        privacy={"epsilon_per_iteration": 0.05},
    )
    stats = s.step()
    (r,) = s.releases()
    assert stats["inner_unconverged"] == s.N and np.all(np.isnan(r.sensitivity))


def test_observer_sees_and_replaces_the_released_means():
    s = make(DPADMM, planted(), "half_l2sq", privacy={"epsilon_per_iteration": 0.1})
    seen = []

    def observer(solver, release, mean, rng):
        seen.append(mean.copy())
        return mean  # release the means themselves

    s.observer = observer
    s.step()
    np.testing.assert_array_equal(seen[0], s.W)
    np.testing.assert_array_equal(s.W_shared, s.W)


# ------------------------------------------------------- argument checks --
@pytest.mark.parametrize(
    "change, message",
    [
        (dict(reduction="mean", unit_size=None), "unit_mean"),
        (dict(unit_size=7), "unit_size = m"),
        (dict(regularizer="l2sq"), "'l1' or 'half_l2sq'"),
        (dict(loss="squared"), "logistic loss only"),
    ],
)
def test_bad_objective_is_refused(change, message):
    data = planted()
    kw = dict(loss="logistic", lam=0.17, reduction="unit_mean", regularizer="l1", unit_size=30)
    kw.update(change)
    p = validate_table("solver", {}, ConsensusADMM.params, owner="x")
    with pytest.raises(ValueError, match=message):
        ConsensusADMM(data, objective=Objective(**kw), params=p, privacy={}, streams=Streams(0), iterations=10)


def test_bad_data_is_refused():
    data = planted()
    with pytest.raises(ValueError, match="labels must be -1 or"):
        make(ConsensusADMM, HorizontalData(data.A, 0.5 * data.b), "l1")
    with pytest.raises(ValueError, match=r"\(N, m, d\)"):
        make(ConsensusADMM, HorizontalData(data.A[0], data.b[0]), "l1")
    ragged = HorizontalData([data.A[0], data.A[1, :-1]], [data.b[0], data.b[1, :-1]])
    p = validate_table("solver", {}, ConsensusADMM.params, owner="x")
    with pytest.raises(ValueError, match="equal numbers of samples"):
        ConsensusADMM(ragged, objective=objective("l1", 30), params=p, privacy={}, streams=Streams(0), iterations=10)
    big = HorizontalData(2.0 * data.A, data.b, data.public)
    for cls in (DPADMM, ConsensusADMMPerturbed):
        with pytest.raises(ValueError, match=r"norm 2 > 1.*preprocessing.row_clip = 1.0"):
            make(cls, big, "l1", privacy={"epsilon_per_iteration": 0.1})
        with pytest.raises(ValueError, match="set privacy.epsilon with privacy.delta"):
            make(cls, planted(), "l1")
    make(ConsensusADMM, big, "l1")  # the non-private algorithm needs no bound
    # the algorithm can still clip its own rows; a config refuses it (one space for all rows)
    s = make(DPADMM, big, "l1", privacy={"row_bound": "clip", "epsilon_per_iteration": 0.1})
    assert s.rows_clipped == data.A.shape[0] * data.A.shape[1]
    assert np.linalg.norm(s.A, axis=-1).max() <= 1.0
    with pytest.raises(ValueError, match="needs D_w"):
        make(DPADMM, HorizontalData(data.A, data.b), "l1", privacy={"epsilon_per_iteration": 0.1})
    with pytest.raises(ValueError, match="iterations"):
        make(DPADMM, data, "l1", iterations=0, privacy={"epsilon_per_iteration": 0.1})


def test_bad_helper_arguments_are_refused():
    with pytest.raises(ValueError, match="D_w must be finite and > 0"):
        theorem3_eta(0, D_w=0.0, lam=0.17, N=100, d=14)
    with pytest.raises(ValueError, match="loop index"):
        theorem4_eta(-1, D_w=1.0, lam=0.17, N=100, m=210, epsilon=0.1, delta=1e-3)
    with pytest.raises(ValueError, match="delta must be in"):
        theorem1_sigma(1.0, m=210, rho=1.0, epsilon=0.1, delta=1.0)
    with pytest.raises(ValueError, match="row_bound"):
        enforce_row_bound(np.ones((2, 2)), "project")
    X, y = np.ones((10, 2)), np.ones(10)
    with pytest.raises(ValueError, match="> 10 rows"):
        split_providers(X, y, providers=3, samples_per_provider=3, public=2, rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="providers must be an integer"):
        split_providers(X, y, providers=0, samples_per_provider=3, rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="regularizer"):
        central_solve(X, y, alpha=0.1, regularizer="l2sq")
    with pytest.raises(ValueError, match="rho > 0 needs the centres"):
        newton(np.ones((1, 3, 2)), np.ones((1, 3)), rho=1.0)


def test_params_declare_defaults_and_bounds():
    for cls in SOLVERS:
        names = [p.name for p in cls.params + cls.privacy_params]
        assert len(names) == len(set(names)) and all(p.help for p in cls.params)
        assert cls.setting.value == "horizontal" and cls.regularizers == REGS

    with pytest.raises(ConfigError, match="privacy.epsilon_per_iteration must be in \\(0, 1\\]"):
        validate_table("privacy", {"epsilon_per_iteration": 2.0}, DPADMM.privacy_params, owner="dp_admm")
    assert DPADMM.claims_guarantee({"noise": True, "delta": 1e-3})
    assert not DPADMM.claims_guarantee({"noise": False, "delta": 1e-3})


# ------------------------------------------------- split, pre-training, central --
def test_split_providers_is_a_random_partition():
    X = np.arange(40.0).reshape(20, 2)
    y = np.where(np.arange(20) % 3 == 0, 1.0, -1.0)
    data, (Xt, yt) = split_providers(
        X, y, providers=3, samples_per_provider=4, public=2, test=5, rng=np.random.default_rng(7)
    )
    assert data.A.shape == (3, 4, 2) and data.b.shape == (3, 4) and Xt.shape == (5, 2)
    rows = np.concatenate([data.public[0][:, 0], data.A[..., 0].ravel(), Xt[:, 0]]) / 2
    assert len(set(rows)) == 19  # disjoint
    np.testing.assert_array_equal(data.b.ravel(), y[(data.A[..., 0].ravel() / 2).astype(int)])
    again, _ = split_providers(
        X, y, providers=3, samples_per_provider=4, public=2, test=5, rng=np.random.default_rng(7)
    )
    np.testing.assert_array_equal(again.A, data.A)
    rest, (Xr, _) = split_providers(X, y, providers=3, samples_per_provider=4, rng=np.random.default_rng(7))
    assert rest.public is None and Xr.shape == (8, 2)


@pytest.mark.parametrize("reg", REGS)
def test_central_solve_matches_sklearn(reg):
    data = planted(N=1, m=300, d=5, seed=9, public=0)
    X, y = data.A[0], data.b[0]
    alpha = 0.01
    w = central_solve(X, y, alpha=alpha, regularizer=reg)
    g = smooth_grad(X[None], y[None], w[None], None, alpha2=0.0 if reg == "l1" else alpha)
    assert kkt_residual(g, w[None], alpha if reg == "l1" else 0.0)[0] <= 1e-10
    # sklearn minimizes R(w) + C sum_j l: the same problem with C = 1 / (alpha n)
    kw = dict(solver="liblinear", l1_ratio=1.0) if reg == "l1" else dict(solver="lbfgs", l1_ratio=0.0)
    sk = LogisticRegression(C=1 / (alpha * len(y)), fit_intercept=False, tol=1e-12, max_iter=100000, **kw).fit(X, y)
    np.testing.assert_allclose(w, sk.coef_[0], atol=2e-5)
    assert pretrain_dw(X, y, alpha, reg) == pytest.approx(np.linalg.norm(w))


def test_consensus_optimum_is_the_unit_mean_objective():
    data = planted(N=4, m=25, d=3, seed=2)
    for reg in REGS:
        w, F = consensus_optimum(data.A, data.b, lam=0.3, regularizer=reg)
        s = make(ConsensusADMM, data, reg, lam=0.3)
        s.w = w
        assert s.evaluate()["objective"] == pytest.approx(F, rel=1e-14)
        for direction in np.eye(3):
            for h in (1e-4, -1e-4):
                s.w = w + h * direction
                assert s.evaluate()["objective"] >= F


def test_dp_admm_pretrains_D_w_on_the_public_rows():
    data = planted()
    s = make(DPADMM, data, "half_l2sq", privacy={"epsilon_per_iteration": 0.1})
    w_hat = central_solve(*data.public, alpha=0.17 / data.A.shape[0], regularizer="half_l2sq")
    assert s.D_w == pytest.approx(np.linalg.norm(w_hat))
    s2 = make(DPADMM, data, "half_l2sq", params={"dw_weight": "lam"}, privacy={"epsilon_per_iteration": 0.1})
    assert s2.D_w < s.D_w


# ---------------------------------------------------------- the interface --
@pytest.mark.parametrize("cls", SOLVERS)
def test_margins_and_decision_function(cls):
    data = planted()
    s = make(cls, data, "half_l2sq", privacy={} if cls is ConsensusADMM else {"epsilon_per_iteration": 0.2})
    for _ in range(3):
        s.step()
    np.testing.assert_allclose(s.train_margins(), data.A.reshape(-1, s.d) @ s.w)
    X = np.random.default_rng(0).standard_normal((7, s.d))
    np.testing.assert_allclose(s.decision_function(X), X @ s.w)

    np.testing.assert_allclose(s.decision_function(sp.csr_matrix(X)), X @ s.w)
    info = s.privacy_info()
    assert (info is None) == (cls is ConsensusADMM)
    d = s.describe()
    assert d["N"] == s.N and d["m"] == s.m
    cols = set(s.evaluate()) | set(s.step())
    assert set(cls.columns) <= cols | {"objective"}


def test_same_seed_same_run_other_seed_other_noise():
    data = planted()
    runs = []
    for seed in (1, 1, 2):
        s = make(DPADMM, data, "l1", privacy={"epsilon_per_iteration": 0.1}, seed=seed)
        for _ in range(3):
            s.step()
        runs.append(s.w.copy())
    np.testing.assert_array_equal(runs[0], runs[1])
    assert not np.allclose(runs[0], runs[2])


# ----------------------------------------------------------------- audit --
@pytest.mark.parametrize("cls", [ConsensusADMMPerturbed, DPADMM])
def test_neighbours_change_one_record_of_one_provider_within_the_relation(cls):
    data = planted(N=4, m=20, d=5, seed=8)
    pairs = cls.neighbours(data, {}, np.random.default_rng(0))
    # natural, three changes of a real record, canary pairs: two model directions (a
    # reference fit and sum b a) at three angles each
    assert {p.kind for p in pairs} == {"natural", "candidate"} and len(pairs) == 10
    for p in pairs:
        base = data if p.base is None else p.base
        for D in (base, p.data):  # both datasets of the pair are inside the relation
            assert np.all(np.linalg.norm(D.A, axis=-1) <= 1 + 1e-12)
            assert np.all(np.abs(D.b) == 1.0)
            assert D.public is data.public  # the pre-training rows are public: unchanged
        changed = np.argwhere(np.any(p.data.A != base.A, axis=-1) | (p.data.b != base.b))
        assert len(changed) == 1 and changed[0, 0] == p.unit
    canaries = [p for p in pairs if p.base is not None]
    assert len(canaries) == 6
    for p in canaries:  # the canary itself is the only change from the run's data
        changed = np.argwhere(np.any(p.base.A != data.A, axis=-1))
        assert len(changed) == 1 and changed[0, 0] == p.unit


def test_dp_admm_passes_its_white_box_audit(tmp_path):
    path = tmp_path / "dp.toml"
    path.write_text("""
name = "dp-small"
[data]
dataset = "synthetic"
options = { n_train = 200, n_test = 100, n_features = 5, seed = 2 }
[partition]
agents = 5
samples_per_agent = 30
public = 40
held_out = "test_part"
[objective]
lam = 0.17
reduction = "unit_mean"
regularizer = "half_l2sq"
[solver]
name = "dp_admm"
epochs = 10
[preprocessing]
row_clip = 1.0
[privacy]
epsilon_per_iteration = 0.1
delta = 1e-3
""")
    report = audit_config(load_config(path), K=20, seed=1)
    assert report.verdict("guarantee") == "PASS" and report.verdict("paper") == "PASS"
    assert {p.kind for p in report.pairs} == {"natural", "adversarial"}
    assert "moments accountant" in report.labels["paper"]


@pytest.mark.parametrize("replayable", [True, False], ids=["simulation", "deployment"])
def test_privacy_epsilon_is_the_whole_runs_target(replayable):
    """privacy.epsilon is end to end: the per-iteration epsilon of Theorem 1 is solved for, and
    the ledger's epsilon after T iterations is the target (PLD, or RDP for exact noise)."""

    raw = {
        "data": {"dataset": "synthetic", "options": {"n_train": 400, "n_test": 100, "n_features": 5, "seed": 2}},
        "preprocessing": {"normalize_rows": True},
        "partition": {"agents": 5, "samples_per_agent": 60, "public": 40, "held_out": "test_part"},
        "objective": {"lam": 0.17, "reduction": "unit_mean", "regularizer": "half_l2sq"},
        "solver": {"name": "dp_admm", "epochs": 50},
        "privacy": {"epsilon": 1.0, "delta": 1e-3, "replayable_noise": replayable},
    }
    result = run_experiment(config_from_dict(raw), with_baselines=False)
    final = result.metrics["epsilon_tight"].iloc[-1]
    assert final == pytest.approx(1.0, rel=1e-4) and final <= 1.0 + 1e-9
    solver = result.manifest.dump()["solver"]
    assert solver["epsilon_target"] == 1.0 and 0 < solver["epsilon_per_iteration"] <= 1.0
    # the per-iteration one is the paper's parameter: naming it gives today's run
    raw["privacy"] = {
        "epsilon_per_iteration": solver["epsilon_per_iteration"],
        "delta": 1e-3,
        "replayable_noise": replayable,
    }
    again = run_experiment(config_from_dict(raw), with_baselines=False)
    assert again.metrics["epsilon_tight"].iloc[-1] == pytest.approx(final, rel=1e-9)
