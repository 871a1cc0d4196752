"""The pieces of one epoch that a variant swaps: the sharing form, the order, the z-update.

- The *sharing form* says what a party pulls in its x-update and which public
  vectors ``P`` carry the epoch's state: Hu et al.'s Jacobi update (6) of
  Algorithm 1 (:class:`HuSharing`, ``P`` = the published shares) or the
  sharing ADMM of Boyd et al. (2011), section 7.3 (:class:`BoydSharing`,
  ``P`` = the blocks ``zeta_m`` of the second variable).
- The *order* says which shares a party reads: all of the previous epoch's
  (:class:`JacobiOrder`, Algorithm 1) or the freshest (:class:`GaussSeidelOrder`).
- The *z-update* solves (7): :class:`SafeguardedZUpdate` or :class:`NewtonZUpdate`.
- The *feasible set* ``X_m`` of (2): all of R^d (:class:`Unconstrained`, as
  in Algorithm 1) or the ball ``||x_m|| <= b1`` of Assumption 2.1, by
  projection (:class:`ProjectedBall`) or exactly (:class:`ExactBall`).

Each dictionary (:data:`SHARING`, :data:`ORDER`, :data:`Z_UPDATE`, :data:`BALL`) maps the
``[solver]`` flag to its class; the solver resolves the flags once, when it
is built. All of them read and write public values only (shares, ``z``,
``y``), so each epoch releases exactly what Algorithm 1 releases.
"""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np

__all__ = [
    "BALL",
    "BoydSharing",
    "ExactBall",
    "GaussSeidelOrder",
    "HuSharing",
    "JacobiOrder",
    "NewtonZUpdate",
    "ORDER",
    "ProjectedBall",
    "SHARING",
    "SafeguardedZUpdate",
    "Scratch",
    "SharingForm",
    "Unconstrained",
    "Z_UPDATE",
    "summed",
]


class Scratch:
    """The N-vectors an epoch computes into instead of allocating them, ``scratch(i)``.

    Above glibc's largest mmap threshold (32 MB: four million float64s) every
    fresh N-vector is a fresh mapping whose pages the kernel faults in and
    zeroes, and gives back when it is freed: at ten million rows an epoch of
    fresh temporaries spent as long in the kernel as in the arithmetic. The
    epoch's intermediate values (the pulls, the relaxed sum, the z-update's
    work, the dual step) live here instead; what the epoch keeps (shares,
    ``z``, ``y``, ``zeta``) stays new arrays, since others may hold the old
    ones. The slots' roles are fixed by :meth:`ADMMSharing._epoch`.
    """

    def __init__(self, n: int):
        self.n = n
        self.shape = (n,)
        self._buffers: list[np.ndarray] = []

    def fit(self, shape) -> None:
        """Buffers of ``shape`` from now on: ``(N,)``, or ``(R, N)`` when the epoch carries the
        audit's runs ahead of the samples (the old buffers are dropped)."""
        if tuple(shape) != self.shape:
            self.shape = tuple(shape)
            self._buffers = []

    def __call__(self, i: int) -> np.ndarray:
        while len(self._buffers) <= i:
            self._buffers.append(np.empty(self.shape))
        return self._buffers[i]


def summed(vectors, out=None) -> np.ndarray:
    """``np.sum(vectors, axis=0)`` to the bit (a sum over the first axis adds the rows in
    order), without stacking the vectors into one array first; into ``out`` if given."""
    if len(vectors) == 1:
        if out is None:
            return np.array(vectors[0], dtype=float)
        np.copyto(out, vectors[0])
        return out
    out = np.add(vectors[0], vectors[1], out=out)
    for v in vectors[2:]:
        np.add(out, v, out=out)
    return out


