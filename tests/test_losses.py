"""Per-sample losses: value/grad/hess and the z-subproblem (7) solver.

``prox_linear(s, y, b, rho, w)`` must return, for every sample, the minimizer
of ``w*l(z; b) - y*z + rho/2*(z - s)^2``. The reference is found independently
by ``scipy.optimize.minimize_scalar`` on that scalar function, evaluated in
50-digit decimal arithmetic (stdlib ``decimal``) so that the reference is not
limited by double-precision cancellation: a value-based minimizer in float64
only resolves the argmin to ``~sqrt(eps * |f| / rho)``, i.e. ~1e-5 when
``rho = 1e-3``, far from the 1e-8 agreement we want.
"""

import decimal
from decimal import Decimal

import numpy as np
import pytest
import scipy.optimize
from scipy.special import expit

import vfl.core.losses as losses
from vfl.core.losses import LOSSES, LogisticLoss, SquaredLoss, get_loss

N_MEAN = 1000  # the "N" of the w = 1/N (reduction="mean") cases


# --------------------------------------------------------------------------
# high-precision scalar reference for (7)
# --------------------------------------------------------------------------
_CTX = decimal.Context(prec=50, Emax=10**7, Emin=-(10**7))


def _dec_f(loss, z, s, y, b, rho, w):
    """``w*l(z; b) - y*z + rho/2*(z - s)^2`` in 50-digit arithmetic (Decimal z)."""
    with decimal.localcontext(_CTX):
        if loss == "logistic":
            lz = (1 + (-b * z).exp()).ln()
        else:
            lz = (z - b) ** 2
        return w * lz - y * z + rho / 2 * (z - s) ** 2


def reference_prox(loss, s, y, b, rho, w):
    """Independent argmin of (7) for one sample via ``minimize_scalar``.

    Two passes in an offset variable ``t`` (Brent's relative tolerance is
    then relative to the small offset, not to ``|z|``); each objective value
    is ``f(z0 + t) - f(z0)`` computed in 50 digits and rounded once to float,
    so the only rounding is relative to that tiny difference.

    Pass 1 centres on ``c = s + y/rho`` (the argmin without the loss) and
    searches ``|t| <= 2 * w * max(1, |c - b|) / rho + 1``, a bracket wide
    enough for both losses (|l'| < 1 for logistic; for the squared loss
    |z - c| <= 2w|c - b| / rho). Pass 2 re-centres on the pass-1 point with a
    small bracket that the pass-1 error (~1e-8 of the first bracket) is
    far inside; the result must not sit on a bracket end.
    """
    with decimal.localcontext(_CTX):
        S, Y, B, R, W = (Decimal(float(v)) for v in (s, y, b, rho, w))
        z0 = S + Y / R
        width = 2.0 * float(w) * max(1.0, abs(float(z0 - B))) / float(rho) + 1.0
        for _ in range(2):
            f0 = _dec_f(loss, z0, S, Y, B, R, W)

            def f(t, z0=z0, f0=f0):
                with decimal.localcontext(_CTX):
                    return float(_dec_f(loss, z0 + Decimal(t), S, Y, B, R, W) - f0)

            res = scipy.optimize.minimize_scalar(
                f,
                bounds=(-width, width),
                method="bounded",
                options={"xatol": 1e-15 * width, "maxiter": 2000},
            )
            assert res.success, res
            assert abs(res.x) < 0.999 * width, "reference argmin on the bracket end"
            z0 = z0 + Decimal(res.x)
            width = 1e-5 * width
        return float(z0)


def stationarity(loss, z, s, y, b, rho, w):
    """``g(z) = w l'(z) - y + rho (z - s)`` in 50 digits (z rounded to float)."""
    with decimal.localcontext(_CTX):
        Z, S, Y, B, R, W = (Decimal(float(v)) for v in (z, s, y, b, rho, w))
        if loss == "logistic":
            dl = -B / (1 + (B * Z).exp())
        else:
            dl = 2 * (Z - B)
        return float(W * dl - Y + R * (Z - S))


