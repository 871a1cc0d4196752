"""ADMM sharing (Hu et al., Algorithm 1, updates (6)-(8)) against independent references.

Every reference here is computed in the test itself from the formulas of the
paper (scipy.optimize on the explicit functions, np.linalg.solve of normal
equations), never through ``vfl.admm.Objective`` or the solver's own helpers.

Choice of lam and rho
---------------------
Hu et al. prove convergence of the parallel (Jacobi) sweep only for rho large
enough: Assumption 1(c) asks rho >= L and rho * gamma(rho) > 2 L^2 with
gamma(rho) = rho the modulus of (7), i.e. rho > sqrt(2) L, where L is the
Lipschitz constant of l'. Below that the Jacobi iteration can genuinely
diverge (squared loss, reduction="sum", rho = 1 < sqrt(2) * 2 blows up to
inf/NaN in a few hundred epochs on this data), while a rho much larger
than L makes it slow. So rho is set relative to L = w * Lip(l'),
with w = 1 ("sum") or 1/N ("mean") and Lip = 1/4 (logistic) or 2 (squared):

    rho = 2 * L,    lam = 0.1 * w.

Scaling lam and rho by w makes the "mean" problem the "sum" problem divided
by N (F, y and the augmented Lagrangian all scale by w), so both reductions
converge equally fast; a fixed rho ~ 1 with "mean" is equivalent to
rho ~ N with "sum" and needs thousands of epochs. lam = 0.1 * w keeps the
wide block (d_m > N, which can fit any residual) well conditioned: with
lam = 0.01 * w the squared-loss wide case needs ~800 epochs instead of ~110.
"""

import decimal
from decimal import Decimal
from functools import cache

import numpy as np
import pytest
import scipy.optimize
import scipy.sparse as sp
from problems import planted_problem
from scipy.special import expit
from threadpoolctl import threadpool_limits

from vfl.admm import ADMMSharing, BlockSolver
from vfl.baselines import central_optimum
from vfl.core.objective import Objective

N = 200


@pytest.fixture(autouse=True, scope="module")
def _single_threaded_blas():
    """The matrices here are tiny: multi-threaded BLAS only adds overhead, and
    on a loaded 2-core machine oversubscription made single tests take seconds."""
    with threadpool_limits(limits=1, user_api="blas"):
        yield


SHAPES = {"tall": (10, 10, 10), "wide": (250, 10, 10)}  # "wide": block 1 has d_1 > N
LIP = {"logistic": 0.25, "squared": 2.0}
EPOCHS = 400  # observed: every case below is at a relative gap < 1e-8 by ~150


def settings(loss, reduction, n=N):
    w = 1.0 if reduction == "sum" else 1.0 / n
    return w, 0.1 * w, 2.0 * w * LIP[loss]  # w, lam, rho (see module docstring)


def make_problem(loss, shape, seed=0, density=0.4):
    """Random sparse-ish design split into blocks, labels from a planted model."""
    dims = SHAPES[shape] if isinstance(shape, str) else shape
    return planted_problem(loss, dims, N, seed=seed, density=density)


def as_format(blocks, fmt):
    return [sp.csr_matrix(B) for B in blocks] if fmt == "sparse" else [B.copy() for B in blocks]


# --------------------------------------------------------------------------
# independent central solver
# --------------------------------------------------------------------------
def independent_central(D, b, loss, lam, w):
    """argmin_x  w * sum_i l(D_i x; b_i) + lam ||x||^2, solved from scratch."""
    D = np.asarray(D)
    if loss == "squared":
        # gradient 2w D^T (D x - b) + 2 lam x = 0
        x = np.linalg.solve(D.T @ D + (lam / w) * np.eye(D.shape[1]), D.T @ b)
    else:

        def fg(x):
            u = D @ x
            f = w * np.sum(np.logaddexp(0.0, -b * u)) + lam * x @ x
            g = w * (D.T @ (-b * expit(-b * u))) + 2 * lam * x
            return f, g

        res = scipy.optimize.minimize(
            fg,
            np.zeros(D.shape[1]),
            jac=True,
            method="L-BFGS-B",
            options={"ftol": 1e-16, "gtol": 1e-11 * w, "maxiter": 20000, "maxcor": 50},
        )
        x = res.x
        # L-BFGS stalls once f stops changing in float64 (|grad| ~ 1e-8 here);
        # polish with a few exact Newton steps, H = w D^T diag(p(1-p)) D + 2 lam I.
        for _ in range(3):
            p = expit(D @ x)
            H = w * (D.T @ (D * (p * (1 - p))[:, None])) + 2 * lam * np.eye(D.shape[1])
            x = x - np.linalg.solve(H, fg(x)[1])
        assert np.linalg.norm(fg(x)[1]) <= 1e-12 * w * np.linalg.norm(b), res
    return x, indep_value(D, b, loss, lam, w, x)