class SharingForm:
    """What party m pulls for (6) and which public vectors ``P`` the epoch carries.

    The public state of an epoch is ``(P, z, y)``; accelerations extrapolate
    it and the adaptive penalty reads its differences.
    """

    name: ClassVar[str]
    #: whether an adaptive rho is floored at Assumption 1.2(c)'s sqrt(2) L by default
    needs_rho_floor: ClassVar[bool] = False

    def __init__(self, n_parties: int):
        self.n_parties = n_parties
        self.scale = 1  # the x-update's penalty is scale * rho

    def public(self, solver) -> list:
        """``P``: the per-party public vectors the next epoch reads."""
        raise NotImplementedError

    def initial(self, n: int) -> list | None:
        """The form's own per-party state at ``x = y = z = 0`` (None: it keeps none)."""
        return None

    def coupled_sum(self, P, scratch=None) -> np.ndarray | None:
        """The sum of the shares a Jacobi sweep reads (None if the pull does not use it; into
        slot ``M`` of the epoch's :class:`Scratch` when given)."""
        return None

    def pulled(self, m: int, P, z, y, S, rho: float, out=None) -> np.ndarray:
        """The value party m's x-update reads: ``x_m = (2 lam I + scale rho D^T D)^-1 D^T r``
        (into ``out`` when given)."""
        raise NotImplementedError

    def after_dual(self, solver, published, P, S_hat, relax, scratch=None) -> None:
        """Bookkeeping after (8), from public values only (``scratch``: the epoch's
        :class:`Scratch`, slots 1-3 free)."""

    def z_of(self, P, z) -> np.ndarray:
        """``z`` of an extrapolated state."""
        return z

    def state_size(self, n: int) -> int:
        """Length of the packed public state (for Anderson acceleration)."""
        raise NotImplementedError

    def pack(self, state, out: np.ndarray, y_weight: float) -> None:
        """Write ``(P, z, y)`` into ``out`` (``y`` scaled by ``y_weight``)."""
        P, z, y = state
        n = len(y)
        for m, p in enumerate(P):
            np.copyto(out[m * n : (m + 1) * n], p)
        np.multiply(y, y_weight, out=out[-n:])

    def unpack(self, w: np.ndarray, n: int, y_weight: float):
        """The state held in ``w`` (``P`` are views: ``w`` must outlive the next epoch's reads)."""
        P = [w[m * n : (m + 1) * n] for m in range(self.n_parties)]
        return P, self.z_of(P, w[self.n_parties * n : (self.n_parties + 1) * n]), w[-n:] / y_weight

    def spectral_pairs(self, solver, P, z_in, y_in):
        """AADMM's pairs (Xu et al. 2017): x side ``(H, L)``, z side ``(G, y)``."""
        raise NotImplementedError

    def combined_residual(self, state, state_hat, rho: float) -> float:
        """Goldstein et al.'s ``c_k = ||y - y_hat||^2 / rho + rho ||B (v - v_hat)||^2``."""
        raise NotImplementedError


class HuSharing(SharingForm):
    """Hu et al.'s update (6): a Jacobi sweep over the parties, ``P`` = the shares.

    ``r = rho (z - sum_{k != m} s_k) - y``: the multi-block ADMM of
    Algorithm 1, which needs ``rho > sqrt(2) L`` (Assumption 1.2(c)).
    """

    name = "hu"
    needs_rho_floor = True

    def public(self, solver):
        return solver.shares

    def coupled_sum(self, P, scratch=None):
        return summed(P, None if scratch is None else scratch(len(P)))

    def pulled(self, m, P, z, y, S, rho, out=None):
        if out is None:
            return rho * (z - (S - P[m])) - y
        np.subtract(S, P[m], out=out)
        np.subtract(z, out, out=out)
        np.multiply(out, rho, out=out)
        return np.subtract(out, y, out=out)

    def state_size(self, n):
        return (self.n_parties + 2) * n

    def pack(self, state, out, y_weight):
        super().pack(state, out, y_weight)
        n, M = len(state[2]), self.n_parties
        np.copyto(out[M * n : (M + 1) * n], state[1])

    def spectral_pairs(self, solver, P, z_in, y_in):
        # x side (S, y_hat), y_hat = y + rho (S - z_in): -D_m^T y_hat = grad R_m, <dS, dy_hat> <= 0;
        # z side (z, y), y = grad l(z): <dz, dy> >= 0
        S = solver.share_sum
        return [S], [y_in + solver.rho * (S - z_in)], [solver.z], solver.y

    def combined_residual(self, state, state_hat, rho):
        (_, z, y), (_, zh, yh) = state, state_hat
        return float((y - yh) @ (y - yh)) / rho + rho * float((z - zh) @ (z - zh))


