"""Faster variants of the epoch map: over-relaxation, fast ADMM with restart, Anderson.

All three act on public values only (the published shares or ``zeta``,
``z``, ``y``), so every epoch still releases exactly what Algorithm 1 of Hu
et al. releases.

- :class:`Relaxation`: the central node uses ``S_hat = alpha S + (1 - alpha) z^k``
  in (7)-(8) (Eckstein and Bertsekas 1992; Boyd et al. 2011, section 3.4.3).
  Convergent for the two-block Boyd form (each party then relaxes its
  ``zeta_m`` the same way); a heuristic, with the same fixed points, in Hu's
  multi-block form. :func:`over_relaxation` gives :class:`NoRelaxation` for
  ``alpha = 1``, which replays Algorithm 1 bit for bit.
- :class:`NesterovRestart`: fast ADMM with restart (Goldstein, O'Donoghue,
  Setzer and Baraniuk, SIAM J. Imaging Sci. 2014, Algorithm 8).
- :class:`Anderson`: safeguarded type-II Anderson acceleration of the epoch
  as a fixed-point map of the public state (Zhang, O'Donoghue and Boyd, SIAM
  J. Optim. 2020; Tikhonov regularization as in Fu, Zhang and Boyd 2019).

An acceleration is called once per epoch, after (8), with the state the epoch
read; it returns the state the next epoch starts from (None: the epoch's
output) and what it reports for the metrics. :data:`ACCELERATION` maps the
``solver.acceleration`` flag to its class.
"""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np

__all__ = [
    "ACCELERATION",
    "Acceleration",
    "Anderson",
    "NesterovRestart",
    "NoAcceleration",
    "NoRelaxation",
    "Relaxation",
    "over_relaxation",
]

#: Goldstein et al.'s restart factor eta
_RESTART_ETA = 0.999
#: Anderson: Tikhonov weight (Fu et al.) and the safeguard's D, epsilon (Zhang et al.)
_AA_REG = 1e-8
_AA_D = 1e6
_AA_EPS = 1e-6


class NoRelaxation:
    """``alpha = 1``: the epoch's own values (Algorithm 1)."""

    alpha = 1.0

    def __call__(self, new, old, out=None, tmp=None):
        return new


class Relaxation:
    """``alpha new + (1 - alpha) old``, ``alpha`` in (0, 2) (Eckstein and Bertsekas 1992)."""

    def __init__(self, alpha: float):
        self.alpha = float(alpha)

    def __call__(self, new, old, out=None, tmp=None):
        """``alpha new + (1 - alpha) old``; into ``out`` (with ``tmp``, another buffer of the
        same length, for the second term) when given: the same numbers."""
        if out is None:
            return self.alpha * new + (1.0 - self.alpha) * old
        np.multiply(new, self.alpha, out=out)
        np.multiply(old, 1.0 - self.alpha, out=tmp)
        return np.add(out, tmp, out=out)


def over_relaxation(alpha: float) -> NoRelaxation | Relaxation:
    """The relaxation for ``alpha`` (``alpha = 1`` takes no arithmetic at all)."""
    return NoRelaxation() if alpha == 1.0 else Relaxation(alpha)


class Acceleration:
    """Extrapolation of the public state ``(P, z, y)`` between epochs (strategy interface)."""

    #: the ``solver.acceleration`` flag
    name: ClassVar[str]
    #: what it is, for manifests (None: nothing to say)
    note: ClassVar[str | None] = None

    @classmethod
    def from_options(cls, *, anderson_memory: int = 5) -> Acceleration:
        """The strategy for the solver's options (each takes the ones it uses)."""
        return cls()

    def step(self, solver, state_in) -> tuple[tuple | None, dict]:
        """``(next state or None, {metric: value})`` after an epoch that read ``state_in``.

        ``solver.sharing`` (the sharing form) knows how to measure and pack
        the state; ``solver.public_state()`` is the epoch's output.
        """
        raise NotImplementedError


class NoAcceleration(Acceleration):
    """Algorithm 1: the next epoch reads this epoch's output."""

    name = "none"

    def step(self, solver, state_in):
        return None, {}


class NesterovRestart(Acceleration):
    """Fast ADMM with restart (Goldstein et al. 2014, Algorithm 8).

    Nesterov momentum on the public state, restarted (back to the previous
    state, momentum reset) when the combined residual
    ``||y - y_hat||^2/rho + rho ||z - z_hat||^2`` fails to fall by the factor
    ``eta = 0.999``. Reports ``restarted``.
    """

    name = "nesterov_restart"
    note = "fast ADMM with restart (Goldstein et al. 2014, Alg. 8)"

    def __init__(self):
        self._momentum = None  # (a_k, c_k, previous state)

    def step(self, solver, state_in):
        state = solver.public_state()
        form = solver.sharing
        c = form.combined_residual(state, state_in, solver.rho)
        if self._momentum is None:
            self._momentum = (1.0, c, state)
            return None, {"restarted": False}
        a, c_prev, prev = self._momentum
        if c < _RESTART_ETA * c_prev:
            a_next = (1.0 + math.sqrt(1.0 + 4.0 * a * a)) / 2.0
            theta = (a - 1.0) / a_next
            P, z, y = state
            Pp, zp, yp = prev
            P_next = [p + theta * (p - q) for p, q in zip(P, Pp)]
            nxt = (P_next, form.z_of(P_next, z + theta * (z - zp)), y + theta * (y - yp))
            self._momentum = (a_next, c, state)
            return nxt, {"restarted": False}
        # restart: back to the previous state, momentum reset
        self._momentum = (1.0, c_prev / _RESTART_ETA, prev)
        return prev, {"restarted": True}