def indep_value(D, b, loss, lam, w, x):
    u = np.asarray(D @ x).ravel()
    lv = np.logaddexp(0.0, -b * u) if loss == "logistic" else (u - b) ** 2
    return float(w * np.sum(lv) + lam * x @ x)


@cache
def reference(loss, reduction, shape):
    D, blocks, b = make_problem(loss, shape)
    w, lam, rho = settings(loss, reduction)
    x, f = independent_central(D, b, loss, lam, w)
    return x, f


# --------------------------------------------------------------------------
# convergence to the central optimum
# --------------------------------------------------------------------------
@pytest.mark.parametrize("fmt", ["dense", "sparse"])
@pytest.mark.parametrize("shape", ["tall", "wide"])
@pytest.mark.parametrize("reduction", ["sum", "mean"])
@pytest.mark.parametrize("loss", ["logistic", "squared"])
def test_admm_reaches_central_optimum(loss, reduction, shape, fmt):
    D, blocks, b = make_problem(loss, shape)
    w, lam, rho = settings(loss, reduction)
    x_star, f_star = reference(loss, reduction, shape)
    solver = ADMMSharing(as_format(blocks, fmt), b, Objective(loss, lam, reduction), rho)
    assert solver.solvers[0].wide == (shape == "wide")
    for _ in range(EPOCHS):
        stats = solver.step(diagnostics=False)
    assert stats.epoch == EPOCHS == solver.epoch
    x = solver.coef()
    # objective evaluated independently, and by the solver
    f = indep_value(D, b, loss, lam, w, x)
    assert (f - f_star) / abs(f_star) <= 1e-6
    assert abs(f - f_star) / abs(f_star) <= 1e-9  # in fact: converged to ~machine precision
    assert solver.objective_value() == pytest.approx(f, rel=1e-12)
    np.testing.assert_allclose(x, x_star, atol=1e-6 * np.linalg.norm(x_star))
    # residuals vanish at the fixed point (scale: ||b||, ||D^T y||-ish ~ w ||b||)
    assert solver.primal_residual() <= 1e-8 * np.linalg.norm(b)
    assert solver.dual_residual() <= 1e-8 * w * np.linalg.norm(b)
    # At the fixed point y = w l'(z) and z = D x (Lemma 2 of the paper), up to
    # the z-solve's stopping rule |g| <= z_tol * max(1, rho), which is absolute:
    # relative to w it is z_tol / w, i.e. 2e-8 for "mean" with N = 200
    # (observed 1.9e-8 there, against 7e-11 for "sum").
    u = D @ x
    grad_l = -b * expit(-b * u) if loss == "logistic" else 2 * (u - b)
    np.testing.assert_allclose(
        solver.y, w * grad_l, rtol=0, atol=2 * solver.z_tol * max(1.0, rho) + 1e-12 * w * np.abs(grad_l).max()
    )


@pytest.mark.parametrize("fmt", ["dense", "sparse"])
@pytest.mark.parametrize("shape", ["tall", "wide"])
@pytest.mark.parametrize("reduction", ["sum", "mean"])
@pytest.mark.parametrize("loss", ["logistic", "squared"])
def test_central_optimum_matches_independent_solver(loss, reduction, shape, fmt):
    D, _, b = make_problem(loss, shape)
    w, lam, _ = settings(loss, reduction)
    x_star, f_star = reference(loss, reduction, shape)
    sol = central_optimum(sp.csr_matrix(D) if fmt == "sparse" else D, b, Objective(loss, lam, reduction))
    assert sol.value == pytest.approx(f_star, rel=1e-9)
    assert indep_value(D, b, loss, lam, w, sol.x) == pytest.approx(sol.value, rel=1e-13)
    np.testing.assert_allclose(sol.x, x_star, atol=1e-6 * np.linalg.norm(x_star))
    assert sol.grad_norm <= 1e-8 * max(1.0, w * np.linalg.norm(D.T @ b))


