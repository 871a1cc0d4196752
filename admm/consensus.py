"""Consensus ADMM over horizontally partitioned data, and its private variants.

Huang, Hu, Chan-Tin, Gong, *DP-ADMM: ADMM-based Distributed Learning with
Differential Privacy* (Huang et al. 2019, arXiv 1808.10101v1). N
providers each hold ``m`` rows ``A[i]`` ``(m, d)`` with labels ``b[i]`` in
{-1, +1}; a central trainer holds nothing. Problem (1a)-(1b)::

    min sum_i f_i(w_i)  s.t.  w_i = w,   f_i(w) = (1/m) sum_j l(a_ij, b_ij, w) + (lambda/N) R(w),

with the logistic loss and ``R = ||.||_1`` or ``||.||^2 / 2``. Three solvers:

- :class:`ConsensusADMM` (``consensus_admm``), Algorithm 1: exact local
  argmin (line 4), trainer average (line 6), dual step (line 8);
- :class:`ConsensusADMMPerturbed` (``consensus_admm_perturbed``), Algorithm 2:
  Algorithm 1 with the local solution released as ``w_i + N(0, sigma^2 I)``
  at the paper's constant sigma (Sec. III-A);
- :class:`DPADMM` (``dp_admm``), Algorithm 3: the closed form of (3a), the
  argmin of the approximate augmented Lagrangian (2) linearized at the
  provider's own noisy iterate, released with the time-varying sigma of
  Theorem 1, step sizes of Theorem 3 (l1) or Theorem 4 (l2).

Everything is vectorized over providers (arrays ``(N, m, d)``, ``(N, d)``):
there is no Python loop over providers or samples inside an iteration.
Initialization is zero for every variable: the paper gives no values, and its
bound ``D_w = ||w*||`` on ``||w* - w^0||`` (Appendices C, E) holds only then. The
order within an iteration is the listings' ``w_i -> w -> gamma_i`` (Algorithms
1-3; the text of Sec. II-B names them in another order).

Privacy (Sec. IV). Neighbouring datasets: one record of one provider's
dataset replaced by another (``m`` unchanged), both with ``||a|| <= 1`` and
``b`` in {-1, +1}; the protected unit is the provider. Then
``||l'(a, b, w)|| <= ||a|| <= 1 = S1`` for the logistic loss. The solvers
enforce both assumptions at construction (labels are checked; rows are
checked, or clipped, to norm <= 1: privacy key ``row_bound``) and put into
every :class:`~vfl.core.solver.Release` only a sensitivity that follows from
what the code enforces:

- DP-ADMM: Lemma 1, ``2 S1 / (m (rho + 1/eta^{k+1}))`` (the closed form is
  exact, so the bound is exact too);
- Algorithm 2: the exact local argmin is ``mu``-strongly convex with
  ``mu = rho + (lambda/N) R''`` (``R'' = 1`` for l2, 0 for l1), so its
  sensitivity is ``2 S1 / (m mu)`` (the paper's ``2 S1 N / (m lambda)``,
  Sec. III-A and VI, ignores ``rho``), plus ``2 g / mu`` for the inexact solve
  stopped at KKT residual ``g`` (see :func:`algorithm2_enforced_sensitivity`).

Pure computation: no files, no printing, no global state; every random draw
comes from the given :class:`~vfl.core.solver.Streams`.
"""

from __future__ import annotations

import math
from time import perf_counter

import numpy as np

from vfl.core.params import Param
from vfl.core.solver import HorizontalData, Reference, Release, Setting, Solver, Streams
from vfl.core.wire import Inference, Wire

from .local_solvers import (_sigmoid, _softplus, fista, kkt_residual, lipschitz, newton,
                            smooth_grad)
from vfl.core.objective import Objective
from .pretrain import pretrain_dw
from .providers import LocalProviders, ProviderGroup, ProviderSpec, check_provider_rows

__all__ = [
    "S1", "S3", "S4",
    "theorem3_eta", "theorem4_eta", "theorem1_sigma", "lemma1_sensitivity",
    "gaussian_sigma", "algorithm2_paper_sensitivity", "algorithm2_argmin_sensitivity",
    "algorithm2_enforced_sensitivity", "algorithm2_sigma", "dp_admm_closed_form",
    "local_objectives", "empirical_loss", "augmented_objective",
    "split_providers", "enforce_row_bound",
    "ConsensusADMM", "ConsensusADMMPerturbed", "DPADMM", "HUANG_PAPER",
]

#: Bound on ``||l'||`` that the solvers enforce (||a|| <= 1, |b| = 1, logistic loss).
S1 = 1.0
#: Bound on ``||Hess l||`` given ``||a|| <= 1``: ``l'' <= 1/4`` (Theorem 4).
S3 = 0.25
#: Bound on ``||Hess R||`` for ``R = ||w||^2 / 2`` (Theorem 4).
S4 = 1.0

HUANG_PAPER = ("Huang, Hu, Chan-Tin, Gong: DP-ADMM: ADMM-based Distributed Learning with "
               "Differential Privacy (arXiv 1808.10101v1, 2018)")
REGULARIZERS = ("l1", "half_l2sq")
#: Slack allowed on a row norm before ``row_bound = "check"`` refuses the data.
ROW_TOLERANCE = 1e-9


# ------------------------------------------------------------------ schedules --
def _positive(name, value):
    v = np.asarray(value, dtype=float)
    if not np.all(np.isfinite(v)) or np.any(v <= 0):
        raise ValueError(f"{name} must be finite and > 0, got {value!r}")
    return v


def _log_term(delta: float) -> float:
    """``ln(1.25 / delta)``, the L of the classical Gaussian mechanism."""
    if not (0.0 < delta < 1.0):
        raise ValueError(f"delta must be in (0, 1), got {delta!r}")
    return math.log(1.25 / delta)


def _loop_index(k):
    k = np.asarray(k)
    if not np.issubdtype(k.dtype, np.integer) or np.any(k < 0):
        raise ValueError(f"k is the 0-based loop index (integer >= 0), got {k!r}")
    return k.astype(float)


def theorem3_eta(k, *, D_w: float, lam: float, N: int, d: int, S1: float = S1):
    """Step size of Theorem 3 (l1): ``eta^{k+1} = D_w / ((S1 + lam S2 / N) sqrt(2 (k+1)))``.

    ``k`` is the 0-based loop index (iteration k produces ``k+1``);
    ``S2 = sqrt(d)`` bounds ``||sgn(w)||`` (Sec. VI-A). Vectorized over ``k``.
    """
    kk = _loop_index(k)
    _positive("D_w", D_w)
    return D_w / ((S1 + lam * math.sqrt(d) / N) * np.sqrt(2.0 * (kk + 1.0)))


def theorem4_eta(k, *, D_w: float, lam: float, N: int, m: int, epsilon: float, delta: float,
                 S1: float = S1, S3: float = S3, S4: float = S4):
    """Step size of Theorem 4 (l2): ``(S3 + lam S4 / N + 2 S1 sqrt(4 (k+1) L) / (m eps D_w))^-1``.

    ``L = ln(1.25 / delta)``; depends on the privacy level (Sec. VI-B).
    """
    kk = _loop_index(k)
    _positive("D_w", D_w)
    _positive("epsilon", epsilon)
    L = _log_term(delta)
    privacy_term = 2.0 * S1 * np.sqrt(4.0 * (kk + 1.0) * L) / (m * epsilon * D_w)
    return 1.0 / (S3 + lam * S4 / N + privacy_term)