class Anderson(Acceleration):
    """Type-II Anderson with Tikhonov regularization and Zhang et al.'s safeguard.

    ``f = T(p)`` is the epoch's output from the point ``p`` it read,
    ``g = f - p``. The least-squares norm is ADMM's: ``rho_x ||dP||^2 (+ rho
    ||dz||^2) + ||dy||^2 / rho``; up to a common factor that is ``P`` and
    ``z`` as they are and ``y / (rho sqrt(scale))``. The Gram matrix of the
    last ``memory`` differences gets the Tikhonov weight ``1e-8`` times its
    trace (Fu et al.); an extrapolated point is kept only if its residual is
    below ``1e6 ||g_0|| (n + 1)^-(1 + 1e-6)`` (Zhang et al.), else the plain
    step is taken and the memory cleared. Reports ``anderson_accepted``:
    whether the point just evaluated (if extrapolated) was accepted.
    Buffers are allocated once: per epoch the bookkeeping is two ``memory x
    state`` products and a few passes over the state.
    """

    name = "anderson"

    def __init__(self, memory: int = 5):
        self.memory = int(memory)
        self._A = None

    @classmethod
    def from_options(cls, *, anderson_memory=5):
        return cls(anderson_memory)

    @property
    def note(self):
        return (
            f"type-II Anderson, memory {self.memory}, safeguarded (Zhang, O'Donoghue, Boyd 2020; Fu, Zhang, Boyd 2019)"
        )

    @staticmethod
    def _y_weight(solver) -> float:
        return 1.0 / (solver.rho * math.sqrt(solver.sharing.scale))

    def step(self, solver, state_in):
        accepted, nxt = self._step(solver, state_in)
        return nxt, {"anderson_accepted": accepted}

    def _step(self, solver, state_in):
        form, n, w = solver.sharing, len(solver.y), self._y_weight(solver)
        A = self._A
        mem = self.memory
        if A is None:
            size = form.state_size(n)
            A = self._A = {
                "g0": None,
                "n_aa": 0,
                "k": 0,
                "cols": 0,
                "cur": 0,
                "has_prev": False,
                "candidate": False,
                "f": np.zeros((2, size)),
                "g": np.zeros((2, size)),
                "p": np.zeros(size),
                "dG": np.zeros((mem, size)),
                "dF": np.zeros((mem, size)),
                "gram": np.zeros((mem, mem)),
                "rhs": np.zeros(mem),
            }
            form.pack(state_in, A["p"], w)
        cur, prev = A["cur"], 1 - A["cur"]
        f, g = A["f"][cur], A["g"][cur]
        form.pack(solver.public_state(), f, w)
        np.subtract(f, A["p"], out=g)
        gn = float(np.linalg.norm(g))
        if A["g0"] is None:
            A["g0"] = gn
        if A["candidate"]:
            if gn <= _AA_D * A["g0"] * (A["n_aa"] + 1) ** -(1.0 + _AA_EPS):
                A["n_aa"] += 1
            else:  # reject: the plain step from the last accepted point, memory cleared
                np.copyto(A["p"], A["f"][prev])
                A["cols"] = A["k"] = 0
                A["candidate"] = A["has_prev"] = False
                return False, form.unpack(A["p"], n, w)
        if A["has_prev"]:  # a new column of differences, in a ring of `mem`
            j = A["k"] % mem
            dg = A["dG"][j]
            np.subtract(g, A["g"][prev], out=dg)
            np.subtract(f, A["f"][prev], out=A["dF"][j])
            A["k"] += 1
            c = A["cols"] = min(A["cols"] + 1, mem)
            # first memory x state product: the Gram column of dg; the right side
            # <dg_i, g> follows from <dg_i, g_prev> + <dg_i, dg>
            col = A["dG"][:c] @ dg
            A["gram"][j, :c] = col
            A["gram"][:c, j] = col
            A["rhs"][:c] += col
            A["rhs"][j] = float(dg @ g)
        A["has_prev"] = True
        A["cur"] = prev  # this epoch's f, g become the previous ones
        c = A["cols"]
        if c == 0:
            np.copyto(A["p"], f)  # the plain step: T(p) is the next point
            A["candidate"] = False
            return True, None
        G = A["gram"][:c, :c]
        reg = _AA_REG * np.trace(G)  # Tikhonov, scaled like the Gram matrix
        try:
            gamma = np.linalg.solve(G + reg * np.eye(c), A["rhs"][:c])
        except np.linalg.LinAlgError:
            gamma = np.linalg.lstsq(G, A["rhs"][:c], rcond=None)[0]
        # second memory x state product: p = f - dF^T gamma
        np.dot(gamma, A["dF"][:c], out=A["p"])
        np.subtract(f, A["p"], out=A["p"])
        A["candidate"] = True
        return True, form.unpack(A["p"], n, w)


ACCELERATION: dict[str, type[Acceleration]] = {cls.name: cls for cls in (NoAcceleration, NesterovRestart, Anderson)}