def _extreme_samples(loss, seed, n_random):
    """(s, y, b, rho, w) tuples: a grid of extremes plus random draws.

    y is drawn as a multiple of w: after the first epoch ADMM's dual satisfies
    y = w l'(z) (first-order condition of (7)), but we also go well beyond.
    """
    rng = np.random.default_rng(seed)
    rows = []
    for rho in (1e-3, 1e-1, 1.0, 10.0, 1e3):
        for w in (1.0, 1.0 / N_MEAN):
            for s in (-1e3, -30.0, -1.0, 0.0, 0.5, 40.0, 1e3):
                for y_over_w in (-0.999, 0.0, 0.3):
                    for b in (-1.0, 1.0):
                        rows.append((s, y_over_w * w, b, rho, w))
    rows = [rows[i] for i in rng.choice(len(rows), size=n_random // 2, replace=False)]
    for _ in range(n_random - len(rows)):
        rho = 10.0 ** rng.uniform(-3, 3)
        w = 1.0 if rng.random() < 0.5 else 1.0 / N_MEAN
        s = rng.choice([-1.0, 1.0]) * 10.0 ** rng.uniform(-3, 3)
        y = w * rng.normal(scale=3.0)
        b = rng.choice([-1.0, 1.0]) if loss == "logistic" else rng.normal(scale=5.0)
        rows.append((s, y, b, rho, w))
    return rows


# --------------------------------------------------------------------------
# value / grad / hess
# --------------------------------------------------------------------------
def _fd(f, u, h):
    return (f(u + h) - f(u - h)) / (2 * h)


@pytest.mark.parametrize("loss", [LogisticLoss(), SquaredLoss()], ids=lambda l: l.name)
def test_grad_and_hess_match_finite_differences(loss):
    rng = np.random.default_rng(0)
    n = 500
    u = rng.uniform(-8, 8, n)
    b = rng.choice([-1.0, 1.0], n) if loss.name == "logistic" else rng.normal(size=n)
    h = 1e-5
    fd_grad = _fd(lambda v: loss.value(v, b), u, h)
    fd_hess = _fd(lambda v: loss.grad(v, b), u, h)
    np.testing.assert_allclose(loss.grad(u, b), fd_grad, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(loss.hess(u, b), fd_hess, rtol=1e-7, atol=1e-9)
    for out in (loss.value(u, b), loss.grad(u, b), loss.hess(u, b)):
        assert out.shape == (n,) and out.dtype == np.float64


def test_logistic_closed_forms_including_extremes():
    u = np.array([-1e3, -745.0, -40.0, -30.0, -5.0, -1e-8, 0.0, 1e-8, 2.0, 30.0, 40.0, 745.0, 1e3])
    loss = LogisticLoss()
    for b in (-1.0, 1.0):
        bb = np.full_like(u, b)
        with decimal.localcontext(_CTX):
            exact_v, exact_g, exact_h = [], [], []
            for ui in u:
                m = Decimal(float(-b * ui))  # l = log(1 + e^m), m = -b u
                e = m.exp()
                exact_v.append(float((1 + e).ln()))
                exact_g.append(float(-Decimal(b) * e / (1 + e)))
                exact_h.append(float(e / (1 + e) ** 2))
        # value (logaddexp) and gradient (expit) are accurate to a few ulps
        # even at |u| = 1e3, where the naive formulas overflow or cancel.
        np.testing.assert_allclose(loss.value(u, bb), exact_v, rtol=1e-14, atol=1e-300)
        np.testing.assert_allclose(loss.grad(u, bb), exact_g, rtol=1e-14, atol=1e-300)
        # The hessian p*(1-p) with p = expit(u) loses relative accuracy for
        # large positive u (1 - p cancels; p rounds to 1 beyond u ~ 37), so it
        # is only accurate in absolute terms there -- harmless for its uses
        # (Newton step scale, trust-region Hessian), which see it next to
        # rho or 2*lam.
        np.testing.assert_allclose(loss.hess(u, bb), exact_h, rtol=0, atol=2e-16)
        mid = np.abs(u) <= 15
        np.testing.assert_allclose(loss.hess(u, bb)[mid], np.asarray(exact_h)[mid], rtol=1e-8)
    # symmetric in b: the hessian of log(1+exp(-b u)) does not depend on b = +-1
    np.testing.assert_array_equal(loss.hess(u, np.ones_like(u)), loss.hess(u, -np.ones_like(u)))
    assert loss.value(np.array([0.0]), np.array([1.0]))[0] == pytest.approx(np.log(2), rel=1e-15)
    assert loss.grad(np.array([0.0]), np.array([1.0]))[0] == -0.5
    assert loss.hess(np.array([0.0]), np.array([1.0]))[0] == 0.25


def test_squared_closed_forms():
    rng = np.random.default_rng(1)
    u, b = rng.normal(scale=100, size=(2, 50))
    loss = SquaredLoss()
    np.testing.assert_allclose(loss.value(u, b), (u - b) ** 2, rtol=1e-15)
    np.testing.assert_allclose(loss.grad(u, b), 2 * (u - b), rtol=1e-15)
    h = loss.hess(u, b)
    assert h.dtype == np.float64 and h.shape == u.shape and np.all(h == 2.0)


def test_get_loss():
    assert isinstance(get_loss("logistic"), LogisticLoss)
    assert isinstance(get_loss("squared"), SquaredLoss)
    assert set(LOSSES) == {"logistic", "squared"}
    with pytest.raises(ValueError, match="unknown loss 'hinge'"):
        get_loss("hinge")


# --------------------------------------------------------------------------
# prox_linear: the z-update (7)
# --------------------------------------------------------------------------
def _prox_grouped(loss, rows, **kw):
    """prox_linear over ``rows``; it takes scalar rho and w (as in ADMM), so it
    is called once per (rho, w) group, vectorized within the group."""
    s, y, b, rho, w = (np.array(c) for c in zip(*rows))
    z = np.empty_like(s)
    for key in set(zip(rho, w)):
        idx = (rho == key[0]) & (w == key[1])
        z[idx] = loss.prox_linear(s[idx], y[idx], b[idx], key[0], key[1], **kw)
    return z, rho


@pytest.fixture(scope="module", params=["logistic", "squared"])
def prox_case(request):
    """Samples with extreme values and their independent reference argmins."""
    rows = _extreme_samples(request.param, seed=7, n_random=160)
    ref = np.array([reference_prox(request.param, *r) for r in rows])
    return request.param, rows, ref


def test_prox_linear_matches_independent_scalar_minimizer(prox_case):
    """Default tol: |z - z*| <= tol = 1e-10 (the solver's documented bound).

    The solver stops once its last step, which it applies, is below tol, so
    the error left is far smaller than tol at every scale of rho and w. On
    top, z is compared relative to max(1, |z|): |z| reaches ~1e3..1e4 here
    (z ~ s + y/rho), where one ulp is already 1e-13..1e-12.
    """
    loss_name, rows, ref = prox_case
    z, rho = _prox_grouped(get_loss(loss_name), rows)
    scale = np.maximum(1.0, np.abs(ref))
    bound = 1e-10 + 1e-12 * scale
    err = np.abs(z - ref)
    worst = int(np.argmax(err / bound))
    assert err[worst] <= bound[worst], (rows[worst], z[worst], ref[worst])


def test_prox_linear_tight_tol_matches_reference_to_1e10(prox_case):
    """With tol=1e-13 the solver agrees with the reference to ~1e-12."""
    loss_name, rows, ref = prox_case
    z, _ = _prox_grouped(get_loss(loss_name), rows, tol=1e-13)
    err = np.abs(z - ref) / np.maximum(1.0, np.abs(ref))
    worst = int(np.argmax(err))
    assert err[worst] <= 1e-10, (rows[worst], z[worst], ref[worst])


@pytest.mark.parametrize("loss_name", ["logistic", "squared"])
def test_prox_linear_stationarity(loss_name):
    """g(z) = w l'(z) - y + rho (z - s) is ~0 at the returned z.

    g is evaluated exactly (50 digits) at the float z, so besides the solver's
    stopping rule (last step <= tol, so |g| <~ tol * g'(z) <= tol * (rho + w/4))
    there is a floor from rounding z itself, ~rho * ulp(z) (1.1e-10 at
    rho = 1e3, |z| = 1e3).
    """
    loss = get_loss(loss_name)
    rows = _extreme_samples(loss_name, seed=11, n_random=400)
    for tol in (1e-10, 1e-13):
        z, _ = _prox_grouped(loss, rows, tol=tol)
        for zi, (s, y, b, rho, w) in zip(z, rows):
            g = stationarity(loss_name, zi, s, y, b, rho, w)
            floor = 4 * rho * np.spacing(abs(zi)) + 1e-15
            assert abs(g) <= tol * max(1.0, rho) + floor, (s, y, b, rho, w, zi, g)
            assert abs(g) <= 1e-9 * max(1.0, rho)
            if tol == 1e-13:
                assert abs(g) <= 1e-9 + floor


def test_prox_linear_vectorized_large():
    rng = np.random.default_rng(3)
    n = 100_000
    s = rng.normal(scale=50, size=n)
    s[:100] = rng.choice([-1e3, 1e3], 100)
    b = rng.choice([-1.0, 1.0], n)
    for w in (1.0, 1.0 / n):
        y = w * rng.uniform(-1, 1, n)
        for rho in (1e-3, 1.0, 1e3):
            s0, y0, b0 = s.copy(), y.copy(), b.copy()
            z = LogisticLoss().prox_linear(s, y, b, rho, w)
            assert z.shape == (n,) and z.dtype == np.float64
            # inputs untouched
            assert np.array_equal(s, s0) and np.array_equal(y, y0) and np.array_equal(b, b0)
            g = w * (-b * expit(-b * z)) - y + rho * (z - s)
            assert np.all(np.abs(g) <= 1e-10 * max(1.0, rho) + 4 * rho * np.spacing(np.abs(z)))
            # solution lies in the bracket c +- w/rho, c = s + y/rho
            c = s + y / rho
            assert np.all(np.abs(z - c) <= w / rho * (1 + 1e-12) + np.spacing(np.abs(c)))
    z = SquaredLoss().prox_linear(s, y, s, 1.0, 0.5)
    assert z.shape == (n,)


def test_prox_linear_special_cases():
    rng = np.random.default_rng(5)
    s, y = rng.normal(size=(2, 20))
    b = rng.choice([-1.0, 1.0], 20)
    for loss in (LogisticLoss(), SquaredLoss()):
        # w = 0: no loss, argmin of -y z + rho/2 (z - s)^2 is s + y/rho
        np.testing.assert_allclose(loss.prox_linear(s, y, b, 2.0, 0.0), s + y / 2.0, rtol=1e-15)
    # squared loss closed form: (2 w b + y + rho s) / (2 w + rho)
    w, rho = 0.3, 1.7
    np.testing.assert_allclose(
        SquaredLoss().prox_linear(s, y, b, rho, w),
        (2 * w * b + y + rho * s) / (2 * w + rho),
        rtol=1e-15,
    )


# --------------------------------------------------------------------------
# prox_newton: the fast z-update (in-place Newton; safeguarded fallback)
# --------------------------------------------------------------------------
def _extreme_grid(seed, n=4000):
    """Margins and centres up to |1e3|, y up to 10 w (beyond |l'| < 1), random starts."""
    rng = np.random.default_rng(seed)
    s = rng.choice([-1.0, 1.0], n) * 10.0 ** rng.uniform(-3, 3, n)
    s[:8] = [-1e3, 1e3, -745.0, 745.0, 0.0, 1e-300, -40.0, 40.0]
    b = rng.choice([-1.0, 1.0], n)
    z0 = rng.choice([-1.0, 1.0], n) * 10.0 ** rng.uniform(-3, 3, n)
    return s, b, z0, rng


@pytest.mark.parametrize("rho", [1e-6, 1e-3, 0.03, 0.25, 0.2500001, 1.0, 1e3, 1e6])
@pytest.mark.parametrize("w", [1.0, 1.0 / N_MEAN])
def test_prox_newton_equals_the_safeguarded_solver(rho, w):
    """To 1e-10 over extreme inputs, both below and above rho = w/4, warm and cold."""
    s, b, z0, rng = _extreme_grid(int(rho * 1e6) % 1000 + int(1 / w))
    y = w * rng.uniform(-10.0, 10.0, s.size)
    loss = LogisticLoss()
    for start in (None, z0):
        tight = loss.prox_linear(s, y, b, rho, w, tol=1e-14, z0=start)
        default = loss.prox_linear(s, y, b, rho, w, z0=start)
        fast = loss.prox_newton(s, y, b, rho, w, z0=start)
        assert fast.dtype == np.float64 and fast.shape == s.shape
        scale = np.maximum(1.0, np.abs(tight))
        assert np.max(np.abs(fast - default) / scale) <= 1e-10
        assert np.max(np.abs(fast - tight) / scale) <= 1e-12
    assert np.array_equal(loss.prox_newton(s, y, b, rho, w, b2_max=1.0), loss.prox_newton(s, y, b, rho, w))


def test_prox_newton_matches_the_decimal_reference(prox_case):
    loss_name, rows, ref = prox_case
    loss = get_loss(loss_name)
    s, y, b, rho, w = (np.array(c) for c in zip(*rows))
    z = np.empty_like(s)
    for key in set(zip(rho, w)):
        idx = (rho == key[0]) & (w == key[1])
        z[idx] = loss.prox_newton(s[idx], y[idx], b[idx], key[0], key[1])
    err = np.abs(z - ref) / np.maximum(1.0, np.abs(ref))
    worst = int(np.argmax(err))
    assert err[worst] <= 1e-10 + 1e-12, (rows[worst], z[worst], ref[worst])


def test_prox_newton_leaves_inputs_alone_and_handles_real_labels():
    rng = np.random.default_rng(12)
    s, y, z0 = rng.normal(scale=5, size=(3, 300))
    b = rng.choice([0.0, 1.0, -1.0, 2.5], 300)  # b = 0: a constant loss; |b| > 1 too
    copies = [a.copy() for a in (s, y, b, z0)]
    loss = LogisticLoss()
    for rho in (0.05, 3.0):
        for solve in (loss.prox_newton, loss.prox_linear):
            z = solve(s, y, b, rho, 1.0, z0=z0)
            for a, c in zip((s, y, b, z0), copies):
                assert np.array_equal(a, c)
            g = -b * expit(-b * z) - y + rho * (z - s)
            assert np.max(np.abs(g)) <= 1e-9 * max(1.0, rho), solve


@pytest.mark.parametrize("rho,w", [(0.02, 1.0), (5.0, 1.0), (0.3, 1e-4)])
def test_prox_newton_in_chunks_with_kept_buffers_gives_the_same_numbers(rho, w, monkeypatch):
    rng = np.random.default_rng(7)
    n = 2001
    b = np.where(rng.random(n) < 0.4, 1.0, -1.0)
    s, y, z0 = rng.standard_normal(n), rng.standard_normal(n), rng.standard_normal(n)
    buffers = [np.full(n, np.nan) for _ in range(6)]
    work = losses.NewtonWork(b, lambda i: buffers[i])
    loss = LogisticLoss()
    for start in (None, z0):
        whole = loss.prox_newton(s, y, b, rho, w, z0=start)  # one chunk (n < NEWTON_CHUNK)
        for chunk in (37, 64, 1000):  # none divides n: a short last chunk
            monkeypatch.setattr(losses, "NEWTON_CHUNK", chunk)
            assert np.array_equal(loss.prox_newton(s, y, b, rho, w, z0=start), whole)
            for _ in range(2):  # the buffers' old contents do not matter
                assert np.array_equal(loss.prox_newton(s, y, b, rho, w, z0=start, work=work), whole)
        monkeypatch.undo()
