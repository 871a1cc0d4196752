"""The iteration of ADMM sharing (Hu et al. 2019, Algorithm 1, updates (6)-(8)).

:class:`ADMMSharing` resolves every option once, in its constructor, into a
strategy object (the sharing form, the order, the relaxation, the penalty
schedule, the acceleration, the z-update, the feasible set and the noise
form); :meth:`ADMMSharing.step` calls their methods and holds no branch on
an option's name.
"""

from __future__ import annotations

import contextlib
from functools import partial
from time import perf_counter

import numpy as np
from threadpoolctl import ThreadpoolController

from vfl.core.host import LocalEnv
from vfl.core.inprocess import InProcessUnits
from vfl.core.losses import NewtonWork
from vfl.core.metrics import EpochStats
from vfl.core.objective import Objective
from vfl.core.solver import Solver

from .acceleration import ACCELERATION, over_relaxation
from .forms import BALL, ORDER, SHARING, Z_UPDATE, Scratch, summed
from .noise import NOISE, NOISE_FORMS
from .party import SHARING_PROTOCOL, Parties, PartySpec
from .penalty import RHO_SCHEDULE
from .variant import ACCELERATIONS, FORMS, ORDERS, RHO_SCHEDULES, Z_UPDATES, check_variant

__all__ = ["ACCELERATIONS", "ADMMSharing", "FORMS", "ORDERS", "RHO_SCHEDULES", "Z_UPDATES", "check_variant"]


