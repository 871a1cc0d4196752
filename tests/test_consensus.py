"""Huang et al.'s consensus ADMM, Algorithm 2 and DP-ADMM (vfl.admm.consensus).

Spec ``dp-admm-huang.md`` section 8, tests (a)-(j) ((i) needs the real data:
tests/test_adult_paper.py), plus vectorized-vs-loop equivalence, argument
checks and the sensitivities carried by the releases. The two headline
epsilon-bar values (0.5009, 1.0193) are in tests/test_privacy.py.
"""

import math

import numpy as np
import pytest
import scipy.optimize
from scipy.special import expit

from vfl.core.objective import Objective
from vfl.admm.consensus import (
    DPADMM,
    ConsensusADMM,
    ConsensusADMMPerturbed,
    algorithm2_argmin_sensitivity,
    algorithm2_enforced_sensitivity,
    algorithm2_sigma,
    augmented_objective,
    dp_admm_closed_form,
    empirical_loss,
    enforce_row_bound,
    lemma1_sensitivity,
    local_objectives,
    split_providers,
    theorem1_sigma,
    theorem3_eta,
    theorem4_eta,
)
from vfl.admm.local_solvers import fista, kkt_residual, newton, smooth_grad
from vfl.admm.pretrain import central_solve, consensus_optimum, pretrain_dw
from vfl.core.params import validate_table
from vfl.core.solver import HorizontalData, Streams
from vfl.privacy import dp_admm_epsilon

REGS = ("l1", "half_l2sq")
SOLVERS = (ConsensusADMM, ConsensusADMMPerturbed, DPADMM)


# ---------------------------------------------------------------- helpers --
def unit_rows(X):
    return X / np.linalg.norm(X, axis=-1, keepdims=True)


def planted(N=6, m=30, d=5, seed=0, public=40):
    """Providers' rows of unit norm with logistic labels from a planted model."""
    rng = np.random.default_rng(seed)
    n = N * m + public
    X = unit_rows(rng.standard_normal((n, d)) + 0.3)
    w = 3.0 * rng.standard_normal(d)
    y = np.where(rng.random(n) < expit(X @ w), 1.0, -1.0)
    data, _ = split_providers(X, y, providers=N, samples_per_provider=m, public=public,
                              rng=np.random.default_rng(seed + 1))
    return data


def objective(reg, m, lam=0.17):
    return Objective(loss="logistic", lam=lam, reduction="unit_mean", regularizer=reg, unit_size=m)


def make(cls, data, reg, *, params=None, privacy=None, lam=0.17, seed=3, iterations=100):
    p = validate_table("solver", params or {}, cls.params, owner=cls.name)
    q = validate_table("privacy", privacy or {}, cls.privacy_params, owner=cls.name)
    return cls(data, objective=objective(reg, data.A.shape[1], lam), params=p, privacy=q,
               streams=Streams(seed=seed), iterations=iterations)


def loss_grad(A, b, w):
    """(1/m) sum_j l'(a_j, b_j, w) for one provider, written out per sample."""
    return np.mean([-bj * aj * expit(-bj * aj @ w) for aj, bj in zip(A, b)], axis=0)


# ------------------------------------------------- (a) moments accountant --
# Spec 3.4 table (T = 100); the (0.05, 1e-3) and (0.1, 1e-3) entries are in test_privacy.py.
EPS_BAR = {
    1e-3: (0.0988, 0.1982, None, 0.7061, None, 2.1087),
    1e-4: (0.0991, 0.1987, 0.5007, 0.7047, 1.0148, 2.0834),
    1e-5: (0.0993, 0.1989, 0.5006, 0.7038, 1.0118, 2.0671),
    1e-6: (0.0994, 0.1991, 0.5005, 0.7031, 1.0098, 2.0553),
}
EPSILONS = (0.01, 0.02, 0.05, 0.07, 0.1, 0.2)


@pytest.mark.parametrize("delta", sorted(EPS_BAR))
def test_a_epsilon_bar_table(delta):
    for eps, expected in zip(EPSILONS, EPS_BAR[delta]):
        if expected is not None:
            assert dp_admm_epsilon(eps, delta, 100) == pytest.approx(expected, abs=5e-5)


