"""The numerical pieces of private stacking: local fits, sensitivities, calibration, fusion.

Pure numpy/scipy: no files, no printing, no global state; no random draw
happens here (the releases are drawn through the solver's
:meth:`vfl.core.solver.Solver.release`, or where the passive parties run, at
the scales of the events the solver records: :mod:`.party`).

Notation (one passive party m, N training rows, row i of its block ``D_m``
written ``a_i`` with ``||a_i|| <= 1``; labels ``y_i`` in {-1, +1};
``m0 = log(p / (1 - p))`` the base-rate logit of the labels):

- local model (eq. L): ``x_m = argmin sum_i log(1 + exp(-y_i (m0 + a_i . x))) + lam_m ||x||^2``;
- output perturbation (eq. O): ``x~_m = x_m + N(0, sigma_x^2 I)``;
- share (eq. S): ``t_m = clip(D_m x~_m, [-c, c]) + N(0, sigma_s^2 I_N)``;
- moments (eq. Q): ``q_m = (mean_i s_i, mean_i s_i^2) + N(0, sigma_q^2 I_2)``
  of the clipped share ``s = clip(D_m x~_m, [-c, c])``;
- fusion at party 1 (eqs. R1-R3, F): regression calibration of the noisy
  shares on party 1's own features, then a logistic fit on ``[D_1, s^]``
  with a Gaussian prior N(1, sd^2) on the stacking weights (1: the product
  of experts), de-attenuated for prediction on exact shares; without
  released shares, the product of experts ``u_1 + sum_m s_m`` itself.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import scipy.linalg
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from scipy.special import expit

__all__ = [
    "GTOL",
    "FusionModel",
    "base_rate_logit",
    "fit_logistic",
    "fuse",
    "gdp_mu",
    "model_sensitivity",
    "moments_sensitivity",
    "noise_scales",
    "share_sensitivity",
    "sure_ridge",
]

#: Absolute gradient-norm tolerance every local fit must reach; it enters the
#: enforced sensitivity of the released model (:func:`model_sensitivity`).
GTOL = 1e-6

#: Blocks wider than this are solved with Hessian-vector products (trust-ncg)
#: instead of a dense Hessian.
_DENSE_MAX = 600

#: l2 weight on party 1's coefficients in the fusion fit (sum form): numerical only
_THETA_RIDGE = 1e-3


# ------------------------------------------------------------ sensitivities --
def model_sensitivity(lam: float, gtol: float = GTOL, grad_bound: float = 1.0) -> float:
    """l2 sensitivity ``(1 + gtol) / lam`` of the local model (eq. L), one row replaced.

    Chaudhuri, Monteleoni and Sarwate (2011), Cor. 8 in the sum form. With
    ``F(x) = sum_i l_i(x) + lam ||x||^2`` (``2 lam``-strongly convex) and a
    neighbour ``F'`` that differs in term i only, ``grad F'(x*) = grad l'_i(x*)
    - grad l_i(x*)``; each per-sample gradient is ``-y sigma(-y u) a`` with
    ``|sigma| < 1`` and ``||a|| <= 1``, so ``||grad F'(x*)|| <= 2`` and
    ``||x* - x*'|| <= 2 / (2 lam)``. The solver stops at ``||grad F|| <= gtol``
    (checked), which adds ``gtol / (2 lam)`` on each side. The offset ``m0``
    and the labels are the same in both datasets (labels are not protected).
    """
    if not (np.isfinite(lam) and lam > 0):
        raise ValueError(f"the local l2 weight lam_m must be a finite number > 0, got {lam!r}")
    # grad_bound: the per-sample gradient bound over ||a||; 1 + c with the debiased loss of
    # randomized-response labels (:func:`vfl.stacking.randomized_response.gradient_bound`)
    return (grad_bound + gtol) / lam


def share_sensitivity(clip: float) -> float:
    """l2 sensitivity ``2 c`` of the clipped share (eq. S) given the released model.

    Given ``x~_m`` (already public), replacing row i changes entry i of
    ``clip(D_m x~_m, [-c, c])`` only, and by at most ``2 c``.
    """
    if not (np.isfinite(clip) and clip > 0):
        raise ValueError(f"clip must be a finite number > 0, got {clip!r}")
    return 2.0 * clip


def moments_sensitivity(clip: float, n: int) -> float:
    """l2 sensitivity of ``(mean s_i, mean s_i^2)`` with ``s_i`` in ``[-c, c]`` (eq. Q), exact.

    Replacing ``s_i = u`` by ``v`` moves the pair by ``(u - v, u^2 - v^2) / N``,
    of squared norm ``p^2 (1 + q^2) / N^2`` with ``p = u - v``, ``q = u + v``,
    ``|p| + |q| <= 2c``. The maximum lies on ``q = 2c - p`` (the objective grows
    with ``|q|``): at ``p = 2c`` (``4 c^2``) or, when ``c >= sqrt 2``, where
    ``r = 2c - p`` solves ``2 r^2 - 2 c r + 1 = 0``.
    """
    share_sensitivity(clip)
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n!r}")
    c = float(clip)
    cands = [4.0 * c * c]
    if c * c >= 2.0:
        for r in ((c - math.sqrt(c * c - 2.0)) / 2.0, (c + math.sqrt(c * c - 2.0)) / 2.0):
            p = 2.0 * c - r
            cands.append(p * p * (1.0 + r * r))
    return math.sqrt(max(cands)) / n


def gdp_mu(epsilon: float, delta: float, accountant: str = "pld") -> float:
    """The Gaussian-DP ``mu`` whose single Gaussian mechanism is (epsilon, delta)-DP.

    Gaussian mechanisms compose exactly: releases with ``sum_k (Delta_k /
    sigma_k)^2 = mu^2`` are together one Gaussian of sensitivity 1 and noise
    ``1 / mu``, whatever the split between them. ``"pld"``: the exact profile
    of that Gaussian (Balle and Wang 2018; what dp-accounting's PLD
    approaches from above and what the runner's ledger evaluates), inverted
    by Brent's method; ``"rdp"``: :func:`vfl.privacy.calibrate_sigma` with
    the RDP accountant, the ledger's bound in that mode.
    """
    from scipy.optimize import brentq  # lazy: start-up (scipy.optimize, 0.3 s; the private calibration only)

    from vfl.privacy import (  # lazy: start-up (it loads dp-accounting, 0.6 s)
        calibrate_sigma,
        composed_gaussian_epsilon,
    )

    if not (np.isfinite(epsilon) and epsilon > 0):
        raise ValueError(f"epsilon must be a finite number > 0, got {epsilon!r}")
    if not 0 < delta < 1:
        raise ValueError(f"delta must be in (0, 1), got {delta!r}")
    if accountant == "rdp":
        return 1.0 / calibrate_sigma(epsilon, delta, 1, 1.0, accountant="rdp")
    if accountant != "pld":
        raise ValueError(f"accountant must be 'pld' or 'rdp', got {accountant!r}")

    def gap(log_mu):
        return math.log(composed_gaussian_epsilon([math.exp(-log_mu)], delta) + 1e-300) - math.log(epsilon)

    lo, hi = -10.0, 1.0
    while gap(hi) < 0:
        lo, hi = hi, hi + 2.0
    return math.exp(brentq(gap, lo, hi, xtol=1e-13, rtol=1e-13))


def noise_scales(mu: float, split, sensitivities) -> np.ndarray:
    """``sigma_k = Delta_k / (sqrt(f_k) mu)``: step k spends ``f_k mu^2`` of ``mu^2``.

    A step with ``f_k = 0`` is not released (``inf``).
    """
    f = np.asarray(split, dtype=float)
    d = np.asarray(sensitivities, dtype=float)
    with np.errstate(divide="ignore"):
        return np.where(f > 0, d / (np.sqrt(np.where(f > 0, f, 1.0)) * mu), np.inf)


# ---------------------------------------------------------------- fitting --
def base_rate_logit(y: np.ndarray) -> float:
    """``m0 = log(p / (1 - p))`` with ``p`` the fraction of +1 labels (clamped away from 0, 1)."""
    p = float(np.clip(np.mean(np.asarray(y) > 0), 1e-6, 1 - 1e-6))
    return math.log(p / (1.0 - p))


def _objective(Z, y, lam, center, offset, tilt=None):
    def fun(w):
        u = offset + Z @ w
        r = w - center
        loss = float(np.sum(np.logaddexp(0.0, -y * u))) + float(np.sum(lam * r * r))
        q = expit(-y * u)  # sigma(-y u): minus the derivative of the loss in u, times y
        g = np.asarray(Z.T @ (-y * q)).ravel() + 2.0 * lam * r
        if tilt is not None:  # a linear term - tilt . w (the debiased loss, .labels)
            loss, g = loss - float(tilt @ w), g - tilt
        return loss, g

    def weights(w):
        u = offset + Z @ w
        return expit(u) * expit(-u)

    return fun, weights


def fit_logistic(
    Z, y, lam, *, offset=0.0, center=None, gtol: float = GTOL, x0=None, max_iter: int = 100, tilt=None
) -> tuple[np.ndarray, float]:
    """``argmin_w sum_i log(1 + exp(-y_i (offset_i + Z_i w))) + sum_j lam_j (w_j - center_j)^2``
    (``- tilt . w`` added when ``tilt`` is given: a linear term leaves the Hessian as is).

    ``lam`` (scalar or one per column, all > 0) makes the problem strongly
    convex, so Newton's method with a backtracking (Armijo) line search
    converges globally, quadratically near the end. The Newton system is
    solved with the dense Hessian for narrow ``Z`` and by conjugate
    gradients on Hessian-vector products for wide ones. Iterates until
    ``||grad|| <= gtol`` and checks it: the released model's sensitivity
    (:func:`model_sensitivity`) depends on it.
    """
    n, d = Z.shape
    lam = np.broadcast_to(np.asarray(lam, dtype=float), (d,)).copy()
    if not np.all(np.isfinite(lam)) or np.any(lam <= 0):
        raise ValueError("every l2 weight of a logistic fit must be a finite number > 0")
    center = np.zeros(d) if center is None else np.asarray(center, dtype=float)
    y = np.asarray(y, dtype=float)
    narrow = d <= _DENSE_MAX
    if narrow and sp.issparse(Z) and n * d <= 5e7:
        Z = Z.toarray()  # dense BLAS beats sparse products for a few hundred columns
    fun, weights = _objective(Z, y, lam, center, offset, tilt)
    w = center.copy() if x0 is None else np.asarray(x0, dtype=float).copy()
    f, g = fun(w)
    for _ in range(max_iter):
        if np.linalg.norm(g) <= gtol:
            break
        h = weights(w)
        if narrow:
            H = _dense_hessian(Z, h, lam)
            try:
                step = scipy.linalg.cho_solve(scipy.linalg.cho_factor(H), g)
            except np.linalg.LinAlgError:  # rounding in a nearly singular H
                step = np.linalg.lstsq(H, g, rcond=None)[0]
        else:
            op = spla.LinearOperator(
                (d, d), dtype=float, matvec=lambda p, h=h: np.asarray(Z.T @ (h * (Z @ p))).ravel() + 2.0 * lam * p
            )
            step, _ = spla.cg(op, g, rtol=min(0.1, float(np.linalg.norm(g)) ** 0.5 / max(1.0, n)), maxiter=10 * d)
        slope = float(g @ step)
        if slope <= 0:  # not a descent direction (CG breakdown): fall back on the gradient
            step, slope = g, float(g @ g)
        t = 1.0
        gn = float(np.linalg.norm(g))
        while True:
            f_new, g_new = fun(w - t * step)
            if f_new <= f - 1e-4 * t * slope or t < 1e-12:
                break
            # near the optimum the decrease is below the rounding of f (a sum
            # of N terms): accept a step that still shrinks the gradient
            if abs(f_new - f) <= 1e-13 * max(1.0, abs(f)) * n and np.linalg.norm(g_new) < gn:
                break
            t *= 0.5
        w, f, g = w - t * step, f_new, g_new
    gnorm = float(np.linalg.norm(g))
    if not gnorm <= gtol:
        raise ValueError(
            f"a logistic fit stopped at gradient norm {gnorm:.3g} > {gtol:g}; "
            "its sensitivity bound would not hold (raise the l2 weight)"
        )
    return w, gnorm


def _dense_hessian(Z, h, lam):
    H = (Z.T @ Z.multiply(h[:, None])).toarray() if sp.issparse(Z) else (Z.T * h) @ Z
    H = np.asarray(H)
    H[np.diag_indices_from(H)] += 2.0 * lam
    return H


# ------------------------------------------------- party 1: post-processing --
def _dense(A) -> np.ndarray:
    return A.toarray() if sp.issparse(A) else np.asarray(A, dtype=float)


def sure_ridge(D1, anchor: np.ndarray, T: np.ndarray, tau: np.ndarray, *, grid: int = 61):
    """Estimate ``E[s | D_1]`` from the noisy shares ``T = S + N(0, diag(tau^2))`` (eq. R1).

    Ridge regression of each column of ``T`` on ``D_1`` that shrinks towards
    the span of ``anchor`` (``[1, u_1]``: the intercept and party 1's own
    logit): ``f = P T + D~ (D~^T D~ + rho I)^-1 D~^T T``, with ``P`` the
    projection on the anchor and ``D~ = (I - P) D_1``. Each party's ``rho`` is
    chosen by Stein's unbiased risk estimate ``||t - f||^2 + 2 tau^2 df(rho)``,
    exact here because the noise is Gaussian with a known (public) scale; so
    a noisy share falls back on the anchor and a clean one uses all of
    party 1's features. Post-processing only: no tuning is needed.

    Returns ``(F, df, df2)``: fitted values ``(N, K)``, ``tr H`` and
    ``tr H^2`` per party.
    """
    T = np.asarray(T, dtype=float)
    Q0, _ = np.linalg.qr(anchor)
    D = _dense(D1)
    Dt = D - Q0 @ (Q0.T @ D)
    T0 = T - Q0 @ (Q0.T @ T)
    G = Dt.T @ Dt
    lam, V = np.linalg.eigh(G)
    keep = lam > max(G.shape) * np.finfo(float).eps * max(lam.max(), 1.0) * 10
    lam, V = lam[keep], V[:, keep]
    if lam.size == 0:  # party 1 has nothing beyond the anchor
        F = Q0 @ (Q0.T @ T)
        k = Q0.shape[1]
        return F, np.full(T.shape[1], float(k)), np.full(T.shape[1], float(k))
    Z = V.T @ (Dt.T @ T0)  # (r, K)
    rhos = np.r_[lam.max() * np.logspace(-10, 4, grid), np.inf]
    with np.errstate(divide="ignore", invalid="ignore"):
        shrink = np.where(np.isinf(rhos)[:, None], 0.0, lam[None, :] / (lam[None, :] + rhos[:, None]))
    # RSS(rho) = ||t0||^2 - sum_j z_j^2 (2 h_j - h_j^2) / lam_j with h_j = lam_j / (lam_j + rho)
    gain = (2.0 * shrink - shrink**2) / lam[None, :]  # (grid, r)
    rss = np.sum(T0 * T0, axis=0)[None, :] - gain @ (Z * Z)  # (grid, K)
    k = Q0.shape[1]
    df = k + shrink.sum(axis=1)  # (grid,)
    sure = rss + 2.0 * (np.asarray(tau, dtype=float) ** 2)[None, :] * df[:, None]
    best = np.argmin(sure, axis=0)  # (K,)
    coef = shrink[best].T / lam[:, None] * Z  # (r, K): h_j z_j / lam_j
    F = Q0 @ (Q0.T @ T) + Dt @ (V @ coef)
    return F, df[best], k + np.sum(shrink[best] ** 2, axis=1)


@dataclass
class FusionModel:
    """Party 1's model: margins ``D_1 theta + S a`` (``S``: the passive parties' clipped shares)."""

    theta: np.ndarray
    a: np.ndarray
    w1: np.ndarray
    details: dict = field(default_factory=dict)

    def margins(self, D1, S: np.ndarray) -> np.ndarray:
        u = np.asarray(D1 @ self.theta).ravel()
        return u + (S @ self.a if S.shape[1] else 0.0)


def fuse(D1, y, T, tau, moments, *, lam1: float, prior_sd: float, n_passive: int | None = None) -> FusionModel:
    """Party 1's post-processing of the released shares (eqs. R1-R3, F).

    - (L1) its own local model ``w_1`` (ridge ``lam1``) and logit ``u_1 = D_1 w_1``;
    - (R1) ``f = E^[s | D_1]`` per passive party by :func:`sure_ridge`;
    - (R2) the residual covariance ``Sigma_r = Cov(s - f)``: variances from
      the released moments (minus what ``f`` explains, corrected for the
      noise ``f`` carries), covariances between parties from the noisy
      residuals (independent noises);
    - (R3) regression calibration ``s^ = f + K (t - f)``,
      ``K = Sigma_r (Sigma_r + diag tau^2)^-1``, posterior covariance
      ``V = Sigma_r - K Sigma_r``;
    - (F) ``(theta, a) = argmin sum_i log(1 + exp(-y_i (D_1 theta + s^_i a)))
      + r ||theta||^2 + ||a - 1/kappa0||^2 / (2 (sd / kappa0)^2)`` (``r`` =
      1e-3, numerical only), i.e. the prior N(1, sd^2) on every stacking
      weight (1: add each party's logit, the product of experts) written on
      the attenuated scale of the fit, ``kappa0 = sqrt(1 + pi/8 1^T V 1)``;
      then every coefficient is scaled by ``kappa = (1 - pi/8 a^T V a)^-1/2``
      (the probit approximation ``E[sigmoid(eta + a^T e)] ~ sigmoid(eta /
      sqrt(1 + pi/8 a^T V a))``, ``e ~ N(0, V)``), since the test margins use
      exact shares. With very noisy shares (gain -> 0) ``s^ -> f`` lies in
      the span of ``D_1``, the data cannot tell ``a`` from ``theta``, and the
      prior sets ``a = 1``: party 1's logit plus the part of ``s`` that
      ``D_1`` does not explain.

    ``T = None`` (no share was released): the product of experts
    ``theta = w_1``, ``a = 1`` for each of the ``n_passive`` parties.
    ``tau = 0``: non-private stacking (``s^ = t``, ``V = 0``).
    """
    y = np.asarray(y, dtype=float)
    n = len(y)
    w1, _ = fit_logistic(D1, y, lam1, gtol=1e-8 * max(1.0, n))
    if T is None:
        if n_passive is None:
            raise ValueError("without shares, fuse needs n_passive (the product of experts)")
        return FusionModel(w1.copy(), np.ones(int(n_passive)), w1, {"fusion": "product of experts (no shares)"})
    T = np.asarray(T, dtype=float)
    K = T.shape[1]
    tau = np.broadcast_to(np.asarray(tau, dtype=float), (K,)).copy()
    details = {}
    if np.all(tau == 0):
        S_hat, V = T, np.zeros((K, K))
    else:
        u1 = np.asarray(D1 @ w1).ravel()
        anchor = np.column_stack([np.ones(n), u1])
        F, df, df2 = sure_ridge(D1, anchor, T, tau)
        # Var(s): from the released moments when there are any, else from the
        # noisy shares themselves (error ~ tau^2 sqrt(2 / N))
        var_s = (moments[:, 1] - moments[:, 0] ** 2) if moments is not None else T.var(axis=0) - tau**2
        R = T - F
        # Var(s - Hs) = Var(s) - 2 Cov(s, Hs) + Var(Hs), each term corrected for
        # the known noise f = H t carries (E e^T H e = tau^2 tr H); with the
        # released moments this is far more precise than Var(t - f) - tau^2,
        # whose error is ~ tau^2 sqrt(2 / N)
        cov_tf = np.mean((T - T.mean(0)) * (F - F.mean(0)), axis=0) - tau**2 * (df - 1.0) / n
        var_f = F.var(axis=0) - tau**2 * (df2 - 1.0) / n
        var_r = var_s - 2.0 * cov_tf + var_f
        Sigma = np.cov(R, rowvar=False, bias=True).reshape(K, K)
        Sigma[np.diag_indices(K)] = var_r
        # a covariance: symmetric, eigenvalues floored at a small fraction of Var(s)
        floor = 1e-3 * max(float(np.max(var_s)), 1e-6)
        ev, U = np.linalg.eigh(0.5 * (Sigma + Sigma.T))
        Sigma = (U * np.maximum(ev, floor)) @ U.T
        Kg = Sigma @ np.linalg.inv(Sigma + np.diag(tau**2))
        S_hat = F + R @ Kg.T
        V = Sigma - Kg @ Sigma
        V = 0.5 * (V + V.T)
        details.update(
            {
                "tau": tau.tolist(),
                "sure_df": df.tolist(),
                "var_s": var_s.tolist(),
                "var_r": np.diag(Sigma).tolist(),
                "gain": np.diag(Kg).tolist(),
            }
        )
    ones = np.ones(K)
    kappa0 = math.sqrt(1.0 + math.pi / 8.0 * float(ones @ V @ ones))
    p1 = D1.shape[1]
    Z = (
        sp.hstack([D1, sp.csr_matrix(S_hat)], format="csr")
        if sp.issparse(D1)
        else np.hstack([np.asarray(D1, dtype=float), S_hat])
    )
    prior_prec = 1.0 / (2.0 * (prior_sd / kappa0) ** 2)
    # a tiny ridge on theta: party 1's own lam1 would compete with the prior
    # along the direction (theta - d beta, a + d) that noisy shares cannot resolve
    lam = np.r_[np.full(p1, _THETA_RIDGE), np.full(K, prior_prec)]
    center = np.r_[np.zeros(p1), np.full(K, 1.0 / kappa0)]
    w, _ = fit_logistic(Z, y, lam, center=center, x0=np.r_[w1, np.full(K, 1.0 / kappa0)], gtol=1e-9 * max(1.0, n))
    a = w[p1:]
    q = math.pi / 8.0 * float(a @ V @ a)
    kappa = 1.0 / math.sqrt(max(1.0 - q, 0.5))
    details.update({"kappa": kappa, "kappa0": kappa0, "a_fit": a.tolist()})
    return FusionModel(kappa * w[:p1], kappa * a, w1, details)


def calibrate(
    K: int,
    n: int,
    *,
    epsilon,
    delta,
    accountant,
    lam_local,
    model_noise,
    split,
    clip: float,
    gradient_bound: float = 1.0,
):
    """``(mu, lam, sens, sigma)`` of a private round with K passive parties and n rows: the
    GDP ``mu`` of (epsilon, delta), each party's l2 weight, and per release (model, shares,
    moments) each party's enforced sensitivity and noise scale (``gradient_bound``: the
    loss's, :func:`vfl.stacking.randomized_response.gradient_bound` under label DP); step k spends the
    fraction ``f_k`` of ``mu^2``: ``sigma_k = Delta_k / (sqrt(f_k) mu)``."""
    mu = gdp_mu(epsilon, delta, accountant)
    lam = np.full(K, float(lam_local))
    if model_noise is not None:
        rule = (1.0 + GTOL) / (model_noise * np.sqrt(split[0]) * mu)
        lam = np.maximum(lam, rule)
    sens = {
        "model": np.array([model_sensitivity(v, grad_bound=gradient_bound) for v in lam]),
        "shares": np.full(K, share_sensitivity(clip)),
        "moments": np.full(K, moments_sensitivity(clip, n)),
    }
    sigma = {k: noise_scales(mu, np.full(K, f), sens[k]) for k, f in zip(("model", "shares", "moments"), split)}
    return mu, lam, sens, sigma