class BoydSharing(SharingForm):
    """Sharing ADMM of Boyd et al. (2011), section 7.3: ``P`` = the blocks ``zeta_m``.

    Hu's update plus the proximal term ``(M-1) rho/2 ||D_m (x - x_m^k)||^2``:
    the two-block ADMM of ``min sum_m R_m(x_m) + l(sum_m zeta_m)`` s.t.
    ``D_m x_m = zeta_m``, convergent for every ``rho > 0`` (Boyd et al.,
    section 3.2). Party m pulls ``r = M rho zeta_m - y``, with ``zeta_m``
    built from its published share, ``z`` and the relaxed sum only; without
    noise ``zeta_m = s_m + (z - S)/M``.
    """

    name = "boyd"

    def __init__(self, n_parties):
        super().__init__(n_parties)
        self.scale = n_parties  # rho + the proximal (M-1) rho

    def public(self, solver):
        return solver.zeta

    def initial(self, n):
        return [np.zeros(n) for _ in range(self.n_parties)]

    def pulled(self, m, P, z, y, S, rho, out=None):
        if out is None:
            return (rho * self.scale) * P[m] - y
        np.multiply(P[m], rho * self.scale, out=out)
        return np.subtract(out, y, out=out)

    def after_dual(self, solver, published, P, S_hat, relax, scratch=None):
        if scratch is None:
            corr = (solver.z - S_hat) / self.n_parties
            solver.zeta = [relax(s, p) + corr for s, p in zip(published, P)]
            return
        corr = np.subtract(solver.z, S_hat, out=scratch(1))
        corr /= self.n_parties
        solver.zeta = [np.add(relax(s, p, out=scratch(2), tmp=scratch(3)), corr) for s, p in zip(published, P)]

    def z_of(self, P, z):
        return summed(P)  # z = sum_m zeta_m

    def state_size(self, n):
        return (self.n_parties + 1) * n

    def spectral_pairs(self, solver, P, z_in, y_in):
        # per block m: (s_m, y + M rho (s_m - zeta_m)) and (zeta_m, y)
        xr = solver.x_rho
        H = list(solver.shares)
        L = [y_in + xr * (s - p) for s, p in zip(solver.shares, P)]
        return H, L, [zt.copy() for zt in solver.zeta], solver.y

    def combined_residual(self, state, state_hat, rho):
        (P, _, y), (Ph, _, yh) = state, state_hat
        c = float((y - yh) @ (y - yh)) / rho
        return c + (rho * self.scale) * sum(float((p - q) @ (p - q)) for p, q in zip(P, Ph))


class JacobiOrder:
    """Every party reads the previous epoch's shares: one parallel round (Algorithm 1)."""

    name = "jacobi"

    @staticmethod
    def advance(S, s, p):
        return S

    @staticmethod
    def round(parties, pull, S, P, rho, sigmas):
        """The epoch's x-updates: every pull from the same sum ``S``, all parties at once.

        ``pull(m, S=...)`` is the value the central node sends party m;
        returns each party's ``(share, projected)`` reply, in order.
        """
        return parties.update_all([pull(m, S=S) for m in range(parties.n_parties)], rho, sigmas)