@pytest.mark.parametrize("cls", [DPADMM, ConsensusADMMPerturbed])
def test_a_solvers_report_the_paper_accountant(cls):
    s = make(cls, planted(), "half_l2sq", privacy={"epsilon_per_iteration": 0.05, "delta": 1e-4})
    assert s.paper_epsilon() is None
    for _ in range(7):
        s.step()
    assert s.paper_epsilon() == (dp_admm_epsilon(0.05, 1e-4, 7), 1e-4)


# --------------------------------------------------------- (b) closed form --
@pytest.mark.parametrize("reg", REGS)
def test_b_closed_form_minimizes_the_approximate_lagrangian(reg):
    rng = np.random.default_rng(1)
    data = planted(N=3, m=20, d=4)
    A, b = data.A, data.b
    Wt, gamma = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    w, eta, rho, lam_n = rng.standard_normal(4), 0.7, 1.3, 0.05
    W = dp_admm_closed_form(A, b, Wt, w, gamma, eta=eta, rho=rho, lam_per_provider=lam_n,
                            regularizer=reg)
    for i in range(3):
        sub = np.sign(Wt[i]) if reg == "l1" else Wt[i]
        g = loss_grad(A[i], b[i], Wt[i]) + lam_n * sub  # f_i'(w~_i^k)

        def L_hat(x, i=i, g=g):  # eq. (2) for provider i, constants dropped
            return (g @ (x - Wt[i]) - gamma[i] @ (x - w) + rho / 2 * np.sum((x - w) ** 2)
                    + np.sum((x - Wt[i]) ** 2) / (2 * eta))

        num = scipy.optimize.minimize(L_hat, np.zeros(4), method="BFGS", options={"gtol": 1e-12})
        np.testing.assert_allclose(W[i], num.x, atol=1e-7)


# ---------------------------------------------------------- (c) sensitivity --
def neighbours(rng, m, d):
    """A dataset and a neighbour: one record replaced, both with ||a|| <= 1, |b| = 1."""
    A = unit_rows(rng.standard_normal((m, d))) * rng.uniform(0.5, 1.0, (m, 1))
    b = rng.choice([-1.0, 1.0], m)
    A2, b2 = A.copy(), b.copy()
    j = rng.integers(m)
    A2[j] = unit_rows(rng.standard_normal(d)) * rng.uniform(0.5, 1.0)
    b2[j] = rng.choice([-1.0, 1.0])
    return A, b, A2, b2


@pytest.mark.parametrize("reg", REGS)
def test_c_dp_admm_lemma1_bound_holds_on_random_neighbours(reg):
    rng = np.random.default_rng(2)
    m, d, rho, worst = 15, 4, 1.0, 0.0
    for trial in range(300):
        A, b, A2, b2 = neighbours(rng, m, d)
        Wt = 3.0 * rng.standard_normal((1, d))
        w, gamma = rng.standard_normal(d), rng.standard_normal((1, d))
        eta = rng.uniform(0.05, 5.0)
        kw = dict(eta=eta, rho=rho, lam_per_provider=0.01, regularizer=reg)
        x1 = dp_admm_closed_form(A[None], b[None], Wt, w, gamma, **kw)
        x2 = dp_admm_closed_form(A2[None], b2[None], Wt, w, gamma, **kw)
        bound = lemma1_sensitivity(eta, m=m, rho=rho)
        worst = max(worst, np.linalg.norm(x1 - x2) / bound)
    assert worst <= 1.0
    assert worst > 0.3  # the bound is not vacuous


@pytest.mark.parametrize("reg", REGS)
@pytest.mark.parametrize("tol", [1e-10, 3e-3])
def test_c_algorithm2_enforced_bound_holds_with_inexact_solves(reg, tol):
    """E13's 2 S1/(m mu) plus 2 g/mu: neighbours solved from different warm starts."""
    rng = np.random.default_rng(4)
    m, d, rho, lam_n = 15, 4, 1.0, 0.05
    a1, a2 = (lam_n, 0.0) if reg == "l1" else (0.0, lam_n)
    mu = rho + a2
    worst = 0.0
    for trial in range(60):
        A, b, A2, b2 = neighbours(rng, m, d)
        c = 2.0 * rng.standard_normal((1, d))
        for solve in (newton, fista):
            kw = dict(alpha1=a1, alpha2=a2, rho=rho, tol=tol)
            r1 = solve(A[None], b[None], c, w0=c + rng.standard_normal((1, d)), **kw)
            r2 = solve(A2[None], b2[None], c, w0=c - rng.standard_normal((1, d)), **kw)
            assert r1.converged.all() and r2.converged.all()
            bound = algorithm2_enforced_sensitivity(m=m, mu=mu, tol=tol)
            worst = max(worst, np.linalg.norm(r1.w - r2.w) / bound)
    assert worst <= 1.0
    assert algorithm2_argmin_sensitivity(m=210, mu=1.0017) == pytest.approx(0.00950, abs=1e-5)


