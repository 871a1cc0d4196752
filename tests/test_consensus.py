"""Huang et al.'s consensus ADMM, Algorithm 2 and DP-ADMM (vfl.admm.consensus): the paper.

Spec ``dp-admm-huang.md`` section 8, tests (a)-(j) ((i) needs the real data:
tests/test_adult_paper.py). Vectorized-vs-loop equivalence, argument checks and the
sensitivities carried by the releases are in tests/test_consensus_solver.py. The two headline
epsilon-bar values (0.5009, 1.0193) are in tests/test_privacy.py.
"""

import math

import numpy as np
import pytest
import scipy.optimize
from consensus_helpers import REGS, SOLVERS, loss_grad, make, planted, unit_rows

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
    lemma1_sensitivity,
    local_objectives,
    theorem1_sigma,
    theorem3_eta,
    theorem4_eta,
)
from vfl.admm.consensus.providers import PROVIDERS_PROTOCOL
from vfl.admm.local_solvers import fista, kkt_residual, newton
from vfl.admm.pretrain import consensus_optimum
from vfl.core.host import Host, LocalEnv
from vfl.core.protocol import UnitData
from vfl.privacy import dp_admm_epsilon

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
    W = dp_admm_closed_form(A, b, Wt, w, gamma, eta=eta, rho=rho, lam_per_provider=lam_n, regularizer=reg)
    for i in range(3):
        sub = np.sign(Wt[i]) if reg == "l1" else Wt[i]
        g = loss_grad(A[i], b[i], Wt[i]) + lam_n * sub  # f_i'(w~_i^k)

        def L_hat(x, i=i, g=g):  # eq. (2) for provider i, constants dropped
            return (
                g @ (x - Wt[i])
                - gamma[i] @ (x - w)
                + rho / 2 * np.sum((x - w) ** 2)
                + np.sum((x - Wt[i]) ** 2) / (2 * eta)
            )

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
    for _ in range(300):
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
    for _ in range(60):
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
@pytest.mark.parametrize(
    "reg, D_w, k, eta, inv_eta, sigma",
    [
        ("l1", 10, 0, 7.02637, 0.14232, 0.62971),
        ("l1", 10, 9, 2.22193, 0.45006, 0.49607),
        ("l1", 10, 99, 0.70264, 1.42321, 0.29685),
        ("l2", 6, 0, 2.37390, 0.42125, 0.50613),
        ("l2", 6, 9, 1.26927, 0.78786, 0.40234),
        ("l2", 6, 99, 0.51356, 1.94718, 0.24407),
    ],
)
def test_e_worked_eta_sigma_numbers(reg, D_w, k, eta, inv_eta, sigma):
    common = dict(D_w=D_w, lam=0.17, N=100)
    got = theorem3_eta(k, d=14, **common) if reg == "l1" else theorem4_eta(k, m=210, epsilon=0.05, delta=1e-3, **common)
    assert got == pytest.approx(eta, abs=6e-6)
    assert 1 / got == pytest.approx(inv_eta, abs=6e-6)
    s = theorem1_sigma(got, m=210, rho=1.0, epsilon=0.05, delta=1e-3)
    assert s == pytest.approx(sigma, abs=6e-6)
    # (rho + 1/eta) sigma = 2 S1 sqrt(2 L) / (m eps) is constant
    assert s * (1 + 1 / got) == pytest.approx(2 * math.sqrt(2 * math.log(1.25e3)) / 10.5)


def test_e_schedules_inside_the_solver():
    data = planted()
    s = make(DPADMM, data, "half_l2sq", params={"D_w": 6.0}, privacy={"epsilon_per_iteration": 0.05, "delta": 1e-3})
    k = np.arange(20)
    np.testing.assert_allclose(
        s.eta_schedule(k), theorem4_eta(k, D_w=6.0, lam=0.17, N=s.N, m=s.m, epsilon=0.05, delta=1e-3)
    )
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
    s = make(
        DPADMM,
        data,
        reg,
        params={"D_w": float(np.linalg.norm(w_star))},
        privacy={"noise": False, "epsilon_per_iteration": 0.5},
        iterations=3000,
    )
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
        return np.logaddexp(0, -data.b[i] * (data.A[i] @ x)).mean() + reg_fn(x) + s.rho / 2 * np.sum((x - c) ** 2)

    num = scipy.optimize.minimize(
        phi, np.zeros(s.d), method="Nelder-Mead", options={"xatol": 1e-10, "fatol": 1e-14, "maxiter": 40000}
    )
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
        alone = solve(data.A[i : i + 1], data.b[i : i + 1], c[i : i + 1], w0=w0[i : i + 1], **kw)
        np.testing.assert_array_equal(alone.w[0], batched.w[i])
        assert alone.residual[0] == batched.residual[i]
        assert alone.steps[0] == batched.steps[i] == alone.iterations


def test_a_rebuilt_exact_group_replays_its_warm_start_to_the_bit():
    """The trainer never sees a provider's clean solution, the warm start of its next solve
    (Algorithm 2 releases it noisy): a group rebuilt from its journal (a deployment's, whose
    recorded releases it takes without drawing them again) solves its completed iterations
    again and goes on as the lost one would."""

    s = make(
        ConsensusADMMPerturbed,
        planted(),
        "l1",
        params={"local_solver": "fista"},
        privacy={"epsilon_per_iteration": 0.3, "delta": 1e-4},
    )
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
    assert empirical_loss(data.A, data.b, np.zeros(data.A.shape[2])) == pytest.approx(7 * math.log(2), rel=1e-14)


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
    s = make(DPADMM, planted(), "l1", params={"average_start": start}, privacy={"epsilon_per_iteration": 0.2})
    shared, ws = [np.zeros((s.N, s.d))], []
    for _ in range(4):
        s.step()
        shared.append(s.W_shared.copy())
        ws.append(s.w.copy())
    W_bar, w_bar = s.ergodic_averages()
    np.testing.assert_allclose(w_bar, np.mean(ws, axis=0), atol=1e-14)
    np.testing.assert_allclose(W_bar, np.mean(shared[start : start + 4], axis=0), atol=1e-12)
