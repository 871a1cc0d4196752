"""The variants of ADMM sharing (issue 13): each one solves the same problem.

Every variant (Boyd form, Gauss-Seidel order, over-relaxation, spectral
penalty, fast ADMM with restart, Anderson acceleration, the in-place Newton
z-update) must reach the central optimum, computed here independently by a
damped Newton method on the explicit objective, on small dense and sparse
problems with 2-4 parties. Also: the Boyd form converges at a penalty where
Hu's Jacobi form does not; the spectral penalty stays in its bounds; the
defaults are Algorithm 1 bit for bit; bad options are refused with clear
errors, in the engine and in configs; the privacy plan of the variants.
"""

import numpy as np
import pytest
import scipy.sparse as sp
from problems import planted_problem
from scipy.special import expit
from threadpoolctl import threadpool_info, threadpool_limits

from vfl.admm import ADMMSharing
from vfl.admm.sharing import ADMMSharingSolver
from vfl.admm.sharing.accounting import plan_privacy
from vfl.core.errors import ConfigError
from vfl.core.objective import Objective
from vfl.experiments.config import config_from_dict
from vfl.privacy.sharing import column_sensitivity, row_sensitivity

N = 200
LAM = 0.1  # sum reduction: L = 1/4, sqrt(2) L = 0.354


@pytest.fixture(autouse=True, scope="module")
def _single_threaded_blas():
    with threadpool_limits(limits=1, user_api="blas"):
        yield


def newton_optimum(D, b, lam):
    """argmin sum_i log(1 + exp(-b_i D_i x)) + lam ||x||^2 by damped Newton (independent)."""
    D = np.asarray(D)
    x = np.zeros(D.shape[1])

    def f(x):
        return float(np.sum(np.logaddexp(0.0, -b * (D @ x))) + lam * x @ x)

    for _ in range(100):
        u = D @ x
        q = expit(-b * u)
        g = D.T @ (-b * q) + 2 * lam * x
        H = D.T @ (D * (q * (1 - q))[:, None]) + 2 * lam * np.eye(D.shape[1])
        step = np.linalg.solve(H, g)
        t = 1.0
        while f(x - t * step) > f(x) - 0.25 * t * g @ step and t > 1e-8:
            t /= 2
        x = x - t * step
        if np.linalg.norm(g) <= 1e-13 * max(1.0, np.linalg.norm(b)):
            break
    return x, f(x)


DIMS = {2: (15, 15), 3: (10, 10, 10), 4: (8, 8, 8, 6)}

VARIANTS = {
    "boyd": dict(rho=0.1, form="boyd"),
    "boyd+relaxation": dict(rho=0.1, form="boyd", relaxation=1.8),
    "hu+relaxation": dict(rho=0.5, relaxation=1.5),
    "gauss_seidel": dict(rho=0.5, order="gauss_seidel"),
    "spectral(hu)": dict(rho=1.0, rho_schedule="spectral"),
    "spectral(boyd)+relaxation": dict(rho=1.0, form="boyd", rho_schedule="spectral", relaxation=1.5, rho_min=1e-3),
    "nesterov_restart(boyd)": dict(rho=0.1, form="boyd", acceleration="nesterov_restart"),
    "anderson(hu)": dict(rho=0.5, acceleration="anderson"),
    "anderson(boyd)+relaxation": dict(rho=0.1, form="boyd", relaxation=1.5, acceleration="anderson", anderson_memory=3),
    "anderson(gauss_seidel)": dict(rho=0.5, order="gauss_seidel", acceleration="anderson"),
    "newton z(boyd, rho < w/4)": dict(rho=0.05, form="boyd", z_update="newton"),
    "newton z(hu, rho > w/4)": dict(rho=0.5, z_update="newton"),
}


@pytest.mark.parametrize("fmt", ["dense", "sparse"])
@pytest.mark.parametrize("parties", [2, 3, 4])
@pytest.mark.parametrize("variant", list(VARIANTS))
def test_variant_reaches_central_optimum(variant, parties, fmt):
    D, blocks, b = planted_problem("logistic", DIMS[parties], N, seed=parties, density=0.4)
    if fmt == "sparse":
        blocks = [sp.csr_matrix(B) for B in blocks]
    x_star, f_star = newton_optimum(D, b, LAM)
    solver = ADMMSharing(blocks, b, Objective("logistic", LAM, "sum"), **VARIANTS[variant])
    gap = np.inf
    for epoch in range(1, 1501):
        solver.step(diagnostics=False)
        if epoch % 25 == 0:
            gap = (solver.objective_value() - f_star) / abs(f_star)
            if abs(gap) <= 1e-11 and solver.primal_residual() <= 1e-9 * np.linalg.norm(b):
                break
    assert abs(gap) <= 1e-8, (variant, epoch, gap)
    np.testing.assert_allclose(solver.coef(), x_star, rtol=0, atol=1e-4 * np.linalg.norm(x_star))
    # and the constraint: the published sum meets z
    assert solver.primal_residual() <= 1e-6 * np.linalg.norm(b)