class GaussSeidelOrder:
    """The parties update in turn, each reading the freshest published shares.

    The multi-block Gauss-Seidel ADMM analysed for this sharing problem by
    Hong, Luo and Razaviyayn (SIAM J. Optim. 2016), for ``rho`` large enough:
    the same messages, but M sequential rounds of latency per epoch.
    """

    name = "gauss_seidel"

    @staticmethod
    def advance(S, s, p):
        return S + (s - p)  # the next party sees this share already

    @classmethod
    def round(cls, parties, pull, S, P, rho, sigmas):
        """The epoch's x-updates in turn, each pull from the sum of the freshest shares."""
        replies = []
        for m in range(parties.n_parties):
            reply = parties.update(m, pull(m, S=S), rho, sigmas[m])
            S = cls.advance(S, reply[0], P[m])
            replies.append(reply)
        return replies


class SafeguardedZUpdate:
    """(7) by the vectorized safeguarded (bracketed) Newton method (:meth:`prox_linear`)."""

    name = "safeguarded"
    describe = "vectorized safeguarded Newton on (7)"

    def __init__(self, b: np.ndarray):
        self._b_max = math.sqrt(float(np.max(b * b, initial=0.0)))  # 1.0 exactly for +-1 labels

    def __call__(self, loss, S, y, b, rho, w, *, tol, z0, work=None):
        return loss.prox_linear(S, y, b, rho, w, tol=tol, z0=z0, b_max=self._b_max)


class NewtonZUpdate:
    """(7) by plain in-place Newton steps (:meth:`LogisticLoss.prox_newton`).

    Provably convergent when ``rho > w max b^2 / 4`` (else the safeguarded
    solver takes over); about 5x faster on a9a and equal to 1e-10.
    """

    name = "newton"
    describe = (
        "newton: in-place vectorized Newton on (7) (plain when rho > w max b^2/4, else "
        "bracket-projected with the safeguarded solver as fallback)"
    )

    def __init__(self, b: np.ndarray):
        self._b2_max = float(np.max(b * b, initial=0.0))

    def __call__(self, loss, S, y, b, rho, w, *, tol, z0, work=None):
        """``work``: a :class:`~vfl.core.losses.NewtonWork` for ``b`` (buffers kept between
        epochs; the same numbers)."""
        return loss.prox_newton(S, y, b, rho, w, tol=tol, z0=z0, b2_max=self._b2_max, work=work)


class Unconstrained:
    """``X_m = R^d``: the minimizer of (6) as it is (Algorithm 1)."""

    def solve(self, block, r, rho):
        """``(x, active)``: the x-update for the pulled value ``r`` and its penalty."""
        return block.solve(r, rho), False

    def project(self, x):
        """``(x, projected)``: ``x`` moved into ``X_m`` afterwards."""
        return x, False


class ProjectedBall(Unconstrained):
    """The unconstrained minimizer of (6), projected onto ``||x|| <= b1`` (Assumption 2.1)."""

    def __init__(self, radius: float):
        self.radius = radius

    def project(self, x):
        if x.ndim > 1:  # rows of x: the audit's runs, each projected
            norm = np.linalg.norm(x, axis=-1, keepdims=True)
            over = norm > self.radius
            return np.where(over, x * (self.radius / norm), x), bool(np.any(over))
        norm = float(np.linalg.norm(x))
        if norm > self.radius:  # Euclidean projection onto the ball X_m
            return x * (self.radius / norm), True
        return x, False


class ExactBall(ProjectedBall):
    """The exact minimizer of (6) over ``||x|| <= b1`` (a trust-region subproblem).

    The row-level sensitivity bound needs it (:meth:`BlockSolver.solve_ball`);
    ``active`` says whether the ball bound the solution.
    """

    def solve(self, block, r, rho):
        return block.solve_ball(r, self.radius, rho)

    def project(self, x):
        return x, False


SHARING: dict[str, type[SharingForm]] = {cls.name: cls for cls in (HuSharing, BoydSharing)}
ORDER = {cls.name: cls for cls in (JacobiOrder, GaussSeidelOrder)}
Z_UPDATE = {cls.name: cls for cls in (SafeguardedZUpdate, NewtonZUpdate)}
#: ``ball`` -> how ``X_m`` is enforced when a radius is given
BALL = {"project": ProjectedBall, "exact": ExactBall}