def lemma1_sensitivity(eta, *, m: int, rho: float, S1: float = S1):
    """Lemma 1, eq. (6): l2 sensitivity of (3a), ``2 S1 / (m (rho + 1/eta))``."""
    return 2.0 * S1 / (m * (rho + 1.0 / _positive("eta", eta)))


def gaussian_sigma(sensitivity, epsilon: float, delta: float):
    """Classical Gaussian mechanism: ``sigma = Delta sqrt(2 ln(1.25/delta)) / eps``."""
    _positive("epsilon", epsilon)
    return np.asarray(sensitivity, dtype=float) * math.sqrt(2.0 * _log_term(delta)) / epsilon


def theorem1_sigma(eta, *, m: int, rho: float, epsilon: float, delta: float, S1: float = S1):
    """Theorem 1: ``sigma_{k+1} = 2 S1 sqrt(2 ln(1.25/delta)) / (m eps (rho + 1/eta^{k+1}))``."""
    return gaussian_sigma(lemma1_sensitivity(eta, m=m, rho=rho, S1=S1), epsilon, delta)


def algorithm2_paper_sensitivity(*, N: int, m: int, lam: float, S1: float = S1) -> float:
    """The paper's Algorithm 2 sensitivity ``2 S1 N / (m lam)`` (Sec. III-A, VI)."""
    _positive("lam", lam)
    return 2.0 * S1 * N / (m * lam)


def algorithm2_argmin_sensitivity(*, m: int, mu: float, S1: float = S1) -> float:
    """Sensitivity of the exact local argmin, ``2 S1 / (m mu)``.

    The local objective ``f_i(w) - <gamma, w - w^k> + rho/2 ||w - w^k||^2`` is
    ``mu``-strongly convex with ``mu = rho + (lambda/N) R''``. Replacing one
    record changes it by ``(l_new - l_old) / m``, whose gradient has norm at
    most ``2 S1 / m``; strong monotonicity of the subdifferential of the
    common part then gives ``mu ||w - w'||^2 <= (2 S1 / m) ||w - w'||``
    (valid for the non-smooth l1 regularizer too). Huang et al. 2019, Sec.
    III-A, print ``2 S1 N / (m lambda)``, which ignores ``rho``.
    """
    return 2.0 * S1 / (m * float(_positive("mu", mu)))


def algorithm2_enforced_sensitivity(*, m: int, mu: float, tol: float, S1: float = S1) -> float:
    """The bound the code enforces for Algorithm 2: ``2 S1 / (m mu) + 2 g / mu``.

    The local solve stops at a point ``w_hat`` with a subgradient ``s`` of
    norm at most ``g = tol`` (:mod:`vfl.admm.local_solvers`). For the
    ``mu``-strongly convex local objective and its minimizer ``w*``,
    ``<s - 0, w_hat - w*> >= mu ||w_hat - w*||^2``, so by Cauchy-Schwarz
    ``||w_hat - w*|| <= g / mu``. For neighbours D, D' (each solved to the same
    tolerance, from any warm start) the triangle inequality gives
    ``||w_hat_D - w_hat_D'|| <= g/mu + 2 S1/(m mu) + g/mu``. The warm start
    (the provider's previous clean solution) is a deterministic function of
    the data and the released history, so each iteration is still a Gaussian
    mechanism of this sensitivity conditional on what was released before
    (adaptive composition).
    """
    return algorithm2_argmin_sensitivity(m=m, mu=mu, S1=S1) + 2.0 * float(tol) / float(mu)


def algorithm2_sigma(*, N: int, m: int, lam: float, epsilon: float, delta: float,
                     S1: float = S1) -> float:
    """The paper's Algorithm 2 noise ``2 S1 N sqrt(2 ln(1.25/delta)) / (m lam eps)``, as printed."""
    return float(gaussian_sigma(algorithm2_paper_sensitivity(N=N, m=m, lam=lam, S1=S1),
                                epsilon, delta))


# ------------------------------------------------------------- batched pieces --
def _margins(A, w):
    """``A_i w`` (common ``w`` of shape (d,)) or ``A_i w_i`` (``(N, d)``): ``(N, m)``."""
    if w.ndim == 1:
        return A @ w
    return np.matmul(A, w[:, :, None])[:, :, 0]


def _loss_grad(A, b, W):
    """``(1/m) sum_j l'(a_ij, b_ij, W_i)`` for every provider, ``(N, d)``."""
    q = _sigmoid(-b * _margins(A, W))
    return np.matmul((-b * q)[:, None, :], A)[:, 0, :] / A.shape[1]


def _reg_value(W, regularizer):
    if regularizer == "l1":
        return np.abs(W).sum(axis=-1)
    return 0.5 * np.einsum("...d,...d->...", W, W)


def _reg_subgrad(W, regularizer):
    """``R'(W)``: ``sgn(W)`` with sgn(0) = 0 (as MATLAB's; matters only at w = 0), or ``W``."""
    return np.sign(W) if regularizer == "l1" else W


def dp_admm_closed_form(A, b, W_tilde, w, gamma, *, eta, rho, lam_per_provider, regularizer):
    """Minimizer of the approximate augmented Lagrangian (2), eq. (3a), for every provider.

    ``w_i = (rho w + gamma_i + W_tilde_i / eta - f_i'(W_tilde_i)) / (rho + 1/eta)``,
    ``f_i'(v) = (1/m) sum_j l'(a_ij, b_ij, v) + (lambda/N) R'(v)``. ``eta`` is a
    scalar or one value per provider.
    """
    inv_eta = 1.0 / np.asarray(eta, dtype=float).reshape(-1, 1) if np.ndim(eta) else 1.0 / eta
    grad = _loss_grad(A, b, W_tilde) + lam_per_provider * _reg_subgrad(W_tilde, regularizer)
    return (rho * w[None, :] + gamma + W_tilde * inv_eta - grad) / (rho + inv_eta)


def local_objectives(A, b, W, *, lam_per_provider: float, regularizer: str) -> np.ndarray:
    """``f_i(W_i)`` per provider, ``(N,)`` (``W`` ``(N, d)``, or one ``w`` ``(d,)`` for all)."""
    loss = _softplus(-b * _margins(A, W)).mean(axis=1)
    return loss + lam_per_provider * _reg_value(W, regularizer)


def empirical_loss(A, b, w) -> float:
    """Metric 2 of Sec. VI: ``sum_i (1/m) sum_j l(a_ij, b_ij, w)`` (no regularizer).

    ``N ln 2`` at ``w = 0``.
    """
    return float(_softplus(-b * _margins(A, np.asarray(w, dtype=float))).mean(axis=1).sum())


def augmented_objective(A, b, W_bar, w_bar, *, lam_per_provider: float, regularizer: str) -> float:
    """Metric 1 of Sec. VI: ``sum_i f_i(W_bar_i) + ||W_bar_i - w_bar||`` (unsquared l2, beta = 1).

    ``W_bar``/``w_bar`` are the ergodic averages of the local and global
    iterates (Sec. V); the expectation is the mean over repeated runs.
    """
    f = local_objectives(A, b, W_bar, lam_per_provider=lam_per_provider, regularizer=regularizer)
    gap = np.sqrt(np.einsum("nd,nd->n", W_bar - w_bar, W_bar - w_bar))
    return float(f.sum() + gap.sum())