# --------------------------------------------------------- (d) dual sum = 0 --
@pytest.mark.parametrize("cls", SOLVERS)
@pytest.mark.parametrize("reg", REGS)
def test_d_duals_sum_to_zero(cls, reg):
    s = make(cls, planted(), reg, privacy={"epsilon_per_iteration": 0.1} if cls is not ConsensusADMM else {})
    for _ in range(5):
        s.step()
        scale = max(1.0, float(np.abs(s.gamma).max()))
        np.testing.assert_allclose(s.gamma.sum(axis=0), 0.0, atol=1e-12 * scale * s.N)
        # hence (3c) is the plain mean of what providers sent
        np.testing.assert_allclose(s.w, s.W_shared.mean(axis=0), atol=1e-12 * scale)


# ----------------------------------------------------- (e), (f) the numbers --
@pytest.mark.parametrize("reg, D_w, k, eta, inv_eta, sigma", [
    ("l1", 10, 0, 7.02637, 0.14232, 0.62971),
    ("l1", 10, 9, 2.22193, 0.45006, 0.49607),
    ("l1", 10, 99, 0.70264, 1.42321, 0.29685),
    ("l2", 6, 0, 2.37390, 0.42125, 0.50613),
    ("l2", 6, 9, 1.26927, 0.78786, 0.40234),
    ("l2", 6, 99, 0.51356, 1.94718, 0.24407),
])
def test_e_worked_eta_sigma_numbers(reg, D_w, k, eta, inv_eta, sigma):
    common = dict(D_w=D_w, lam=0.17, N=100)
    got = (theorem3_eta(k, d=14, **common) if reg == "l1" else
           theorem4_eta(k, m=210, epsilon=0.05, delta=1e-3, **common))
    assert got == pytest.approx(eta, abs=6e-6)
    assert 1 / got == pytest.approx(inv_eta, abs=6e-6)
    s = theorem1_sigma(got, m=210, rho=1.0, epsilon=0.05, delta=1e-3)
    assert s == pytest.approx(sigma, abs=6e-6)
    # (rho + 1/eta) sigma = 2 S1 sqrt(2 L) / (m eps) is constant
    assert s * (1 + 1 / got) == pytest.approx(2 * math.sqrt(2 * math.log(1.25e3)) / 10.5)


def test_e_schedules_inside_the_solver():
    data = planted()
    s = make(DPADMM, data, "half_l2sq", params={"D_w": 6.0},
             privacy={"epsilon_per_iteration": 0.05, "delta": 1e-3})
    k = np.arange(20)
    np.testing.assert_allclose(s.eta_schedule(k), theorem4_eta(
        k, D_w=6.0, lam=0.17, N=s.N, m=s.m, epsilon=0.05, delta=1e-3))
    assert np.all(np.diff(s.sigma_schedule(k)) < 0)  # sigma decreases with k


SIGMA_ALG2 = {
    1e-3: (2115.67, 1057.84, 423.13, 302.24, 211.57, 105.78),
    1e-4: (2433.40, 1216.70, 486.68, 347.63, 243.34, 121.67),
    1e-5: (2714.18, 1357.09, 542.84, 387.74, 271.42, 135.71),
    1e-6: (2968.52, 1484.26, 593.70, 424.07, 296.85, 148.43),
}


@pytest.mark.parametrize("delta", sorted(SIGMA_ALG2))
def test_f_algorithm2_sigma_table(delta):
    for eps, expected in zip(EPSILONS, SIGMA_ALG2[delta]):
        got = algorithm2_sigma(N=100, m=210, lam=0.17, epsilon=eps, delta=delta)
        assert got == pytest.approx(expected, abs=0.006)