def test_mean_is_scaled_sum():
    """(mean, lam*w, rho*w) runs the same x-iterates as (sum, lam, rho)."""
    loss = "logistic"
    D, blocks, b = make_problem(loss, "tall", seed=3)
    w = 1.0 / N
    s_sum = ADMMSharing(blocks, b, Objective(loss, 0.1, "sum"), 0.5)
    s_mean = ADMMSharing(blocks, b, Objective(loss, 0.1 * w, "mean"), 0.5 * w)
    for _ in range(30):
        s_sum.step(diagnostics=False)
        s_mean.step(diagnostics=False)
    np.testing.assert_allclose(s_mean.coef(), s_sum.coef(), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(s_mean.y, w * s_sum.y, rtol=1e-6, atol=1e-8 * w)
    assert s_mean.objective_value() == pytest.approx(w * s_sum.objective_value(), rel=1e-8)


# --------------------------------------------------------------------------
# the individual updates (6), (7), (8)
# --------------------------------------------------------------------------
def _warm_solver(loss, reduction, shape, fmt="dense", epochs=5, seed=1):
    D, blocks, b = make_problem(loss, shape, seed=seed)
    w, lam, rho = settings(loss, reduction)
    solver = ADMMSharing(as_format(blocks, fmt), b, Objective(loss, lam, reduction), rho)
    for _ in range(epochs):
        solver.step(diagnostics=False)
    return solver, blocks, b, w, lam, rho


@pytest.mark.parametrize("fmt", ["dense", "sparse"])
@pytest.mark.parametrize("reduction", ["sum", "mean"])
@pytest.mark.parametrize("loss", ["logistic", "squared"])
def test_x_update_minimizes_subproblem_6(loss, reduction, fmt):
    solver, blocks, b, w, lam, rho = _warm_solver(loss, reduction, "wide", fmt)
    z, y = solver.z.copy(), solver.y.copy()
    for m, Dm in enumerate(blocks):  # m = 0 is the wide block (push-through branch)
        others = sum(solver.shares[k] for k in range(len(blocks)) if k != m)

        def f6(x, Dm=Dm, others=others):
            r = others + Dm @ x - z
            f = lam * x @ x + y @ (Dm @ x) + 0.5 * rho * r @ r
            g = 2 * lam * x + Dm.T @ y + rho * (Dm.T @ r)
            return f, g

        x0 = np.zeros(Dm.shape[1])
        res = scipy.optimize.minimize(
            f6,
            x0,
            jac=True,
            method="L-BFGS-B",
            options={"ftol": 0.0, "gtol": 1e-14 * max(1.0, np.abs(f6(x0)[1]).max()), "maxiter": 20000, "maxcor": 50},
        )
        x_ref = res.x
        x_upd = solver.x_update(m)
        assert x_upd.shape == (Dm.shape[1],)
        np.testing.assert_allclose(x_upd, x_ref, atol=1e-7 * max(1.0, np.linalg.norm(x_ref)))
        # the exact update is at least as good as the numerical minimizer
        assert f6(x_upd)[0] <= f6(x_ref)[0] + 1e-12 * abs(f6(x_ref)[0])
    # x_update does not change the state
    np.testing.assert_array_equal(solver.z, z)
    np.testing.assert_array_equal(solver.y, y)


_CTX = decimal.Context(prec=50, Emax=10**7, Emin=-(10**7))


def _scalar_argmin_7(loss, v, y, b, rho, w):
    """argmin_z  w l(z; b) - y z + rho/2 (v - z)^2 via minimize_scalar.

    Values are computed in 50 digits relative to the current centre, so the
    answer is not limited by float64 cancellation (see tests/test_losses.py).
    """
    with decimal.localcontext(_CTX):
        V, Y, B, R, W = (Decimal(float(t)) for t in (v, y, b, rho, w))

        def f_dec(z):
            lz = (1 + (-B * z).exp()).ln() if loss == "logistic" else (z - B) ** 2
            return W * lz - Y * z + R / 2 * (V - z) ** 2

        z0 = V + Y / R
        width = 2.0 * float(w) * max(1.0, abs(float(z0 - B))) / float(rho) + 1.0
        for _ in range(2):
            f0 = f_dec(z0)

            def f(t, z0=z0, f0=f0):
                with decimal.localcontext(_CTX):
                    return float(f_dec(z0 + Decimal(t)) - f0)

            res = scipy.optimize.minimize_scalar(
                f,
                bounds=(-width, width),
                method="bounded",
                options={"xatol": 1e-15 * width, "maxiter": 2000},
            )
            assert abs(res.x) < 0.999 * width
            z0 = z0 + Decimal(res.x)
            width *= 1e-5
        return float(z0)


@pytest.mark.parametrize("reduction", ["sum", "mean"])
@pytest.mark.parametrize("loss", ["logistic", "squared"])
def test_z_update_is_per_sample_argmin_of_7(loss, reduction):
    solver, _, b, w, lam, rho = _warm_solver(loss, reduction, "tall")
    rng = np.random.default_rng(2)
    v = sum(solver.shares) + rng.normal(scale=0.5, size=N)  # any share sum, not just the current one
    z = solver.z_update(v)
    assert z.shape == (N,)
    idx = rng.choice(N, size=40, replace=False)
    ref = np.array([_scalar_argmin_7(loss, v[i], solver.y[i], b[i], rho, w) for i in idx])
    # documented accuracy of the Newton solve: |z - z*| <= z_tol * max(1, rho) / rho
    tol = solver.z_tol * max(1.0, rho) / rho + 1e-12 * np.maximum(1.0, np.abs(ref))
    assert np.all(np.abs(z[idx] - ref) <= tol), np.max(np.abs(z[idx] - ref))


@pytest.mark.parametrize("loss", ["logistic", "squared"])
def test_y_update_is_exact(loss):
    solver, *_ = _warm_solver(loss, "sum", "tall")
    y_old = solver.y.copy()
    solver.step()
    expected = y_old + solver.rho * (sum(solver.shares) - solver.z)
    np.testing.assert_array_equal(solver.y, y_old + solver.rho * (solver.share_sum - solver.z))
    np.testing.assert_allclose(solver.y, expected, rtol=0, atol=1e-14 * np.abs(expected).max())


def test_jacobi_order_one_epoch_replicated():
    """x-updates of epoch t all read the shares of epoch t-1 (parallel sweep)."""
    loss, reduction = "squared", "sum"
    D, blocks, b = make_problem(loss, "tall", seed=4)
    w, lam, rho = settings(loss, reduction)
    solver = ADMMSharing(blocks, b, Objective(loss, lam, reduction), rho)
    for _ in range(3):
        solver.step(diagnostics=False)
    S_old = [s.copy() for s in solver.shares]
    z_old, y_old = solver.z.copy(), solver.y.copy()

    def solve6(m, shares):
        Dm = blocks[m]
        v = z_old - sum(shares[k] for k in range(len(blocks)) if k != m)
        A = 2 * lam * np.eye(Dm.shape[1]) + rho * Dm.T @ Dm
        return np.linalg.solve(A, Dm.T @ (rho * v - y_old))

    jacobi = [solve6(m, S_old) for m in range(3)]
    # Gauss-Seidel would let party 2 see party 1's new share:
    gs_shares = list(S_old)
    gs_shares[0] = blocks[0] @ jacobi[0]
    gauss_seidel_2 = solve6(1, gs_shares)

    solver.step(diagnostics=False)
    for m in range(3):
        np.testing.assert_allclose(solver.x[m], jacobi[m], rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(solver.shares[m], blocks[m] @ jacobi[m], rtol=1e-10, atol=1e-12)
    assert np.linalg.norm(solver.x[1] - gauss_seidel_2) > 1e-3 * np.linalg.norm(gauss_seidel_2)
    # the rest of the epoch, squared loss: (7) in closed form, then (8)
    s = sum(blocks[m] @ jacobi[m] for m in range(3))
    z = (2 * w * b + y_old + rho * s) / (2 * w + rho)
    np.testing.assert_allclose(solver.z, z, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(solver.y, y_old + rho * (s - z), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("loss", ["logistic", "squared"])
def test_dense_and_sparse_give_same_iterates(loss):
    _, blocks, b = make_problem(loss, "wide", seed=5)
    w, lam, rho = settings(loss, "sum")
    obj = Objective(loss, lam, "sum")
    dense = ADMMSharing(as_format(blocks, "dense"), b, obj, rho)
    sparse = ADMMSharing(as_format(blocks, "sparse"), b, obj, rho)
    for _ in range(20):
        sd, ss = dense.step(), sparse.step()
        for m in range(3):
            np.testing.assert_allclose(sparse.x[m], dense.x[m], rtol=1e-10, atol=1e-12)
            np.testing.assert_allclose(sparse.shares[m], dense.shares[m], rtol=1e-10, atol=1e-12)
        for a, c in ((sparse.z, dense.z), (sparse.y, dense.y)):
            np.testing.assert_allclose(a, c, rtol=1e-10, atol=1e-12)
        assert ss.objective == pytest.approx(sd.objective, rel=1e-12)
        assert ss.primal_residual == pytest.approx(sd.primal_residual, rel=1e-8, abs=1e-12)
        assert ss.dual_residual == pytest.approx(sd.dual_residual, rel=1e-8, abs=1e-12)


def test_determinism_bit_identical():
    _, blocks, b = make_problem("logistic", "wide", seed=6)
    runs = []
    for _ in range(2):
        s = ADMMSharing(as_format(blocks, "sparse"), b, Objective("logistic", 0.1, "sum"), 0.5)
        hist = []
        for _ in range(30):
            st = s.step()
            hist.append((st.objective, st.primal_residual, st.dual_residual))
        runs.append((s, hist))
    (a, ha), (c, hc) = runs
    assert ha == hc
    for xa, xc in zip(a.x, c.x):
        assert np.array_equal(xa, xc)
    assert np.array_equal(a.z, c.z) and np.array_equal(a.y, c.y)
    assert all(np.array_equal(p, q) for p, q in zip(a.shares, c.shares))


# --------------------------------------------------------------------------
# residuals and epoch statistics
# --------------------------------------------------------------------------
def test_residual_definitions_and_stats():
    solver, blocks, b, w, lam, rho = _warm_solver("logistic", "sum", "wide", epochs=4)
    st = solver.step()
    s = sum(Dm @ xm for Dm, xm in zip(blocks, solver.x))
    assert st.primal_residual == pytest.approx(np.linalg.norm(s - solver.z), rel=1e-12)
    dual = np.sqrt(sum(np.sum((2 * lam * xm + Dm.T @ solver.y) ** 2) for Dm, xm in zip(blocks, solver.x)))
    assert st.dual_residual == pytest.approx(dual, rel=1e-12)
    assert st.objective == pytest.approx(
        indep_value(np.hstack(blocks), b, "logistic", lam, w, solver.coef()), rel=1e-13
    )
    assert st.epoch == 5 and min(st.x_seconds, st.z_seconds, st.y_seconds) >= 0
    assert st.primal_residual > 1e-6 and st.dual_residual > 1e-6  # not yet converged
    quiet = solver.step(diagnostics=False)
    assert np.isnan(quiet.objective) and np.isnan(quiet.primal_residual)
    assert np.isnan(quiet.dual_residual) and quiet.epoch == 6


def test_residuals_decrease_to_zero():
    solver, *_ = _warm_solver("logistic", "mean", "tall", epochs=0)
    first = solver.step()
    for _ in range(300):
        last = solver.step()
    assert last.primal_residual <= 1e-10 * max(1.0, first.primal_residual)
    assert last.dual_residual <= 1e-8 * first.dual_residual
    assert last.objective < first.objective


# --------------------------------------------------------------------------
# BlockSolver
# --------------------------------------------------------------------------
@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("n,d", [(60, 8), (30, 75), (40, 40)])
@pytest.mark.parametrize("lam,rho", [(0.1, 1.0), (1e-4, 5.0), (3.0, 1e-2)])
def test_block_solver_solves_x_system(n, d, lam, rho, sparse):
    rng = np.random.default_rng(n * 1000 + d)
    D = rng.standard_normal((n, d)) * (rng.random((n, d)) < 0.5)
    r = rng.standard_normal(n)
    bs = BlockSolver(sp.csr_matrix(D) if sparse else D, lam, rho)
    assert bs.wide == (d > n)
    expected = np.linalg.solve(2 * lam * np.eye(d) + rho * D.T @ D, D.T @ r)
    # the system's condition number reaches rho ||D||^2 / (2 lam) ~ 1e6 here, so
    # two correct solvers agree to ~1e-10 of the largest entry, not per entry
    np.testing.assert_allclose(bs.solve(r), expected, rtol=1e-8, atol=1e-9 * np.abs(expected).max())
    x = rng.standard_normal(d)
    np.testing.assert_allclose(bs.matvec(x), D @ x, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(bs.rmatvec(r), D.T @ r, rtol=1e-13, atol=1e-13)


def test_block_solver_lam_zero_full_rank():
    rng = np.random.default_rng(8)
    tall, wide, r = rng.standard_normal((50, 6)), rng.standard_normal((10, 30)), rng.standard_normal(50)
    np.testing.assert_allclose(
        BlockSolver(tall, 0.0, 2.0).solve(r), np.linalg.solve(2.0 * tall.T @ tall, tall.T @ r), rtol=1e-10
    )
    # wide, lam = 0: D^T D is singular but D D^T is not; the push-through
    # branch returns the minimum-norm solution of rho D^T D x = D^T r.
    x = BlockSolver(wide, 0.0, 2.0).solve(r[:10])
    np.testing.assert_allclose(2.0 * wide.T @ (wide @ x), wide.T @ r[:10], atol=1e-10)
    np.testing.assert_allclose(x, np.linalg.pinv(2.0 * wide.T @ wide) @ wide.T @ r[:10], atol=1e-10)


@pytest.mark.parametrize("sparse", [False, True])
def test_block_solver_lam_zero_rank_deficient_raises(sparse):
    rng = np.random.default_rng(9)
    D = np.column_stack([rng.standard_normal((50, 5)), np.zeros(50)])  # empty feature column
    with pytest.raises(ValueError, match=r"singular.*\(50, 6\).*lam > 0"):
        BlockSolver(sp.csr_matrix(D) if sparse else D, 0.0, 1.0)
    with pytest.raises(ValueError, match="singular"):
        ADMMSharing([D[:, :3], D[:, 3:]], np.ones(50), Objective("squared", 0.0), 1.0)
    BlockSolver(D, 1e-8, 1.0)  # any lam > 0 makes it definite


def test_block_solver_lam_zero_collinear_columns_raise():
    """Rounding can leave a tiny positive Cholesky pivot; the pivot check catches it."""
    accepted = []
    for seed in range(10):
        A = np.random.default_rng(seed).standard_normal((50, 5))
        D = np.column_stack([A, A[:, 0]])  # rank 5 < 6 columns
        try:
            BlockSolver(D, 0.0, 1.0)
            accepted.append(seed)
        except ValueError:
            pass
    assert not accepted, f"rank-deficient blocks accepted for seeds {accepted}"


# --------------------------------------------------------------------------
# validation
# --------------------------------------------------------------------------
def test_validation_errors():
    rng = np.random.default_rng(10)
    A, B = rng.standard_normal((20, 3)), rng.standard_normal((20, 4))
    b = np.ones(20)
    obj = Objective("logistic", 0.1)
    with pytest.raises(ValueError, match=r"party 2: block of shape \(19, 4\) does not have 20 rows"):
        ADMMSharing([A, B[:19]], b, obj)
    with pytest.raises(ValueError, match=r"party 1: block of shape \(20, 3\) does not have 21 rows"):
        ADMMSharing([A, B], np.ones(21), obj)
    with pytest.raises(ValueError, match="does not have 20 rows"):
        ADMMSharing([sp.csr_matrix(A), sp.csr_matrix(B[:5])], b, obj)
    with pytest.raises(ValueError, match="party 2: block has no columns"):
        ADMMSharing([A, np.zeros((20, 0))], b, obj)
    with pytest.raises(ValueError, match="at least one feature block"):
        ADMMSharing([], b, obj)
    for bad in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="rho must be a finite number > 0"):
            ADMMSharing([A, B], b, obj, bad)
    with pytest.raises(ValueError, match="unknown reduction"):
        Objective("logistic", 0.1, "avg")
    with pytest.raises(ValueError, match="lam must be"):
        Objective("logistic", -1.0)
    with pytest.raises(ValueError, match="unknown loss"):
        Objective("hinge", 0.1)