# ------------------------------------------------------------------ the data --
def split_providers(X, y, *, providers: int, samples_per_provider: int, public: int = 0,
                    test: int | None = None, rng: np.random.Generator):
    """Distribute rows over providers at random (Huang et al., Sec. VI, Table II).

    One permutation from ``rng``; its first ``public`` rows are the
    pre-training rows (``HorizontalData.public``, treated as public), the next
    ``providers * samples_per_provider`` form ``A`` ``(N, m, d)`` in
    contiguous blocks (provider i gets rows ``i m .. (i+1) m - 1`` of that
    stretch), and the next ``test`` rows (all the remaining ones when
    ``test`` is None) are the test rows. The paper: 162 / 100 x 210 / 9000 of
    Adult's 30162.

    Returns ``(HorizontalData, (X_test, y_test))``.
    """
    if hasattr(X, "toarray"):
        X = X.toarray()
    X = np.asarray(X, dtype=float)
    y = np.asarray(y, dtype=float)
    if X.ndim != 2 or y.shape != (X.shape[0],):
        raise ValueError(f"X must be (n, d) and y (n,); got {X.shape} and {y.shape}")
    for name, v, low in (("providers", providers, 1), ("public", public, 0),
                         ("samples_per_provider", samples_per_provider, 1)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < low:
            raise ValueError(f"{name} must be an integer >= {low}, got {v!r}")
    if test is not None and (isinstance(test, bool) or not isinstance(test, (int, np.integer))
                             or test < 0):
        raise ValueError(f"test must be an integer >= 0 or None, got {test!r}")
    if not isinstance(rng, np.random.Generator):
        raise ValueError("rng must be a numpy Generator")
    n, d = X.shape
    n_train = providers * samples_per_provider
    need = public + n_train + (test or 0)
    if need > n:
        raise ValueError(f"{public} public + {providers} x {samples_per_provider} provider"
                         f"{'' if test is None else f' + {test} test'} rows = {need} > {n} rows")
    perm = rng.permutation(n)
    pub, train = perm[:public], perm[public:public + n_train]
    rest = perm[public + n_train:]
    held = rest if test is None else rest[:test]
    data = HorizontalData(A=X[train].reshape(providers, samples_per_provider, d),
                          b=y[train].reshape(providers, samples_per_provider),
                          public=(X[pub], y[pub]) if public else None)
    return data, (X[held], y[held])


def enforce_row_bound(A: np.ndarray, mode: str) -> tuple[np.ndarray, int]:
    """Make every row of ``A`` (``(..., d)``) have l2 norm at most 1.

    ``mode="check"``: a row above ``1 + 1e-9`` is a ValueError; rows within
    that rounding slack are scaled onto the ball. ``mode="clip"``: every row
    above norm 1 is scaled onto the unit ball (``a / ||a||``, the Euclidean
    projection). Scaled rows are multiplied by ``(1 - 4 eps) / ||a||`` so
    that the bound holds in floating point too. Returns ``(A, rows scaled)``.
    """
    if mode not in ("check", "clip"):
        raise ValueError(f"row_bound must be 'check' or 'clip', got {mode!r}")
    norms = np.sqrt(np.einsum("...d,...d->...", A, A))
    worst = float(norms.max(initial=0.0))
    if mode == "check" and worst > 1.0 + ROW_TOLERANCE:
        raise ValueError(f"a provider row has l2 norm {worst:.6g} > 1; the sensitivity needs "
                         "||a|| <= 1: normalize the rows (adult: row_norm = 'unit' or 'max') "
                         "or clip them: preprocessing.row_clip = 1.0")
    over = norms > 1.0
    if over.any():
        A = A.copy()
        A[over] *= ((1.0 - 4.0 * np.finfo(float).eps) / norms[over])[:, None]
    return A, int(over.sum())


# --------------------------------------------------------------- the solvers --
_COMMON_PARAMS = (
    Param("rho", float, 1.0, "penalty rho of the augmented Lagrangian (paper: 1)",
          low=0, low_open=True),
    Param("average_start", int, 1, "first index s of the providers' ergodic averages in the "
          "augmented objective: 1 = (1/k) sum_{s=1..k} (Theorem 4; the index of w_bar), "
          "0 = (1/k) sum_{s=0..k-1} (Theorem 3)", low=0, high=1),
)
_EXACT_PARAMS = (
    Param("local_solver", str, "auto", "exact local argmin: newton (l2: Newton; l1: proximal "
          "Newton), fista (accelerated proximal gradient), auto = newton for l2, fista for l1",
          choices=("auto", "newton", "fista")),
    Param("inner_tol", float, 1e-9, "each local solve stops when its KKT residual (norm of the "
          "minimum-norm subgradient) is <= this", low=0, low_open=True),
    Param("max_inner", int, 500, "most iterations of one batched local solve", low=1),
)
_DELTA = Param("delta", float, 1e-3, "per-iteration delta of the Gaussian mechanism, also the "
               "total delta of the moments accountant (paper: 1e-3 ... 1e-6)",
               low=0, high=1, low_open=True, high_open=True)
_EPSILON = Param("epsilon", float, None, "end-to-end target epsilon of the whole run (with "
                 "privacy.delta): the per-iteration epsilon of Theorem 1 is solved for so that "
                 "the composed releases spend exactly this", low=0, low_open=True)
_EPSILON_PER_ITERATION = Param(
    "epsilon_per_iteration", float, None, "Huang et al. 2019's own parameter: the epsilon of "
    "Theorem 1 per iteration (the paper's figures: 0.01 ... 0.2; the classical Gaussian "
    "mechanism needs <= 1); give it or privacy.epsilon, not both", low=0, high=1, low_open=True)
_ROW_BOUND = Param("row_bound", str, "check", "how ||a|| <= 1 (S1 = 1) is enforced: check = "
                   "refuse rows above norm 1 (+1e-9 rounding); clip (the algorithm alone, refused "
                   "in a config, where rows are bounded for train and test alike by "
                   "preprocessing.row_clip = 1.0 or normalize_rows = true)",
                   choices=("check", "clip"))
_ACCOUNTANT = Param("accountant", str, "pld", "dp-accounting accountant composing the releases",
                    choices=("pld", "rdp"))
_NEIGHBOURS = ("one record (a, b) of one provider's dataset replaced by another, m unchanged; "
               "both records with ||a|| <= 1 and b in {-1, +1} (Huang et al., Sec. IV); the "
               "protected unit is the provider")


def per_iteration_epsilon(privacy: dict, T: int, ratio: float = 1.0) -> float:
    """Theorem 1's per-iteration epsilon: given (``epsilon_per_iteration``) or solved from the
    run's target ``epsilon`` over ``T`` iterations.

    With Theorem 1's sigma, ``sigma_k = Delta_cal,k sqrt(2 ln(1.25/delta)) / eps`` for the
    sensitivity ``Delta_cal`` it is calibrated to, each release's noise multiplier against
    the enforced sensitivity is ``sigma_k / Delta_k = sqrt(2 ln(1.25/delta)) / (eps ratio)``
    with ``ratio = Delta_k / Delta_cal,k`` (1 for Algorithm 3, whose schedule eta cancels
    out). The ``T`` releases compose exactly as one Gaussian, so the target fixes the
    common multiplier ``z`` (:func:`vfl.privacy.calibrate_sigma`, the run's accountant) and
    ``eps = sqrt(2 ln(1.25/delta)) / (z ratio)``. ``ValueError`` when that is above 1, where
    Theorem 1's Gaussian mechanism stops holding.
    """
    if privacy.get("epsilon_per_iteration") is not None:
        return float(privacy["epsilon_per_iteration"])
    if privacy.get("epsilon") is None or privacy.get("delta") is None:
        raise ValueError("set privacy.epsilon with privacy.delta (the whole run's target) or "
                         "privacy.epsilon_per_iteration (Theorem 1's)")
    from vfl.privacy import calibrate_sigma

    delta, target = float(privacy["delta"]), float(privacy["epsilon"])
    z = calibrate_sigma(target, delta, int(T), 1.0, accountant=privacy.get("accountant", "pld"))
    eps = math.sqrt(2.0 * _log_term(delta)) / (z * ratio)
    if eps > 1.0:
        raise ValueError(f"privacy.epsilon = {target:g} over {T} iterations needs a per-iteration "
                         f"epsilon of {eps:.4g} > 1, beyond Theorem 1's Gaussian mechanism: "
                         "lower privacy.epsilon or run more iterations")
    return eps


def _check_epsilon_keys(name: str, privacy: dict, needed: bool) -> None:
    if privacy.get("row_bound") == "clip":
        raise ValueError(f"{name}: privacy.row_bound = 'clip' would clip the providers' rows "
                         "only, and the test rows and the pooled optimum would be scored in "
                         "another space: set preprocessing.row_clip = 1.0 (every row, one stage)")
    both = privacy.get("epsilon") is not None and privacy.get("epsilon_per_iteration") is not None
    if both:
        raise ValueError(f"{name}: give privacy.epsilon (the run's total) or "
                         "privacy.epsilon_per_iteration (Theorem 1's), not both")
    if needed and privacy.get("epsilon") is None and privacy.get("epsilon_per_iteration") is None:
        raise ValueError(f"{name}: set privacy.epsilon (the whole run's target) or "
                         "privacy.epsilon_per_iteration (Huang et al.'s per-iteration parameter)")
    if needed and privacy.get("epsilon") is not None and privacy.get("delta") is None:
        raise ValueError(f"{name}: privacy.epsilon is a target (epsilon, delta): set privacy.delta")


class _Consensus(Solver):
    """State, trainer step, metrics and evaluation shared by Algorithms 1-3."""

    setting = Setting.HORIZONTAL
    regularizers = REGULARIZERS
    #: the classifier is the trainer's global w (Sec. VI): scoring a test row sends nothing
    inference = Inference(0, "the trainer holds the deployable model, its global w^k, and "
                             "scores test rows alone: no message")
    #: what the ergodic average of the providers' iterates averages
    _shared_name = "w_i"
    _private = False

    @classmethod
    def protected_replaced(cls, data, privacy: dict, rng: np.random.Generator):
        """Every provider record replaced by a random one inside the relation
        (``||a|| = 1``, ``b`` in {-1, +1}); the public pre-training rows kept."""
        A = rng.standard_normal(np.shape(data.A))
        A /= np.linalg.norm(A, axis=-1, keepdims=True)
        b = rng.choice([-1.0, 1.0], size=np.shape(data.b))
        return HorizontalData(A, b, data.public)

    @classmethod
    def neighbours(cls, data, privacy: dict, rng: np.random.Generator) -> list:
        """Neighbouring datasets under :data:`_NEIGHBOURS`, for the audit.

        Natural: a random record of a random provider replaced by another
        provider's record with the other label. Candidates (the audit keeps
        the one whose noiseless releases move most): the same record with its
        label flipped, its features negated, or both; each keeps ``||a|| <=
        1`` and ``b`` in {-1, +1}, so every pair is inside the relation. The
        public pre-training rows are the same in both datasets.
        """
        from vfl.core.solver import Neighbour

        A = np.asarray(data.A, dtype=float)
        b = np.asarray(data.b, dtype=float)
        N, m, _ = A.shape
        unit, j = int(rng.integers(N)), int(rng.integers(m))
        others = np.argwhere(b != b[unit, j])
        others = others[others[:, 0] != unit] if N > 1 else others
        donor, k = (int(v) for v in others[rng.integers(len(others))]) if len(others) \
            else ((unit + 1) % N, j)

        def with_record(a_new, b_new):
            A1, b1 = A.copy(), b.copy()
            A1[unit, j], b1[unit, j] = a_new, b_new
            return HorizontalData(A1, b1, data.public)

        a, y = A[unit, j], b[unit, j]
        pairs = [Neighbour(f"provider {unit + 1}, record {j} replaced (natural)", "natural", unit,
                           with_record(A[donor, k], b[donor, k]),
                           f"provider {unit + 1}'s record {j} replaced by provider {donor + 1}'s "
                           f"record {k} (the other label)")]
        for what, a_new, y_new in (("label flipped", a, -y), ("features negated", -a, y),
                                   ("features negated, label flipped", -a, -y)):
            pairs.append(Neighbour(f"provider {unit + 1}, record {j} {what} (candidate)",
                                   "candidate", unit, with_record(a_new, y_new),
                                   f"provider {unit + 1}'s record {j}: {what}"))
        # Canaries. A record enters through b a sigma(-b a.w); one pair flips the part
        # orthogonal to the model direction e (estimated by sum b a) while both records are
        # slightly misclassified (b a.e = -a0 < 0): the gradients differ by
        # 2 sqrt(1 - a0^2) sigma(a0 ||w||) >= 1 once ||w|| is large, against Lemma 1's 2
        # (a label flip gives exactly 1, since sigma(t) + sigma(-t) = 1).
        e = np.einsum("nm,nmd->d", b, A)
        e = e / np.linalg.norm(e) if np.any(e) else np.eye(A.shape[2])[0]
        w = rng.standard_normal(A.shape[2])
        w -= (w @ e) * e
        if np.linalg.norm(w) > 0:
            w /= np.linalg.norm(w)
            for a0 in (0.3, 0.6):
                c = math.sqrt(1.0 - a0 * a0)
                base = with_record(-a0 * e + c * w, 1.0)
                pairs.append(Neighbour(
                    f"provider {unit + 1}, canary record {j} (b a.e = -{a0}), its part orthogonal "
                    f"to e negated (candidate)", "candidate", unit,
                    with_record(-a0 * e - c * w, 1.0),
                    f"provider {unit + 1}'s record {j} set to -{a0} e + {c:.2f} w (e the "
                    "direction of sum b a, w orthogonal to it, label 1), its w part negated",
                    base))
        return pairs

    def __init__(self, data: HorizontalData, *, objective: Objective, params: dict,
                 privacy: dict, streams: Streams, iterations: int):
        if data.providers is None:  # the providers' rows are in this process
            A, b, _ = check_provider_rows(data.A, data.b, name=self.name, private=False,
                                          row_bound=None)
            N, m, d = A.shape
        else:  # on their own workers: what the trainer knows are the sizes
            N, m, d = data.providers.shape
        if objective.loss != "logistic":
            raise ValueError(f"{self.name} implements the logistic loss only, got "
                             f"objective.loss = {objective.loss!r}")
        if objective.regularizer not in REGULARIZERS:
            raise ValueError(f"{self.name} needs objective.regularizer 'l1' or 'half_l2sq' (Huang "
                             f"et al.'s R), got {objective.regularizer!r}")
        if objective.reduction != "unit_mean" or objective.unit_size != m:
            raise ValueError(f"{self.name} minimizes sum_i (1/m) sum_j l + lam R (eq. (1a)): needs "
                             f"objective.reduction = 'unit_mean' with unit_size = m = {m}, got "
                             f"{objective.reduction!r} with unit_size {objective.unit_size}")
        if isinstance(iterations, bool) or not isinstance(iterations, (int, np.integer)) \
                or iterations < 1:
            raise ValueError(f"iterations must be an integer >= 1, got {iterations!r}")
        self.rows_clipped = 0
        self.N, self.m, self.d = N, m, d
        self.objective = objective
        self.lam = float(objective.lam)
        self.lam_per_provider = self.lam / N
        self.regularizer = objective.regularizer
        self.params = dict(params)
        self.privacy = dict(privacy)
        self.streams = streams
        self.iterations = int(iterations)
        self.rho = float(params["rho"])
        self.average_start = int(params["average_start"])
        self.iteration = 0
        # Zero start: D_w = ||w*|| bounds ||w* - w^0|| only then (Appendices C, E).
        self.w = np.zeros(d)                # global w^k
        self.W_shared = np.zeros((N, d))    # what providers send (w_i^k or noisy w~_i^k)
        self.gamma = np.zeros((N, d))       # duals gamma_i^k
        self._sum_w = np.zeros(d)           # sum_{s=1..k} w^s
        self._sum_shared = np.zeros((N, d))  # sum_{s=1..k} shared_i^s
        self._diagnosed = (None, None)      # (w^k, the providers' diagnostics at w^k)
        self._releases = []
        self.wire = Wire(N)
        spec = ProviderSpec(rho=self.rho, lam_per_provider=self.lam_per_provider,
                            regularizer=self.regularizer, private=self._private,
                            row_bound=privacy.get("row_bound"), name=self.name)
        if data.providers is None:
            if self._private:
                A, self.rows_clipped = enforce_row_bound(A, privacy["row_bound"])
            group = ProviderGroup(np.ascontiguousarray(A), b, start=0, rho=spec.rho,
                                  lam_per_provider=spec.lam_per_provider,
                                  regularizer=spec.regularizer)
            # the noise stream is the subclass's (set after this constructor)
            self.providers = LocalProviders(
                group, lambda mean, **kw: self.release(mean, rng=self._rng, **kw))
        else:
            self.providers = data.providers(
                spec, lambda **kw: self.record_release(rng=self._rng, **kw))
            self.rows_clipped = self.providers.rows_clipped

    #: the noise stream of the releases (None: the solver releases nothing noisy)
    _rng = None

    @property
    def A(self) -> np.ndarray:
        """The providers' rows ``(N, m, d)``, when they are in this process."""
        return self.providers.A

    @property
    def b(self) -> np.ndarray:
        """The providers' labels ``(N, m)``, when they are in this process."""
        return self.providers.b

    # -- one iteration: the trainer's (3c) and the providers' (3d) ----------
    def _trainer_and_duals(self, shared: np.ndarray) -> None:
        """Line 6/7/8: ``w = mean(shared) - mean(gamma) / rho``; line 8/9/10: dual step.

        The round's messages: every provider sends its ``d`` values to the
        trainer, which sends ``w`` (``d`` values) back to each.
        """
        self.wire.gather(self.d)
        self.wire.scatter(self.d)
        w = shared.mean(axis=0) - self.gamma.mean(axis=0) / self.rho
        self.gamma = self.gamma - self.rho * (shared - w)
        self.w = w
        self.W_shared = shared
        self._sum_w += w
        self._sum_shared += shared
        self.iteration += 1

    # -- metrics ------------------------------------------------------------
    def ergodic_averages(self) -> tuple[np.ndarray, np.ndarray]:
        """``(W_bar, w_bar)`` after k >= 1 iterations (Sec. V).

        ``w_bar = (1/k) sum_{s=1..k} w^s``; ``W_bar_i`` averages the shared
        local iterates over ``s = 1..k`` (``average_start = 1``) or
        ``s = 0..k-1`` (Theorem 3's, with the zero start).
        """
        k = self.iteration
        if k == 0:
            raise ValueError("no ergodic average before the first iteration")
        total = self._sum_shared if self.average_start == 1 else self._sum_shared - self.W_shared
        return total / k, self._sum_w / k

    def _diagnose(self):
        """The providers' training margins, losses and local objectives at ``w^k`` (and the
        ergodic averages), asked once per iterate (metrics and runner share them).

        Keyed on the array object ``w`` itself (the trainer step assigns a new
        one; the cache's reference keeps the identity from being reused).
        """
        if self._diagnosed[0] is not self.w:
            W_bar = None if self.iteration == 0 else self.ergodic_averages()[0]
            self._diagnosed = (self.w, self.providers.diagnose(self.w, W_bar))
        return self._diagnosed[1]

    def _metrics(self) -> dict:
        # One pass over the rows at w^k gives both (1a) and metric 2.
        _, losses, f = self._diagnose()
        loss = float(losses.sum())
        out = {"objective": loss + self.lam * float(_reg_value(self.w, self.regularizer)),
               "empirical_loss": loss}
        if self.iteration == 0:
            out["augmented_objective"] = out["consensus_violation"] = float("nan")
        else:
            W_bar, w_bar = self.ergodic_averages()
            # augmented_objective's sum, with f_i(W_bar_i) from the providers
            gap = np.sqrt(np.einsum("nd,nd->n", W_bar - w_bar, W_bar - w_bar))
            out["augmented_objective"] = float(f.sum() + gap.sum())
            out["consensus_violation"] = float(np.linalg.norm(W_bar - w_bar, axis=1).sum())
        return out

    def evaluate(self) -> dict:
        """Sec. VI metrics of the current iterate, not charged to solver time.

        ``augmented_objective``: ``sum_i f_i(W_bar_i) + ||W_bar_i - w_bar||``
        (ergodic averages, unsquared consensus term, beta = 1; NaN at k = 0);
        ``empirical_loss``: ``sum_i (1/m) sum_j l`` at the current global
        ``w^k``; ``objective``: problem (1a) at ``w^k`` (the value the
        centralized optimum is compared with); ``consensus_violation``:
        ``sum_i ||W_bar_i - w_bar||``.
        """
        return self._metrics()

    def _train_margins(self) -> np.ndarray:
        """``A_i w^k`` ``(N, m)``, computed once per iterate (metrics and runner share it)."""
        return self._diagnose()[0]

    def train_margins(self) -> np.ndarray:
        """``a_ij^T w^k`` for every training row, in the order of ``b.reshape(-1)``."""
        return self._train_margins().reshape(-1)

    def decision_function(self, test) -> np.ndarray:
        """``X_test w^k`` for a plain ``(n, d)`` test matrix (dense or sparse; the global w)."""
        if getattr(test, "ndim", 2) != 2 or test.shape[1] != self.d:
            raise ValueError(f"test rows must be (n, {self.d}), got {getattr(test, 'shape', None)}")
        return np.asarray(test @ self.w).reshape(-1)

    def coef(self) -> np.ndarray:
        """The trained classifier, the trainer's global ``w^k`` (Sec. VI does not say which w)."""
        return self.w.copy()

    def _describe_common(self) -> dict:
        return {
            "problem": ("sum_i [(1/m) sum_j log(1 + exp(-b a^T w_i)) + (lam/N) R(w_i)] s.t. "
                        "w_i = w (eq. (1a)-(1b))"),
            "N": self.N, "m": self.m, "d": self.d, "lam": self.lam,
            "lam_per_provider": self.lam_per_provider, "regularizer": self.regularizer,
            "rho": self.rho, "init": "w^0 = w_i^0 = gamma_i^0 = 0 (not given in the paper)",
            "order": "w_i -> w -> gamma_i (Algorithm listings)",
            "ergodic_average": (f"W_bar_i over s = {self.average_start}.."
                                f"{'k' if self.average_start == 1 else 'k-1'} of "
                                f"{self._shared_name}; w_bar over s = 1..k"),
            "classifier": "global w^k (the trainer's model)",
        }


class _ExactLocal(_Consensus):
    """Algorithms 1 and 2: the exact local argmin of line 4, batched over providers."""

    params = _COMMON_PARAMS + _EXACT_PARAMS

    def __init__(self, data, *, objective, params, privacy, streams, iterations):
        super().__init__(data, objective=objective, params=params, privacy=privacy,
                         streams=streams, iterations=iterations)
        choice = params["local_solver"]
        if choice == "auto":
            choice = "fista" if self.regularizer == "l1" else "newton"
        self.local_solver = choice
        self.inner_tol = float(params["inner_tol"])
        self.max_inner = int(params["max_inner"])
        l1 = self.regularizer == "l1"
        self._alpha1 = self.lam_per_provider if l1 else 0.0
        self._alpha2 = 0.0 if l1 else self.lam_per_provider
        #: strong convexity of every local objective, rho + (lam/N) R''
        self.mu = self.rho + self._alpha2
        self._L = (lipschitz(self.A, alpha2=self._alpha2, rho=self.rho) if choice == "fista"
                   else None)
        self._centre = np.zeros((self.N, self.d))
        self.W = np.zeros((self.N, self.d))  # clean local w_i^k, the solves' warm start
        self._inner = (0, np.zeros(self.N, dtype=bool))

    def _local_solve(self) -> tuple[np.ndarray, dict]:
        """Line 4 for every provider: ``argmin f_i(w) - <gamma_i, w - w^k> + rho/2 ||w - w^k||^2``.

        Equal, up to a constant, to ``f_i(w) + rho/2 ||w - c_i||^2`` with
        ``c_i = w^k + gamma_i^k / rho``; warm-started from the provider's
        previous clean solution ``w_i^k`` (Sec. VI says only "searching by gradients").
        """
        self._centre = self.w[None, :] + self.gamma / self.rho
        kw = dict(alpha1=self._alpha1, alpha2=self._alpha2, rho=self.rho, w0=self.W,
                  tol=self.inner_tol, max_iter=self.max_inner)
        if self.local_solver == "newton":
            res = newton(self.A, self.b, self._centre, **kw)
        else:
            res = fista(self.A, self.b, self._centre, L=self._L, **kw)
        self.W = res.w
        self._inner = (res.iterations, res.converged)
        return res.w, {"inner_iterations": res.iterations,
                       "inner_unconverged": int((~res.converged).sum())}

    def kkt_residuals(self) -> np.ndarray:
        """Exact KKT residual of every provider's last local solve, ``(N,)``."""
        g = smooth_grad(self.A, self.b, self.W, self._centre, alpha2=self._alpha2, rho=self.rho)
        return kkt_residual(g, self.W, self._alpha1)

    def evaluate(self) -> dict:
        out = self._metrics()
        out["kkt_residual"] = float(self.kkt_residuals().max()) if self.iteration else float("nan")
        return out

    def _describe_exact(self) -> dict:
        how = {"newton": ("batched Newton, Armijo backtracking" if self._alpha1 == 0 else
                          "batched proximal Newton (coordinate-descent model solve), Armijo "
                          "backtracking"),
               "fista": "batched accelerated proximal gradient (constant strongly-convex momentum)"}
        return {"local_solve": {"method": how[self.local_solver],
                                "stop": f"KKT residual <= {self.inner_tol:g} for every provider",
                                "max_inner": self.max_inner,
                                "warm_start": "previous clean local solution",
                                "strong_convexity_mu": self.mu}}


class ConsensusADMM(_ExactLocal):
    """Algorithm 1 of Huang et al.: non-private consensus ADMM with exact local solves."""

    name = "consensus_admm"
    title = "ADMM (Algorithm 1, non-private)"
    reference = Reference(HUANG_PAPER, "Algorithm 1",
                          "(1a)-(1b); augmented Lagrangian of Sec. II-B")
    columns = ("augmented_objective", "empirical_loss", "consensus_violation", "kkt_residual",
               "inner_iterations", "inner_unconverged", "local_time_s", "trainer_time_s")

    def step(self) -> dict:
        self.begin_releases()
        t0 = perf_counter()
        W, stats = self._local_solve()
        t1 = perf_counter()
        self._trainer_and_duals(W)
        return {**stats, "local_time_s": t1 - t0, "trainer_time_s": perf_counter() - t1}

    def describe(self) -> dict:
        return {"algorithm": "Huang et al. Algorithm 1 (non-private consensus ADMM)",
                **self._describe_common(), **self._describe_exact()}


class ConsensusADMMPerturbed(_ExactLocal):
    """Algorithm 2 of Huang et al.: Algorithm 1 releasing ``w_i + N(0, sigma_i^2 I)``.

    ``privacy.sensitivity = "paper"`` (default) uses the paper's
    ``sigma = 2 S1 N sqrt(2 ln(1.25/delta)) / (m lam eps)`` as printed (Sec. VI;
    the setting of Figs. 4-6). ``"corrected"`` (NOT the paper's experiment)
    calibrates sigma to the bound the code enforces: the local argmin's
    ``2 S1 / (m (rho + (lam/N) R''))`` (Sec. III-A's bound ignores ``rho``)
    plus the inexact-solve slack ``2 g / mu``. Either way every Release
    carries that enforced bound, so with the paper's sigma the tight epsilon
    is far below the claimed one (the paper's sensitivity is ~590x too large
    at its settings).
    """

    name = "consensus_admm_perturbed"
    paper_claim = "Theorem 2, the moments accountant of Huang et al."
    #: the trainer's w is an average of the released (noisy) w_i
    released_columns = ("test_logloss", "test_accuracy", "sigma")
    title = "ADMM with primal perturbation (Algorithm 2)"
    reference = Reference(HUANG_PAPER, "Algorithm 2",
                          "Sec. III-A and VI (sigma_i; its sensitivity ignores rho)",
                          note="the paper runs it with the l2 regularizer only")
    privacy_params = (
        _EPSILON, _EPSILON_PER_ITERATION, _DELTA,
        Param("sensitivity", str, "paper", "which sensitivity calibrates sigma: paper = "
              "2 S1 N / (m lam) as printed; corrected = 2 S1 / (m (rho + (lam/N) R'')) + "
              "2 inner_tol / mu (strongly convex argmin, inexact solve; not the paper's)",
              choices=("paper", "corrected")),
        _ROW_BOUND, _ACCOUNTANT,
    )
    columns = ConsensusADMM.columns + ("sigma",)
    _shared_name = "noisy w~_i"
    _private = True

    @classmethod
    def check_config(cls, params, privacy, iterations):
        _check_epsilon_keys(cls.name, privacy, needed=True)

    def __init__(self, data, *, objective, params, privacy, streams, iterations):
        super().__init__(data, objective=objective, params=params, privacy=privacy,
                         streams=streams, iterations=iterations)
        self.delta = float(privacy["delta"])
        self.sensitivity_mode = privacy["sensitivity"]
        if self.sensitivity_mode == "paper" and self.lam <= 0:
            raise ValueError("the paper's Algorithm 2 sensitivity 2 S1 N / (m lam) needs lam > 0")
        #: the bound every release carries (what the code enforces)
        self.enforced_sensitivity = algorithm2_enforced_sensitivity(m=self.m, mu=self.mu,
                                                                    tol=self.inner_tol)
        self.paper_sensitivity = (algorithm2_paper_sensitivity(N=self.N, m=self.m, lam=self.lam)
                                  if self.lam > 0 else float("nan"))
        calibrated = (self.paper_sensitivity if self.sensitivity_mode == "paper"
                      else self.enforced_sensitivity)
        self.epsilon_target = privacy.get("epsilon")
        self.epsilon = per_iteration_epsilon(privacy, iterations,
                                             self.enforced_sensitivity / calibrated)
        self.sigma = float(gaussian_sigma(calibrated, self.epsilon, self.delta))
        self._rng = streams.noise()

    def step(self) -> dict:
        self.begin_releases()
        t0 = perf_counter()
        W, stats = self._local_solve()
        # A provider whose solve hit max_inner has no enforced bound: NaN.
        sens = np.where(self._inner[1], self.enforced_sensitivity, np.nan)
        shared = self.release(W, units=np.arange(self.N), scale=self.sigma, sensitivity=sens,
                              rng=self._rng)
        t1 = perf_counter()
        self._trainer_and_duals(shared)
        return {**stats, "sigma": self.sigma, "local_time_s": t1 - t0,
                "trainer_time_s": perf_counter() - t1}

    def evaluate(self) -> dict:
        out = super().evaluate()
        out["sigma"] = self.sigma
        return out

    def planned_releases(self):
        return [Release("gaussian", np.arange(self.N), np.full(self.N, self.enforced_sensitivity),
                        np.full(self.N, self.sigma), self.d)]

    def paper_epsilon(self):
        """Theorem 2's moments accountant (sigma / Delta_paper = sqrt(2 L) / eps, as in Alg. 3)."""
        if self.iteration == 0:
            return None
        from vfl.privacy import dp_admm_epsilon

        return dp_admm_epsilon(self.epsilon, self.delta, self.iteration), self.delta

    def privacy_info(self) -> dict:
        return {
            "neighbouring": _NEIGHBOURS,
            "mechanism": ("Gaussian: provider i releases w_i^{k+1} + N(0, sigma^2 I_d) every "
                          "iteration (Algorithm 2, line 5); gamma_i^k is post-processing"),
            "sigma": self.sigma,
            "sigma_calibrated_to": ("paper: 2 S1 N / (m lam) (Sec. III-A, VI)"
                                    if self.sensitivity_mode == "paper" else
                                    "corrected (not the paper's): 2 S1/(m mu) + 2 inner_tol/mu"),
            "sensitivity_enforced": {
                "formula": ("2 S1 / (m mu) + 2 g / mu, mu = rho + (lam/N) R'' (the local argmin is "
                            "mu-strongly convex, which Sec. III-A ignores; plus the inexact "
                            "solve: a KKT residual g on a mu-strongly convex objective is "
                            "within g / mu of its minimizer)"),
                "value": self.enforced_sensitivity, "mu": self.mu, "g": self.inner_tol,
                "NaN_when": "a provider's local solve hits max_inner before reaching inner_tol"},
            "sensitivity_paper": self.paper_sensitivity,
            "assumptions": _assumptions(self),
            "dp_guarantee": True,
            "paper_claim": ("(epsilon, delta) per iteration and (epsilon_bar, delta) after T by "
                            "Theorem 2's moments accountant (Sec. VI-B: the same as DP-ADMM's)"),
            "not_accounted": "pre-training rows (public); the paper runs Algorithm 2 for l2 only",
        }

    def describe(self) -> dict:
        return {"algorithm": "Huang et al. Algorithm 2 (primal perturbation of exact ADMM)",
                **self._describe_common(), **self._describe_exact(),
                "sigma": self.sigma, "sensitivity": self.sensitivity_mode,
                "epsilon_per_iteration": self.epsilon, "epsilon_target": self.epsilon_target,
                "rows_clipped": self.rows_clipped}


def _assumptions(solver) -> dict:
    how = ("checked at construction: rows above norm 1 + 1e-9 are refused, rows within that "
           "rounding slack scaled onto the unit ball" if solver.privacy["row_bound"] == "check"
           else f"clipped at construction: rows above norm 1 scaled onto the unit ball "
                f"({solver.rows_clipped} rows)")
    return {"||a|| <= 1": f"enforced ({how})",
            "|b| = 1": "enforced (labels checked to be -1 or +1)",
            "S1 = 1": "enforced: logistic loss only, so ||l'|| = |b| sigmoid(.) ||a|| <= 1"}


class DPADMM(_Consensus):
    """Algorithm 3 of Huang et al. (DP-ADMM): linearized local step (3a) with Gaussian noise (3b).

    Each iteration ``k`` (0-based): ``eta = eta^{k+1}`` of Theorem 3 (l1) or
    Theorem 4 (l2); every provider computes the closed form of (3a) at its own
    noisy ``w~_i^k`` and releases ``w~_i^{k+1} = w_i^{k+1} + N(0, sigma_{k+1}^2 I)``
    with Theorem 1's sigma (line 6, which prints ``w~ + xi``, read as (3b)); then (3c), (3d).

    ``D_w`` comes from ``params["D_w"]`` or, if unset, from pre-training on
    ``data.public`` (Sec. VI: 162 rows; here the centralized problem on those rows
    with weight ``lam / N``). ``privacy.noise = false`` runs the same iteration
    without noise (linearized ADMM with the same eta; not private).
    """

    name = "dp_admm"
    paper_claim = "Theorem 2, the moments accountant of Huang et al."
    #: the trainer's w is computed from the released (noisy) w_i alone; eta and sigma
    #: follow the public schedule
    released_columns = ("test_logloss", "test_accuracy", "eta", "sigma")
    title = "DP-ADMM (Algorithm 3)"
    reference = Reference(HUANG_PAPER, "Algorithm 3",
                          "(2), (3a)-(3d); Lemma 1; Theorems 1-4; Appendix A")
    params = _COMMON_PARAMS + (
        Param("D_w", float, None, "bound on ||w*|| in the step sizes; unset: pre-train on the "
              "public rows (Huang et al. 2019, Sec. VI)", low=0, low_open=True),
        Param("dw_weight", str, "lam_over_N", "regularization weight of the D_w pre-training: "
              "lam/N (the weight inside each f_i) or lam (gives a smaller D_w)",
              choices=("lam_over_N", "lam")),
    )
    privacy_params = (
        _EPSILON, _EPSILON_PER_ITERATION, _DELTA,
        Param("noise", bool, True, "false: the same iteration without noise (linearized ADMM; "
              "not private, nothing released)"),
        _ROW_BOUND, _ACCOUNTANT,
    )
    columns = ("augmented_objective", "empirical_loss", "consensus_violation", "eta", "sigma",
               "local_time_s", "trainer_time_s")
    #: the providers' side of an iteration is a :class:`~.providers.ProviderGroup`: on Dask,
    #: groups of providers on their own workers (:mod:`vfl.experiments.providers`); the
    #: release events are recorded by the trainer, so accounting runs there too
    backends = ("inprocess", "dask")
    accounted_backends = ("inprocess", "dask")
    _shared_name = "noisy w~_i"
    _private = True

    @classmethod
    def claims_guarantee(cls, privacy: dict) -> bool:
        return bool(privacy.get("noise", True)) and privacy.get("delta") is not None

    @classmethod
    def check_config(cls, params, privacy, iterations):
        _check_epsilon_keys(cls.name, privacy, needed=True)

    def __init__(self, data, *, objective, params, privacy, streams, iterations):
        super().__init__(data, objective=objective, params=params, privacy=privacy,
                         streams=streams, iterations=iterations)
        self.delta = float(privacy["delta"])
        self.noise = bool(privacy["noise"])
        self.epsilon_target = privacy.get("epsilon")
        # Lemma 1's sensitivity is also what Theorem 1 calibrates to: the ratio is 1
        self.epsilon = per_iteration_epsilon(privacy, iterations)
        if params.get("D_w") is not None:
            self.D_w, self.D_w_source = float(params["D_w"]), "params.D_w"
        else:
            if data.public is None or len(data.public[1]) == 0:
                raise ValueError("dp_admm needs D_w: set solver.D_w or give pre-training rows "
                                 "(HorizontalData.public, e.g. 162 rows as in the paper)")
            A0, b0 = (np.asarray(v, dtype=float) for v in data.public)
            weight = self.lam_per_provider if params["dw_weight"] == "lam_over_N" else self.lam
            self.D_w = pretrain_dw(A0, b0, weight, self.regularizer)
            self.D_w_source = (f"pre-trained on {len(b0)} public rows, weight "
                               f"{'lam/N' if params['dw_weight'] == 'lam_over_N' else 'lam'} "
                               f"= {weight:g}")
            if not self.D_w > 0:
                raise ValueError("pre-training gave w_hat = 0, so D_w = 0 and eta = 0; set "
                                 "solver.D_w or use a smaller lam")
        self._rng = streams.noise() if self.noise else None
        self.eta = float("nan")
        self.sigma = 0.0

    # -- schedules ------------------------------------------------------------
    def eta_schedule(self, k):
        """``eta^{k+1}`` for loop index ``k``: Theorem 3 (l1) or Theorem 4 (l2)."""
        if self.regularizer == "l1":
            return theorem3_eta(k, D_w=self.D_w, lam=self.lam, N=self.N, d=self.d)
        return theorem4_eta(k, D_w=self.D_w, lam=self.lam, N=self.N, m=self.m,
                            epsilon=self.epsilon, delta=self.delta)

    def sigma_schedule(self, k):
        """Theorem 1's ``sigma_{k+1}`` for loop index ``k`` (ignores ``noise``)."""
        return theorem1_sigma(self.eta_schedule(k), m=self.m, rho=self.rho, epsilon=self.epsilon,
                              delta=self.delta)

    def sensitivity_schedule(self, k):
        """Lemma 1's ``2 S1 / (m (rho + 1/eta^{k+1}))``, the enforced release sensitivity."""
        return lemma1_sensitivity(self.eta_schedule(k), m=self.m, rho=self.rho)

    # -- one iteration -------------------------------------------------------
    def step(self) -> dict:
        self.begin_releases()
        t0 = perf_counter()
        k = self.iteration
        eta = float(self.eta_schedule(k))
        # each provider: (3d) with the w^k it receives, the closed form (3a) at its own
        # w~_i^k, its release (3b) (wherever the providers run: :mod:`.providers`)
        if self.noise:
            sigma = float(theorem1_sigma(eta, m=self.m, rho=self.rho, epsilon=self.epsilon,
                                         delta=self.delta))
            sens = float(lemma1_sensitivity(eta, m=self.m, rho=self.rho))
            shared = self.providers.update(self.w, eta, (np.arange(self.N), sigma, sens))
        else:
            sigma, shared = 0.0, self.providers.update(self.w, eta, None)
        t1 = perf_counter()
        self._trainer_and_duals(shared)
        self.eta, self.sigma = eta, sigma
        return {"eta": eta, "sigma": sigma, "local_time_s": t1 - t0,
                "trainer_time_s": perf_counter() - t1}

    @property
    def W(self) -> np.ndarray:
        """The providers' clean ``w_i^k`` (a diagnostic: no provider sends it)."""
        return self.providers.models()

    def evaluate(self) -> dict:
        return {**self._metrics(), "eta": self.eta, "sigma": self.sigma}

    def planned_releases(self):
        if not self.noise:
            return []
        k = self.iteration
        return [Release("gaussian", np.arange(self.N),
                        np.full(self.N, float(self.sensitivity_schedule(k))),
                        np.full(self.N, float(self.sigma_schedule(k))), self.d)]

    def paper_epsilon(self):
        """Theorem 2 / Appendix A: ``(eps_bar, delta)`` after the iterations so far."""
        if not self.noise or self.iteration == 0:
            return None
        from vfl.privacy import dp_admm_epsilon

        return dp_admm_epsilon(self.epsilon, self.delta, self.iteration), self.delta

    def privacy_info(self) -> dict | None:
        if not self.noise:
            return {"dp_guarantee": False, "mechanism": None,
                    "note": "privacy.noise = false: linearized ADMM without noise (same eta); "
                            "every w_i^{k+1} is shared in the clear"}
        return {
            "neighbouring": _NEIGHBOURS,
            "mechanism": ("Gaussian: provider i releases w~_i^{k+1} = w_i^{k+1} + "
                          "N(0, sigma_{k+1}^2 I_d) (3b); w_i^{k+1} depends on the data only "
                          "through its own released w~_i^k, w^k, gamma_i^k and D_i (3a)"),
            "sensitivity_enforced": {"formula": "2 S1 / (m (rho + 1/eta^{k+1})) (Lemma 1, eq. (6))",
                                     "S1": S1},
            "sigma": "2 S1 sqrt(2 ln(1.25/delta)) / (m eps (rho + 1/eta^{k+1})) (Theorem 1)",
            "assumptions": _assumptions(self),
            "dp_guarantee": True,
            "paper_claim": ("(epsilon, delta) per iteration (Theorem 1) and (epsilon_bar, delta) "
                            "after T by Theorem 2's moments accountant"),
            "not_accounted": ("the pre-training rows that set D_w are treated as public "
                              "(Huang et al. 2019, Sec. VI, do not account for them)"),
        }

    def describe(self) -> dict:
        schedule = ("Theorem 3: eta^{k+1} = D_w / ((S1 + lam sqrt(d) / N) sqrt(2 (k+1)))"
                    if self.regularizer == "l1" else
                    "Theorem 4: eta^{k+1} = (S3 + lam S4 / N + 2 S1 sqrt(4 (k+1) ln(1.25/delta)) "
                    "/ (m eps D_w))^-1")
        return {"algorithm": "Huang et al. Algorithm 3 (DP-ADMM), closed form of (3a)",
                **self._describe_common(), "D_w": self.D_w, "D_w_source": self.D_w_source,
                "eta": schedule, "constants": {"S1": S1, "S2": math.sqrt(self.d), "S3": S3,
                                               "S4": S4},
                "noise": self.noise, "epsilon_per_iteration": self.epsilon,
                "epsilon_target": self.epsilon_target, "rows_clipped": self.rows_clipped}