# ------------------------------------------- (g) noiseless DP-ADMM converges --
@pytest.mark.parametrize("reg", REGS)
def test_g_noiseless_dp_admm_approaches_the_central_optimum(reg):
    data = planted(N=5, m=40, d=4, seed=5)
    w_star, F_star = consensus_optimum(data.A, data.b, lam=0.17, regularizer=reg)
    s = make(DPADMM, data, reg, params={"D_w": float(np.linalg.norm(w_star))},
             privacy={"noise": False, "epsilon_per_iteration": 0.5}, iterations=3000)
    F0 = s.evaluate()["objective"]
    for _ in range(3000):
        s.step()
    assert s.releases() == [] and s.paper_epsilon() is None
    F = s.evaluate()["objective"]
    assert F >= F_star - 1e-9
    assert (F - F_star) / (F0 - F_star) < 2e-3
    assert np.linalg.norm(s.w - w_star) < 0.05 * np.linalg.norm(w_star)


@pytest.mark.parametrize("reg", REGS)
def test_algorithm1_converges_to_the_central_optimum(reg):
    data = planted(N=5, m=40, d=4, seed=6)
    w_star, F_star = consensus_optimum(data.A, data.b, lam=0.17, regularizer=reg)
    s = make(ConsensusADMM, data, reg, iterations=800)
    for _ in range(800):  # linear convergence; l1 is the slower one here
        s.step()
    np.testing.assert_allclose(s.w, w_star, atol=1e-7)
    assert s.evaluate()["objective"] == pytest.approx(F_star, abs=1e-9)


# ------------------------------------------------------ (h) exact local KKT --
@pytest.mark.parametrize("reg", REGS)
@pytest.mark.parametrize("solver", ["newton", "fista"])
def test_h_exact_local_solves_meet_kkt(reg, solver):
    data = planted()
    s = make(ConsensusADMM, data, reg, params={"local_solver": solver, "inner_tol": 1e-10})
    for _ in range(4):
        centres = s.w + s.gamma / s.rho  # line 4's c_i = w^k + gamma_i^k / rho
        stats = s.step()
        assert stats["inner_unconverged"] == 0
        res = s.kkt_residuals()
        assert res.max() <= 1e-10
        assert s.evaluate()["kkt_residual"] == res.max()
    # and the point is the argmin found by an independent method
    i, c = 2, centres[2]
    lam_n = s.lam_per_provider
    reg_fn = (lambda x: lam_n * np.abs(x).sum()) if reg == "l1" else (lambda x: lam_n / 2 * x @ x)

    def phi(x):
        return np.logaddexp(0, -data.b[i] * (data.A[i] @ x)).mean() + reg_fn(x) \
            + s.rho / 2 * np.sum((x - c) ** 2)

    num = scipy.optimize.minimize(phi, np.zeros(s.d), method="Nelder-Mead",
                                  options={"xatol": 1e-10, "fatol": 1e-14, "maxiter": 40000})
    assert phi(s.W[i]) <= phi(num.x) + 1e-12
    np.testing.assert_allclose(s.W[i], num.x, atol=1e-5)


@pytest.mark.parametrize("reg", REGS)
@pytest.mark.parametrize("solver", ["newton", "fista"])
def test_each_provider_solved_alone_gives_its_batched_result_to_the_bit(reg, solver):
    """Line 4 is each provider's own argmin: a batched solve freezes a converged provider, so
    every provider alone (a batch of one, as on a worker of its own) gets the same point,
    residual and step count to the bit, whatever the others in its batch do."""
    data = planted(N=6, m=30, d=5, seed=4)
    rng = np.random.default_rng(5)
    # far-apart centres and warm starts: the providers need different numbers of steps
    c = rng.standard_normal((6, 5)) * np.array([0.1, 1.0, 3.0, 10.0, 30.0, 100.0])[:, None]
    w0 = np.where(np.arange(6)[:, None] % 2, c + 1e-3, 0.0)
    a1, a2 = (0.05, 0.0) if reg == "l1" else (0.0, 0.05)
    solve = newton if solver == "newton" else fista
    kw = dict(alpha1=a1, alpha2=a2, rho=1.0, tol=1e-10, max_iter=400)
    batched = solve(data.A, data.b, c, w0=w0, **kw)
    assert batched.converged.all() and len(set(batched.steps.tolist())) > 1
    assert batched.iterations == batched.steps.max()
    for i in range(6):
        alone = solve(data.A[i:i + 1], data.b[i:i + 1], c[i:i + 1], w0=w0[i:i + 1], **kw)
        np.testing.assert_array_equal(alone.w[0], batched.w[i])
        assert alone.residual[0] == batched.residual[i]
        assert alone.steps[0] == batched.steps[i] == alone.iterations