def test_squared_loss_variants_match_the_normal_equations():
    D, blocks, b = planted_problem("squared", (6, 6, 6), N, seed=1)
    x_star = np.linalg.solve(D.T @ D + LAM * np.eye(18), D.T @ b)  # 2(D^T(Dx - b)) + 2 lam x = 0
    for kw in (
        dict(rho=0.5, form="boyd", relaxation=1.5),
        dict(rho=5.0, order="gauss_seidel"),
        dict(rho=5.0, acceleration="anderson"),
        dict(rho=1.0, form="boyd", rho_schedule="spectral"),
    ):
        solver = ADMMSharing(blocks, b, Objective("squared", LAM, "sum"), **kw)
        for _ in range(1500):
            solver.step(diagnostics=False)
        np.testing.assert_allclose(solver.coef(), x_star, rtol=0, atol=1e-7 * np.linalg.norm(x_star), err_msg=str(kw))


def _correlated_blocks(seed=0, n=200, d=5, corr=0.9):
    """Two parties with strongly correlated features: Hu's Jacobi sweep over-corrects."""
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((n, d)) / np.sqrt(d)
    B = corr * A + np.sqrt(1 - corr**2) * rng.standard_normal((n, d)) / np.sqrt(d)
    u = (A + B) @ rng.standard_normal(d)
    b = np.where(rng.random(n) < expit(u), 1.0, -1.0)
    return [A, B], b


def test_boyd_form_converges_at_rho_001_where_hu_does_not():
    blocks, b = _correlated_blocks()
    lam = 1e-3
    _, f_star = newton_optimum(np.hstack(blocks), b, lam)
    obj = Objective("logistic", lam, "sum")
    hu = ADMMSharing(blocks, b, obj, rho=0.01)
    boyd = ADMMSharing(blocks, b, obj, rho=0.01, form="boyd")
    for _ in range(1000):
        hu.step(diagnostics=False)
        boyd.step(diagnostics=False)
    assert (boyd.objective_value() - f_star) / f_star <= 1e-8
    assert boyd.primal_residual() <= 1e-8
    # Hu's form (rho far below Assumption 1.2(c)'s sqrt(2) L) wanders off and stays off
    assert hu.objective_value() > 10 * f_star
    assert hu.primal_residual() > 1.0


def test_boyd_form_is_hu_plus_the_proximal_term():
    """Without noise, the Boyd x-update minimizes (6) + (M-1) rho/2 ||D_m(x - x^k)||^2."""
    D, blocks, b = planted_problem("logistic", (4, 5, 3), N, seed=3)
    rho, lam, M = 0.3, LAM, 3
    s = ADMMSharing(blocks, b, Objective("logistic", lam, "sum"), rho=rho, form="boyd", relaxation=1.0)
    for _ in range(4):
        s.step(diagnostics=False)
    x_old, shares = [x.copy() for x in s.x], [v.copy() for v in s.shares]
    z, y = s.z.copy(), s.y.copy()
    s.step(diagnostics=False)
    for m, Dm in enumerate(blocks):
        v = z - (sum(shares) - shares[m])
        # gradient of lam||x||^2 + <y, Dx> + rho/2||Dx - v||^2 + (M-1) rho/2 ||D(x - x_old)||^2
        H = 2 * lam * np.eye(Dm.shape[1]) + M * rho * Dm.T @ Dm
        rhs = Dm.T @ (rho * v - y + (M - 1) * rho * Dm @ x_old[m])
        np.testing.assert_allclose(s.x[m], np.linalg.solve(H, rhs), rtol=1e-10, atol=1e-12)