class ADMMSharing(Solver):
    """Parallel ADMM sharing (Algorithm 1) with exact x- and z-updates, and its variants.

    Parameters
    ----------
    blocks : list of (N, d_m) arrays or sparse matrices, or None
        The parties' feature blocks ``D_1, ..., D_M`` (same rows), held in
        this process; None with ``parties``.
    b : (N,) array of labels (+-1 for the logistic loss).
    objective : Objective
        Loss, reduction and ``lam`` of problem (1).
    rho : float, > 0
        Penalty of the augmented Lagrangian (5) (the initial one when adaptive).
    z_tol : float
        Tolerance of the vectorized Newton solve of (7).
    sigma : float or sequence of M floats, >= 0
        Noise scale of the private variant (Hu et al. 2019, updates (10));
        0 (the default) is Algorithm 1 exactly. May be changed between
        epochs (time-varying noise) through the ``sigma`` attribute.
    noise_form : {"variable", "variable_whitened", "output"}
        How each party perturbs its share before pushing it:

        - ``"variable"``: ``x~ = x + xi``, ``xi ~ N(0, sigma^2 I)``; the share
          is ``D_m x~`` (NeurIPS version of Hu et al., eq. (7); the authors' prototype);
        - ``"variable_whitened"``: ``xi ~ N(0, sigma^2 (D_m^T D_m)^{-1})`` so
          ``D_m xi ~ N(0, sigma^2 P_m)`` (Hu et al. 2019, eq. (10));
        - ``"output"``: ``D_m x + N(0, sigma^2 I_N)``.
    noise_rngs : list of M numpy Generators
        Party m's noise stream; required when any sigma is positive.
    x_radius : float, optional
        ``b1`` of Assumption 2.1 of Hu et al.: the local model is kept in the
        l2 ball of this radius (the feasible set ``X_m`` of (2)). Off by
        default; how many parties hit the ball is recorded per epoch.
    ball : {"project", "exact"}
        How: project the unconstrained minimizer of (6) onto the ball, or
        solve (6) exactly over the ball (:meth:`BlockSolver.solve_ball`),
        which the row-level sensitivity bound needs.
    share_clip : float, optional
        ``c``: each released share is clipped entrywise to ``[-c, c]`` before
        the noise (the sound sensitivities of :mod:`vfl.privacy.sharing`).
    input_clip : float, optional
        ``R``: the value a party pulls (``rho v - y``; ``M rho zeta_m - y`` in
        the Boyd form) is clipped entrywise to ``[-R, R]`` before its x-update
        (post-processing of public values).
    release_sensitivity : sequence of M floats, optional
        The enforced l2 sensitivity of each party's release, recorded in its
        :class:`~vfl.core.releases.Release` events (NaN: none enforced).
    form, order, relaxation, rho_schedule, rho_min, rho_max, rho_every, rho_change, \
acceleration, anderson_memory, z_update, blas_threads
        The variants of :mod:`vfl.admm.sharing`; defaults: Algorithm 1
        (``"hu"``, ``"jacobi"``, 1.0, ``"fixed"``, -, -, 2, 10.0, ``"none"``,
        5, ``"safeguarded"``, BLAS untouched). See :func:`check_variant`.
    parties : :class:`~vfl.core.units.Units`, optional
        Where the parties run when not in this process (another backend:
        their blocks are not here); the iteration opens its protocol
        (:data:`~.party.SHARING_PROTOCOL`) there. Default: the blocks, here,
        their sides built under ``blas_threads`` like the epochs (a worker
        process pins its whole life to it, so both factor the blocks alike).

    Attributes
    ----------
    x : list of (d_m,) arrays, the local models ``x_m^t`` (held by the parties).
    parties : :class:`~.party.Parties`, where party m's side of an epoch runs.
    shares : list of (N,) arrays, the shared values ``s_m^t = D_m x_m^t``
        (perturbed in the private variant: what the other parties receive).
    z, y : (N,) arrays, the auxiliary and dual variables.
    rho : float, the current penalty.
    zeta : list of (N,) arrays (Boyd form), party m's block of the second variable.
    epoch : int, number of completed epochs ``t``.
    sharing, sweep, relax, penalty, accelerator, z_solver, feasible, noise
        The options resolved into their strategies: the sharing form and the
        order (:mod:`.forms`), the relaxation and the acceleration
        (:mod:`.acceleration`), the penalty schedule (:mod:`.penalty`), the
        solver of (7) and the feasible set (:mod:`.forms`), the noise form
        (:mod:`.noise`).

    Initial ``x``, ``y`` and ``z`` are zero, as in the paper's experiments.
    """

    def __init__(
        self,
        blocks,
        b,
        objective: Objective,
        rho: float = 1.0,
        *,
        z_tol=1e-10,
        sigma=0.0,
        noise_form: str = "variable",
        noise_rngs=None,
        x_radius=None,
        ball: str = "project",
        share_clip=None,
        input_clip=None,
        release_sensitivity=None,
        form: str = "hu",
        order: str = "jacobi",
        relaxation: float = 1.0,
        rho_schedule: str = "fixed",
        rho_min=None,
        rho_max=None,
        rho_every: int = 2,
        rho_change: float = 10.0,
        acceleration: str = "none",
        anderson_memory: int = 5,
        z_update: str = "safeguarded",
        blas_threads=None,
        parties=None,
    ):
        if parties is None and not blocks:
            raise ValueError("at least one feature block is required")
        n = len(b)
        for m, D in enumerate(blocks if parties is None else (), start=1):
            if D.ndim != 2 or D.shape[0] != n:
                raise ValueError(f"party {m}: block of shape {D.shape} does not have {n} rows")
            if D.shape[1] == 0:
                raise ValueError(f"party {m}: block has no columns")
        if not (np.isfinite(rho) and rho > 0):
            raise ValueError(f"rho must be a finite number > 0, got {rho!r}")
        if noise_form not in NOISE_FORMS:
            raise ValueError(f"noise_form must be one of {NOISE_FORMS}, got {noise_form!r}")
        check_variant(
            form=form,
            order=order,
            relaxation=relaxation,
            rho_schedule=rho_schedule,
            rho_min=rho_min,
            rho_max=rho_max,
            rho_every=rho_every,
            rho_change=rho_change,
            acceleration=acceleration,
            anderson_memory=anderson_memory,
            z_update=z_update,
            blas_threads=blas_threads,
            rho=rho,
        )
        if x_radius is not None and not (np.isfinite(x_radius) and x_radius > 0):
            raise ValueError(f"x_radius must be a finite number > 0, got {x_radius!r}")
        if ball not in BALL:
            raise ValueError(f"ball must be 'project' or 'exact', got {ball!r}")
        for name, value in (("share_clip", share_clip), ("input_clip", input_clip)):
            if value is not None and not (np.isfinite(value) and value > 0):
                raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
        self.objective = objective
        self.b = np.asarray(b, dtype=float)
        self.rho = float(rho)
        self.z_tol = float(z_tol)
        self._w = objective.weight(n)
        self._loss = objective.loss_fn
        # the options as given (for manifests), then each resolved once into its strategy
        self.form, self.order, self.relaxation = form, order, float(relaxation)
        self.rho_schedule, self.acceleration, self.z_update_method = (rho_schedule, acceleration, z_update)
        self.noise_form, self.ball = noise_form, ball
        self.x_radius, self.share_clip, self.input_clip = x_radius, share_clip, input_clip
        M = len(blocks) if parties is None else parties.n_parties
        self.sharing = SHARING[form](M)
        self.sweep = ORDER[order]()
        self.relax = over_relaxation(relaxation)
        if rho_schedule == "spectral" and rho_min is None and self.sharing.needs_rho_floor:
            rho_min = min(self.rho, objective.min_rho(n))  # Assumption 1.2(c)'s sqrt(2) L
        self.rho_min, self.rho_max = rho_min, rho_max
        self.rho_every, self.rho_change = int(rho_every), float(rho_change)
        self.penalty = RHO_SCHEDULE[rho_schedule](rho_min, rho_max, rho_every, rho_change)
        self.anderson_memory = int(anderson_memory)
        self.accelerator = ACCELERATION[acceleration].from_options(anderson_memory=anderson_memory)
        self.z_solver = Z_UPDATE[z_update](self.b)
        # the epoch's intermediate N-vectors (slot roles: see _epoch)
        self._scratch = Scratch(n)
        self._z_work = NewtonWork(self.b, lambda i: self._scratch(2 + i))
        self.noise_rngs = noise_rngs
        self.blas_threads = blas_threads
        self.release_sensitivity = (
            np.full(M, np.nan) if release_sensitivity is None else np.asarray(release_sensitivity, dtype=float)
        )
        self._controller = None
        if blas_threads is not None:
            self._controller = ThreadpoolController()
        spec = PartySpec(
            lam=float(objective.lam),
            rho=float(self.x_rho),
            factor=not self.penalty.adaptive,
            x_radius=None if x_radius is None else float(x_radius),
            ball=ball,
            noise_form=noise_form,
            share_clip=None if share_clip is None else float(share_clip),
            blas_threads=None if blas_threads is None else int(blas_threads),
        )
        if parties is None:
            # (a missing stream is refused by the sigma setter, when a sigma needs it)
            streams = list(noise_rngs or ())[:M] + [None] * M
            parties = InProcessUnits.blocks(
                blocks, LocalEnv(release=self.release, noise=lambda m: streams[m], runs=self.audit_runs)
            )
        with self._blas():
            session = parties.open(SHARING_PROTOCOL, spec)
        self.parties = Parties(session, n, self.release_sensitivity)
        self.shares = [np.zeros(n) for _ in range(M)]
        self.share_sum = np.zeros(n)
        self._margins = None  # sum_m D_m x_m, computed when a diagnostic asks
        self.z = np.zeros(n)
        self.y = np.zeros(n)
        self.zeta = self.sharing.initial(n)
        self.epoch = 0
        self.sigma = sigma  # validated (needs the parties) by the property setter
        self._next = None  # the public state the next epoch starts from, if not the last

    @property
    def n_parties(self) -> int:
        return self.parties.n_parties

    @property
    def x(self) -> list[np.ndarray]:
        """The parties' local models ``x_m`` (a diagnostic: no party sends its model)."""
        return self.parties.models()

    @property
    def solvers(self):
        """The parties' :class:`~.block.BlockSolver` objects, when they are in this process."""
        return self.parties.blocks

    @property
    def sigma(self) -> np.ndarray:
        """Per-party noise scales (M,)."""
        return self._sigma

    @sigma.setter
    def sigma(self, value):
        n_parties = self.n_parties if hasattr(self, "parties") else None
        sig = np.array(value, dtype=float).reshape(-1)
        if sig.size == 1 and n_parties:
            sig = np.full(n_parties, sig[0])
        if n_parties and sig.size != n_parties:
            raise ValueError(f"sigma needs one value per party ({n_parties}), got {sig.size}")
        if not np.all(np.isfinite(sig)) or np.any(sig < 0):
            raise ValueError(f"sigma must be finite and >= 0, got {value!r}")
        if np.any(sig > 0):
            rngs = self.noise_rngs
            if rngs is None or n_parties is None or len(rngs) != sig.size:
                raise ValueError("a positive sigma needs noise_rngs: one numpy Generator per party")
        self._sigma = sig

    def _smallest_rho(self) -> float:
        """The smallest penalty this run can use (its floor when adaptive)."""
        return self.penalty.floor(self.rho)

    def variant(self) -> dict:
        """The options that differ from Algorithm 1, with what each one is (for manifests)."""
        out = {}
        if self.form == "boyd":
            out["form"] = (
                "boyd: sharing ADMM of Boyd et al. 2011 sec. 7.3 (x-update penalty "
                f"M rho = {self.x_rho:g}; convergent for any rho > 0)"
            )
        if self.order == "gauss_seidel":
            out["order"] = "gauss_seidel: parties in turn (M rounds of latency per epoch)"
        if self.relaxation != 1.0:
            out["relaxation"] = f"alpha = {self.relaxation:g} (Eckstein-Bertsekas)"
        if self.penalty.adaptive:
            out["rho_schedule"] = (
                f"spectral (Xu et al. 2017): every {self.rho_every} epochs, "
                f"change factor <= {self.rho_change:g}, rho in "
                f"[{self.rho_min if self.rho_min is not None else 0:g}, "
                f"{self.rho_max if self.rho_max is not None else np.inf:g}]"
            )
        if self.accelerator.note is not None:
            out["acceleration"] = self.accelerator.note
        return out

    @property
    def x_rho(self) -> float:
        """The penalty of the x-update: ``rho`` (Hu form) or ``M rho`` (Boyd form)."""
        return self.rho * self.sharing.scale

    # -- one epoch ---------------------------------------------------------
    def public_state(self):
        """The public state ``(P, z, y)`` after the last epoch (``P``: shares, or zeta if Boyd)."""
        return self.sharing.public(self), self.z, self.y

    def _state_in(self):
        """The public state the next epoch reads: the last one, or an accelerated point."""
        return self.public_state() if self._next is None else self._next

    def x_update(self, m: int) -> np.ndarray:
        """Minimizer of (6) for party ``m`` (0-based) given the current state.

        Unconstrained unless ``ball = "exact"``, then over the ball of radius
        ``x_radius`` (``ball = "project"`` projects afterwards, in :meth:`step`).
        """
        P, z, y = self._state_in()
        r = self._pull(m, P, z, y, self.sharing.coupled_sum(P))
        party = self.parties.parties[m]  # (parties in this process)
        return party.feasible.solve(party.block, r, self.x_rho)[0]

    def _pull(self, m, P, z, y, S, scratch=None) -> np.ndarray:
        """The value party m pulls for (6), computed by the central node from public values
        (into ``scratch(m)`` when given)."""
        r = self.sharing.pulled(m, P, z, y, S, self.rho, out=None if scratch is None else scratch(m))
        if self.label_sigma is not None:
            r = self._label_noise(r)
        if self.input_clip is not None:
            np.clip(r, -self.input_clip, self.input_clip, out=r)
        return r

    #: label DP (privacy.label_epsilon): each pull clipped to [-L, L] entry by entry and
    #: perturbed by N(0, label_sigma^2); None: the pulls as they are
    label_sigma = None

    def _label_noise(self, r: np.ndarray) -> np.ndarray:
        """One label release: entry i of a pull is the only one that depends on label i given
        the released values (the z- and dual updates are separable per sample, and every
        share is a function of noisy pulls), so clipped it moves by at most 2 L."""
        np.clip(r, -self.label_clip, self.label_clip, out=r)
        # (a copy: r is an epoch's scratch slot, and the audit keeps the mean it is shown)
        r[...] = self.release(
            r.copy(),
            units=0,
            scale=self.label_sigma,
            sensitivity=2.0 * self.label_clip,
            rng=self.label_rng,
            relation="labels",
        )
        return r

    def z_update(self, share_sum: np.ndarray, y=None, z0=None, work=None) -> np.ndarray:
        """Minimizer of (7) given ``sum_m D_m x_m^{t+1}`` (and ``y``, default the current;
        ``work``: the epoch's buffers, none of which ``share_sum``, ``y`` or ``z0`` may be)."""
        y = self.y if y is None else y
        z0 = self.z if z0 is None else z0

        def solve():
            return self.z_solver(self._loss, share_sum, y, self.b, self.rho, self._w, tol=self.z_tol, z0=z0, work=work)

        if self.public_memo is not None:  # (7) reads the transcript and the labels b only
            return self.public_memo("z", (share_sum, y, z0, self.rho, self.b), solve)
        return solve()

    def publish(self, m: int, x_m: np.ndarray, share: np.ndarray) -> np.ndarray:
        """The value party ``m`` (in this process) pushes for ``share`` at its current sigma
        (:meth:`.party.Party.publish`: Hu et al. 2019, updates (10))."""
        return self.parties.parties[m].publish(x_m, share, self.sigma[m])

    def _draw_scales(self) -> np.ndarray:
        """The noise scales the parties draw with this epoch.

        Where the parties draw their own noise (another backend), the accountable releases
        (output noise) are recorded here, as :meth:`release` records them in-process, and
        each party draws with its event's scale (grown for an exact sampler's grid).
        """
        sigma = np.asarray(self.sigma, dtype=float)
        noisy = np.flatnonzero(sigma > 0)
        if self.parties.records_releases or not NOISE[self.noise_form].accountable or noisy.size == 0:
            return sigma
        event = self.record_release(
            units=noisy,
            scale=sigma[noisy],
            sensitivity=self.release_sensitivity[noisy],
            rng=self.noise_rngs[int(noisy[0])] if self.noise_rngs else None,
            size=len(self.b),
        )
        out = sigma.copy()
        out[noisy] = event.scale
        return out

    def _blas(self):
        if self._controller is None:
            return contextlib.nullcontext()
        return self._controller.limit(limits=self.blas_threads, user_api="blas")

    def step(self, diagnostics: bool = True) -> EpochStats:
        """Run one epoch and return its statistics.

        With ``diagnostics=False`` the objective and residuals are not
        evaluated (NaN), leaving only the algorithm's own work to time.
        """
        with self._blas():
            projected, t, extra = self._epoch()
        self.epoch += 1
        nan = float("nan")
        if self.x_radius is not None:
            extra["projected_parties"] = projected
        return EpochStats(
            epoch=self.epoch,
            objective=self.objective_value() if diagnostics else nan,
            primal_residual=self.primal_residual() if diagnostics else nan,
            dual_residual=self.dual_residual() if diagnostics else nan,
            x_seconds=t[1] - t[0],
            z_seconds=t[2] - t[1],
            y_seconds=t[3] - t[2],
            extra=extra,
        )

    def _epoch(self):
        """One epoch: the x-updates (6) and pushes, (7), (8), then the strategies' own steps.

        The intermediate N-vectors are the slots of ``self._scratch``: the pulls ``0..M-1``
        and the coupled sum ``M`` until the parties reply; then the relaxed sum in ``0``
        (until the end), the z-update's work in ``2..5``, the dual step's difference and
        after it the form's own bookkeeping in ``1..3``. What the epoch keeps (the shares,
        their sum, ``z``, ``y``, ``zeta``) is new arrays.
        """
        t0 = perf_counter()
        self.begin_releases()
        P, z_in, y_in = self._state_in()
        scratch = self._scratch
        # (the audit's runs, when the releases came back with them, lead every N-vector)
        scratch.fit(np.broadcast_shapes(np.shape(z_in), *(np.shape(p) for p in P)))
        pull = partial(self._pull, P=P, z=z_in, y=y_in, scratch=scratch)
        replies = self.sweep.round(
            self.parties, pull, self.sharing.coupled_sum(P, scratch), P, self.x_rho, self._draw_scales()
        )
        published = [s for s, _ in replies]
        projected = sum(p for _, p in replies)
        self._margins = None
        self.shares = published
        self.share_sum = summed(published)
        scratch.fit(np.broadcast_shapes(self.share_sum.shape, np.shape(z_in)))
        S_hat = self.relax(self.share_sum, z_in, out=scratch(0), tmp=scratch(1))
        t1 = perf_counter()
        rho = self.rho
        self.z = self.z_update(S_hat, y=y_in, z0=z_in, work=self._z_work)
        t2 = perf_counter()
        step = np.subtract(S_hat, self.z, out=scratch(1))
        step *= rho
        self.y = np.add(y_in, step)  # y + rho (S_hat - z)
        self.sharing.after_dual(self, published, P, S_hat, self.relax, scratch)
        extra = self.penalty.update(self, P, z_in, y_in)
        ta = perf_counter()
        self._next, report = self.accelerator.step(self, (P, z_in, y_in))
        t3 = perf_counter()
        if report:
            extra.update(report, accel_seconds=t3 - ta)
        return projected, (t0, t1, t2, t3), extra

    # -- diagnostics ---------------------------------------------------------
    def margins(self) -> np.ndarray:
        """``sum_m D_m x_m`` for the current models (exact, unperturbed)."""
        if self._margins is None:
            self._margins = summed(self.parties.exact_shares())
        return self._margins

    def objective_value(self) -> float:
        """F(x) of problem (1) at the current ``x``."""
        return self.objective.value_from_margins(self.margins(), self.b, self.x)

    def primal_residual(self) -> float:
        """``|| sum_m D_m x_m - z ||`` on the shared values, constraint (4)."""
        return float(np.linalg.norm(self.share_sum - self.z))

    def dual_residual(self) -> float:
        """``|| grad_x L_0(x, y) ||`` = ``sqrt(sum_m ||2 lam x_m + D_m^T y||^2)``.

        The stationarity residual of the un-augmented Lagrangian in x at the
        current dual y: zero exactly when the x-block KKT conditions hold.
        """
        sq = 0.0
        for DTy, xm in zip(self.parties.rmatvecs(self.y), self.x):
            r = 2.0 * self.objective.lam * xm + DTy
            sq += float(r @ r)
        return float(np.sqrt(sq))

    def coef(self) -> np.ndarray:
        """All parties' models concatenated (only for evaluation, never shared)."""
        return np.concatenate(self.x)