def test_a_rebuilt_exact_group_replays_its_warm_start_to_the_bit():
    """The trainer never sees a provider's clean solution, the warm start of its next solve
    (Algorithm 2 releases it noisy): a group rebuilt from its journal (a deployment's, whose
    recorded releases it takes without drawing them again) solves its completed iterations
    again and goes on as the lost one would."""
    from vfl.admm.providers import PROVIDERS_PROTOCOL
    from vfl.core.protocol import UnitData
    from vfl.core.host import Host, LocalEnv

    s = make(ConsensusADMMPerturbed, planted(), "l1", params={"local_solver": "fista"},
             privacy={"epsilon_per_iteration": 0.3, "delta": 1e-4})
    session, journal = s.providers.session, []
    round_ = session.round

    def keep(call, requests):  # the journal a backend that can lose a unit keeps
        replies = round_(call, requests)
        journal.append((requests[0], replies[0]))
        return replies

    session.round = keep
    for _ in range(4):
        s.step()
    group = s.providers.group
    env = LocalEnv()
    env.replayable = False  # a deployment's noise: never drawn again
    host = Host(PROVIDERS_PROTOCOL)
    host.open(UnitData(0, len(group.A), len(group.A), (group.A, group.b)), s.spec, env)
    for request, reply in journal:
        host.adopt(PROVIDERS_PROTOCOL.index("update"), request, reply)
    fresh = host.side.group
    for name in ("W", "shared", "gamma"):
        np.testing.assert_array_equal(getattr(fresh, name), getattr(group, name))
    np.testing.assert_array_equal(fresh.residuals(), group.residuals())
    for g in (group, fresh):
        g.update(s.w, {}, lambda W: W)
    np.testing.assert_array_equal(fresh.W, group.W)
    np.testing.assert_array_equal(fresh.shared, group.shared)


def test_kkt_residual_is_the_minimum_norm_subgradient():
    g = np.array([[0.3, -0.05, 0.2, -0.4]])
    w = np.array([[1.0, 0.0, 0.0, -2.0]])
    # coords: 0.3 + 0.1; |-0.05| < 0.1 -> 0; 0.2 - 0.1; -0.4 - 0.1
    assert kkt_residual(g, w, 0.1)[0] == pytest.approx(np.linalg.norm([0.4, 0.0, 0.1, -0.5]))


# ----------------------------------------------------- (j) loss at w = 0 --
@pytest.mark.parametrize("cls", SOLVERS)
def test_j_empirical_loss_at_zero_is_N_ln2(cls):
    data = planted(N=7)
    s = make(cls, data, "l1", privacy={} if cls is ConsensusADMM else {"epsilon_per_iteration": 0.1})
    row0 = s.evaluate()
    assert row0["empirical_loss"] == pytest.approx(7 * math.log(2), rel=1e-14)
    assert row0["objective"] == pytest.approx(7 * math.log(2), rel=1e-14)
    assert math.isnan(row0["augmented_objective"])
    assert empirical_loss(data.A, data.b, np.zeros(data.A.shape[2])) == \
        pytest.approx(7 * math.log(2), rel=1e-14)


def test_metrics_definitions():
    data = planted(N=4, m=10, d=3)
    rng = np.random.default_rng(0)
    W, w = rng.standard_normal((4, 3)), rng.standard_normal(3)
    f = local_objectives(data.A, data.b, W, lam_per_provider=0.2, regularizer="l1")
    for i in range(4):
        loss = np.mean(np.log1p(np.exp(-data.b[i] * (data.A[i] @ W[i]))))
        expect = loss + 0.2 * np.abs(W[i]).sum()
        assert f[i] == pytest.approx(expect, rel=1e-13)
    aug = augmented_objective(data.A, data.b, W, w, lam_per_provider=0.2, regularizer="l1")
    assert aug == pytest.approx(f.sum() + sum(np.linalg.norm(W[i] - w) for i in range(4)))