def test_gauss_seidel_uses_the_freshest_shares():
    D, blocks, b = planted_problem("logistic", (4, 5), N, seed=4)
    rho, lam = 0.5, LAM
    s = ADMMSharing(blocks, b, Objective("logistic", lam, "sum"), rho=rho, order="gauss_seidel")
    for _ in range(3):
        s.step(diagnostics=False)
    shares, z, y = [v.copy() for v in s.shares], s.z.copy(), s.y.copy()
    s.step(diagnostics=False)
    D1, D2 = blocks
    x1 = np.linalg.solve(2 * lam * np.eye(4) + rho * D1.T @ D1, D1.T @ (rho * (z - shares[1]) - y))
    x2 = np.linalg.solve(2 * lam * np.eye(5) + rho * D2.T @ D2, D2.T @ (rho * (z - D1 @ x1) - y))
    np.testing.assert_allclose(s.x[0], x1, rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(s.x[1], x2, rtol=1e-10, atol=1e-13)


def test_relaxation_uses_the_relaxed_sum():
    D, blocks, b = planted_problem("logistic", (4, 5), N, seed=5)
    s = ADMMSharing(blocks, b, Objective("logistic", LAM, "sum"), rho=0.5, relaxation=1.6)
    for _ in range(3):
        s.step(diagnostics=False)
    z_old, y_old = s.z.copy(), s.y.copy()
    s.step(diagnostics=False)
    S_hat = 1.6 * s.share_sum - 0.6 * z_old
    # z minimizes l(z) - <y, z> + rho/2 ||S_hat - z||^2: its gradient vanishes
    g = -b * expit(-b * s.z) - y_old + 0.5 * (s.z - S_hat)
    assert np.max(np.abs(g)) <= 1e-9
    np.testing.assert_allclose(s.y, y_old + 0.5 * (S_hat - s.z), rtol=1e-12, atol=1e-12)


def test_spectral_rho_respects_its_bounds_and_adapts():
    D, blocks, b = planted_problem("logistic", (10, 10, 10), N, seed=2, density=0.4)
    lo, hi, change = 0.05, 2.0, 3.0
    s = ADMMSharing(
        blocks,
        b,
        Objective("logistic", LAM, "sum"),
        rho=1.0,
        form="boyd",
        rho_schedule="spectral",
        rho_min=lo,
        rho_max=hi,
        rho_change=change,
        rho_every=3,
    )
    rhos = [s.rho]
    for _ in range(300):
        s.step(diagnostics=False)
        rhos.append(s.rho)
    rhos = np.array(rhos)
    assert np.all((rhos >= lo) & (rhos <= hi))
    ratio = rhos[1:] / rhos[:-1]
    assert np.all((ratio <= change * (1 + 1e-12)) & (ratio >= 1 / change * (1 - 1e-12)))
    changed = np.flatnonzero(ratio != 1.0)
    assert changed.size >= 1 and np.all(np.diff(changed) % 3 == 0)  # only every rho_every epochs
    assert rhos[-1] != 1.0


def test_spectral_rho_floor_defaults_to_assumption_1_2c_in_hu_form():
    D, blocks, b = planted_problem("logistic", (10, 10), N, seed=2)
    obj = Objective("logistic", LAM, "sum")
    s = ADMMSharing(blocks, b, obj, rho=1.0, rho_schedule="spectral")
    assert s.rho_min == pytest.approx(obj.min_rho(N))
    for _ in range(100):
        s.step(diagnostics=False)
        assert s.rho >= obj.min_rho(N)


def test_default_options_are_algorithm_1_bit_for_bit():
    D, blocks, b = planted_problem("logistic", (6, 7), N, seed=6, density=0.5)
    obj = Objective("logistic", 1e-2, "sum")
    rngs = lambda: [np.random.default_rng(m) for m in range(2)]  # noqa: E731
    plain = ADMMSharing(blocks, b, obj, rho=1.0, sigma=0.1, noise_rngs=rngs())
    explicit = ADMMSharing(
        blocks,
        b,
        obj,
        rho=1.0,
        sigma=0.1,
        noise_rngs=rngs(),
        form="hu",
        order="jacobi",
        relaxation=1.0,
        rho_schedule="fixed",
        acceleration="none",
        z_update="safeguarded",
        blas_threads=None,
    )
    for _ in range(20):
        plain.step(diagnostics=False)
        explicit.step(diagnostics=False)
    for u, v in zip(plain.x + [plain.z, plain.y], explicit.x + [explicit.z, explicit.y]):
        assert np.array_equal(u, v)


def test_blas_threads_are_limited_inside_the_epoch_and_restored():
    D, blocks, b = planted_problem("logistic", (6, 7), N, seed=8)
    seen = []

    class Spy(ADMMSharing):
        def z_update(self, *args, **kw):
            seen.append([i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"])
            return super().z_update(*args, **kw)

    with threadpool_limits(limits=2, user_api="blas"):
        before = [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]
        s = Spy(blocks, b, Objective("logistic", LAM, "sum"), rho=0.5, blas_threads=1)
        s.step(diagnostics=False)
        after = [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]
    assert seen and all(n == 1 for n in seen[0])
    assert after == before


def test_anderson_reports_acceptance_and_stays_finite_under_noise():
    D, blocks, b = planted_problem("logistic", (6, 7), N, seed=9)
    s = ADMMSharing(
        blocks,
        b,
        Objective("logistic", LAM, "sum"),
        rho=0.5,
        acceleration="anderson",
        sigma=0.1,
        noise_form="output",
        noise_rngs=[np.random.default_rng(m) for m in range(2)],
    )
    accepted = [s.step(diagnostics=False).extra["anderson_accepted"] for _ in range(60)]
    assert all(isinstance(a, bool) for a in accepted)
    assert np.isfinite(s.objective_value())


# --------------------------------------------------------------------------
# validation: engine (ValueError) and config (ConfigError, one line)
# --------------------------------------------------------------------------
BAD = [
    (dict(form="admm"), "form must be one of"),
    (dict(order="random"), "order must be one of"),
    (dict(relaxation=2.0), "relaxation must be in (0, 2)"),
    (dict(relaxation=0.0), "relaxation must be in (0, 2)"),
    (dict(rho_schedule="balanced"), "rho_schedule must be one of"),
    (dict(acceleration="heavy_ball"), "acceleration must be one of"),
    (dict(z_update="brent"), "z_update must be one of"),
    (dict(rho_schedule="spectral", rho_min=-1.0), "rho_min must be a finite number > 0"),
    (dict(rho_schedule="spectral", rho_every=0), "rho_every must be an integer >= 1"),
    (dict(rho_schedule="spectral", rho_change=1.0), "rho_change must be a finite number > 1"),
    (dict(acceleration="anderson", anderson_memory=0), "anderson_memory must be an integer"),
    (dict(blas_threads=0), "blas_threads must be an integer >= 1"),
    (dict(form="boyd", order="gauss_seidel"), "needs form = 'hu'"),
    (dict(rho_min=0.1), "applies to rho_schedule = 'spectral' only"),
    (dict(rho_every=5), "applies to rho_schedule = 'spectral' only"),
    (dict(rho_schedule="spectral", rho_min=2.0, rho_max=1.0), "exceeds rho_max"),
    (dict(rho_schedule="spectral", rho_min=2.0), "outside [rho_min, rho_max]"),
    (dict(rho_schedule="spectral", acceleration="anderson"), "needs rho_schedule = 'fixed'"),
    (dict(acceleration="nesterov_restart"), "needs form = 'boyd'"),
    (dict(anderson_memory=3), "applies to acceleration = 'anderson' only"),
]


@pytest.mark.parametrize("kw,message", BAD)
def test_bad_options_raise_clear_errors(kw, message):
    D, blocks, b = planted_problem("logistic", (3, 3), 20, seed=0)
    with pytest.raises(ValueError, match=None) as exc:
        ADMMSharing(blocks, b, Objective("logistic", LAM, "sum"), rho=1.0, **kw)
    assert message in str(exc.value)


def _raw(solver=None, privacy=None):
    raw = {
        "name": "t",
        "data": {"dataset": "synthetic", "options": {"n_train": 100, "n_test": 50, "n_features": 6}},
        "partition": {"columns": [3, 3]},
        "solver": {"name": "admm_sharing", "epochs": 3, **(solver or {})},
    }
    if privacy:
        raw["privacy"] = privacy
    return raw


ACCOUNTING = {"delta": 1e-5, "sigma": 1.0, "clip": 1.0, "b1": 1.0}


@pytest.mark.parametrize(
    "solver,privacy,message",
    [
        ({"form": "boyd", "order": "gauss_seidel"}, None, "needs form = 'hu'"),
        ({"relaxation": 2.5}, None, "solver.relaxation must be"),
        ({"form": "fast"}, None, "solver.form = 'fast' is not one of"),
        ({"acceleration": "nesterov_restart"}, None, "needs form = 'boyd'"),
        ({"rho_schedule": "spectral"}, ACCOUNTING, "needs solver.rho_min"),
        (
            {"rho_schedule": "spectral", "rho_min": 0.1},
            {**ACCOUNTING, "neighbours": "row", "input_clip": 1.0},
            "needs solver.rho_max too",
        ),
    ],
)
def test_config_errors_are_one_line(solver, privacy, message):
    with pytest.raises(ConfigError) as exc:
        config_from_dict(_raw(solver, privacy))
    assert message in str(exc.value)
    assert "\n" not in str(exc.value)


def test_config_defaults_build_the_plain_path():
    cfg = config_from_dict(_raw())
    assert cfg.solver.values["form"] == "hu" and cfg.solver.values["z_update"] == "safeguarded"
    cfg = config_from_dict(
        _raw({"form": "boyd", "relaxation": 1.8, "rho": 0.03, "z_update": "newton", "blas_threads": 1})
    )
    assert cfg.solver.values["relaxation"] == 1.8


# --------------------------------------------------------------------------
# accounting mode: the sound sensitivities of the variants
# --------------------------------------------------------------------------
def _plan(params, privacy, M=2, N=50):
    base = {"rho": 1.0, "form": "hu", "rho_schedule": "fixed", "rho_min": None, "rho_max": None}
    p = {
        "sigma": 1.0,
        "form": "output",
        "epsilon": None,
        "delta": 1e-5,
        "neighbours": "column",
        "clip": 1.0,
        "b1": 1.0,
        "input_clip": None,
        "calibration": "sound",
        "accountant": "pld",
        **privacy,
    }
    assert (
        ADMMSharingSolver.check_config(
            {**{p_.name: p_.default for p_ in ADMMSharingSolver.params}, **base, **params}, p, 10
        )
        is None
    )
    return plan_privacy(
        [2] * M,
        N,
        Objective("logistic", 1.0, "sum"),
        ADMMSharingSolver.typed_params({**base, **params}),
        ADMMSharingSolver.typed_privacy(p),
        10,
    )


def test_column_bound_is_the_same_for_every_variant():
    for params in ({}, {"form": "boyd"}, {"rho_schedule": "spectral", "rho_min": 0.01}):
        plan = _plan(params, {})
        np.testing.assert_allclose(plan.sound_sensitivity, column_sensitivity(50, 1.0, 1.0))


def test_row_bound_uses_the_x_update_penalty_and_the_worst_rho():
    row = {"neighbours": "row", "input_clip": 2.0}
    plan = _plan({}, row)
    np.testing.assert_allclose(plan.sound_sensitivity, row_sensitivity(1.0, 1.0, 1.0, 1.0, 2.0))
    plan = _plan({"form": "boyd"}, row, M=3)  # x-update penalty M rho
    np.testing.assert_allclose(plan.sound_sensitivity, row_sensitivity(1.0, 1.0, 3.0, 1.0, 2.0))
    plan = _plan({"rho_schedule": "spectral", "rho_min": 0.01, "rho_max": 100.0}, row)
    worst = max(row_sensitivity(1.0, 1.0, r, 1.0, 2.0) for r in np.geomspace(0.01, 100, 401))
    assert plan.sound_sensitivity[0] == pytest.approx(worst, rel=1e-12)
    assert plan.rho_range == (0.01, 100.0)


def test_boyd_x_update_reads_public_values_only():
    """Under noise, zeta_m is built from published shares, z and y: two parties with the same
    public history and the same block compute the same x, whatever their private past."""
    D, blocks, b = planted_problem("logistic", (4, 4), N, seed=10)
    obj = Objective("logistic", LAM, "sum")
    s = ADMMSharing(
        blocks,
        b,
        obj,
        rho=0.2,
        form="boyd",
        relaxation=1.5,
        sigma=0.5,
        noise_form="output",
        noise_rngs=[np.random.default_rng(m) for m in range(2)],
    )
    for _ in range(5):
        s.step(diagnostics=False)
    x_before = [x.copy() for x in s.x]
    for party in s.parties.parties:  # tamper with the private models only
        party.x = np.full_like(party.x, 7.0)
    xs = [s.x_update(m) for m in range(2)]
    for party, x in zip(s.parties.parties, x_before):
        party.x = x
    for m in range(2):
        np.testing.assert_array_equal(xs[m], s.x_update(m))