@pytest.mark.parametrize("start", [0, 1])
def test_ergodic_averages_follow_the_index_convention(start):
    s = make(DPADMM, planted(), "l1", params={"average_start": start},
             privacy={"epsilon_per_iteration": 0.2})
    shared, ws = [np.zeros((s.N, s.d))], []
    for _ in range(4):
        s.step()
        shared.append(s.W_shared.copy())
        ws.append(s.w.copy())
    W_bar, w_bar = s.ergodic_averages()
    np.testing.assert_allclose(w_bar, np.mean(ws, axis=0), atol=1e-14)
    np.testing.assert_allclose(W_bar, np.mean(shared[start:start + 4], axis=0), atol=1e-12)


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
            wi = newton(A[None], b[None], c[None], alpha1=a1, alpha2=a2, rho=rho,
                        tol=1e-13).w[0]
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
    w, shared, gamma = reference_iteration(data, reg, state, rho=1.0, lam=0.17, eta=eta,
                                           noise=noise, exact=cls is not DPADMM)
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
        np.testing.assert_allclose(r.scale, theorem1_sigma(eta, m=s.m, rho=1.0, epsilon=0.05,
                                                           delta=1e-3))
        np.testing.assert_allclose(r.noise_multiplier, math.sqrt(2 * math.log(1.25e3)) / 0.05)
        np.testing.assert_allclose(planned[0].scale, r.scale)
        np.testing.assert_allclose(planned[0].sensitivity, r.sensitivity)
    assert s.privacy_info().dump()["dp_guarantee"] is True


@pytest.mark.parametrize("mode", ["paper", "corrected"])
def test_algorithm2_releases_carry_the_enforced_bound(mode):
    s = make(ConsensusADMMPerturbed, planted(), "half_l2sq",
             privacy={"epsilon_per_iteration": 0.05, "sensitivity": mode})
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
    s = make(ConsensusADMMPerturbed, planted(), "l1",
             params={"max_inner": 1, "inner_tol": 1e-14, "local_solver": "fista"},
             privacy={"epsilon_per_iteration": 0.05})
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
@pytest.mark.parametrize("change, message", [
    (dict(reduction="mean", unit_size=None), "unit_mean"),
    (dict(unit_size=7), "unit_size = m"),
    (dict(regularizer="l2sq"), "'l1' or 'half_l2sq'"),
    (dict(loss="squared"), "logistic loss only"),
])
def test_bad_objective_is_refused(change, message):
    data = planted()
    kw = dict(loss="logistic", lam=0.17, reduction="unit_mean", regularizer="l1", unit_size=30)
    kw.update(change)
    p = validate_table("solver", {}, ConsensusADMM.params, owner="x")
    with pytest.raises(ValueError, match=message):
        ConsensusADMM(data, objective=Objective(**kw), params=p, privacy={},
                      streams=Streams(0), iterations=10)


def test_bad_data_is_refused():
    data = planted()
    with pytest.raises(ValueError, match="labels must be -1 or"):
        make(ConsensusADMM, HorizontalData(data.A, 0.5 * data.b), "l1")
    with pytest.raises(ValueError, match=r"\(N, m, d\)"):
        make(ConsensusADMM, HorizontalData(data.A[0], data.b[0]), "l1")
    ragged = HorizontalData([data.A[0], data.A[1, :-1]], [data.b[0], data.b[1, :-1]])
    p = validate_table("solver", {}, ConsensusADMM.params, owner="x")
    with pytest.raises(ValueError, match="equal numbers of samples"):
        ConsensusADMM(ragged, objective=objective("l1", 30), params=p, privacy={},
                      streams=Streams(0), iterations=10)
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
        split_providers(X, y, providers=3, samples_per_provider=3, public=2,
                        rng=np.random.default_rng(0))
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
    from vfl.core.errors import ConfigError

    with pytest.raises(ConfigError, match="privacy.epsilon_per_iteration must be in \\(0, 1\\]"):
        validate_table("privacy", {"epsilon_per_iteration": 2.0}, DPADMM.privacy_params, owner="dp_admm")
    assert DPADMM.claims_guarantee({"noise": True, "delta": 1e-3})
    assert not DPADMM.claims_guarantee({"noise": False, "delta": 1e-3})


# ------------------------------------------------- split, pre-training, central --
def test_split_providers_is_a_random_partition():
    X = np.arange(40.0).reshape(20, 2)
    y = np.where(np.arange(20) % 3 == 0, 1.0, -1.0)
    data, (Xt, yt) = split_providers(X, y, providers=3, samples_per_provider=4, public=2, test=5,
                                     rng=np.random.default_rng(7))
    assert data.A.shape == (3, 4, 2) and data.b.shape == (3, 4) and Xt.shape == (5, 2)
    rows = np.concatenate([data.public[0][:, 0], data.A[..., 0].ravel(), Xt[:, 0]]) / 2
    assert len(set(rows)) == 19  # disjoint
    np.testing.assert_array_equal(data.b.ravel(), y[(data.A[..., 0].ravel() / 2).astype(int)])
    again, _ = split_providers(X, y, providers=3, samples_per_provider=4, public=2, test=5,
                               rng=np.random.default_rng(7))
    np.testing.assert_array_equal(again.A, data.A)
    rest, (Xr, _) = split_providers(X, y, providers=3, samples_per_provider=4,
                                    rng=np.random.default_rng(7))
    assert rest.public is None and Xr.shape == (8, 2)


@pytest.mark.parametrize("reg", REGS)
def test_central_solve_matches_sklearn(reg):
    from sklearn.linear_model import LogisticRegression

    data = planted(N=1, m=300, d=5, seed=9, public=0)
    X, y = data.A[0], data.b[0]
    alpha = 0.01
    w = central_solve(X, y, alpha=alpha, regularizer=reg)
    g = smooth_grad(X[None], y[None], w[None], None, alpha2=0.0 if reg == "l1" else alpha)
    assert kkt_residual(g, w[None], alpha if reg == "l1" else 0.0)[0] <= 1e-10
    # sklearn minimizes R(w) + C sum_j l: the same problem with C = 1 / (alpha n)
    kw = (dict(solver="liblinear", l1_ratio=1.0) if reg == "l1"
          else dict(solver="lbfgs", l1_ratio=0.0))
    sk = LogisticRegression(C=1 / (alpha * len(y)), fit_intercept=False, tol=1e-12,
                            max_iter=100000, **kw).fit(X, y)
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
    import scipy.sparse as sp

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
    # natural, three changes of a real record, two canary pairs
    assert {p.kind for p in pairs} == {"natural", "candidate"} and len(pairs) == 6
    for p in pairs:
        base = data if p.base is None else p.base
        for D in (base, p.data):  # both datasets of the pair are inside the relation
            assert np.all(np.linalg.norm(D.A, axis=-1) <= 1 + 1e-12)
            assert np.all(np.abs(D.b) == 1.0)
            assert D.public is data.public  # the pre-training rows are public: unchanged
        changed = np.argwhere(np.any(p.data.A != base.A, axis=-1) | (p.data.b != base.b))
        assert len(changed) == 1 and changed[0, 0] == p.unit
    canaries = [p for p in pairs if p.base is not None]
    assert len(canaries) == 2
    for p in canaries:  # the canary itself is the only change from the run's data
        changed = np.argwhere(np.any(p.base.A != data.A, axis=-1))
        assert len(changed) == 1 and changed[0, 0] == p.unit


def test_dp_admm_passes_its_white_box_audit(tmp_path):
    from vfl.experiments.audit import audit_config
    from vfl.experiments.config import load_config

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
    from vfl.experiments.config import config_from_dict
    from vfl.experiments.runner import run_experiment

    raw = {"data": {"dataset": "synthetic", "options": {"n_train": 400, "n_test": 100,
                                                        "n_features": 5, "seed": 2}},
           "preprocessing": {"normalize_rows": True},
           "partition": {"agents": 5, "samples_per_agent": 60, "public": 40,
                         "held_out": "test_part"},
           "objective": {"lam": 0.17, "reduction": "unit_mean", "regularizer": "half_l2sq"},
           "solver": {"name": "dp_admm", "epochs": 50},
           "privacy": {"epsilon": 1.0, "delta": 1e-3, "replayable_noise": replayable}}
    result = run_experiment(config_from_dict(raw), with_baselines=False)
    final = result.metrics["epsilon_tight"].iloc[-1]
    assert final == pytest.approx(1.0, rel=1e-4) and final <= 1.0 + 1e-9
    solver = result.manifest.dump()["solver"]
    assert solver["epsilon_target"] == 1.0 and 0 < solver["epsilon_per_iteration"] <= 1.0
    # the per-iteration one is the paper's parameter: naming it gives today's run
    raw["privacy"] = {"epsilon_per_iteration": solver["epsilon_per_iteration"], "delta": 1e-3,
                      "replayable_noise": replayable}
    again = run_experiment(config_from_dict(raw), with_baselines=False)
    assert again.metrics["epsilon_tight"].iloc[-1] == pytest.approx(final, rel=1e-9)
