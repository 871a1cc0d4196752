"""Huang et al.'s providers (2019, Algorithms 1-3), their protocol, and the trainer's seam.

Provider i holds its rows ``A_i`` ``(m, d)`` and labels ``b_i``. In
iteration k it receives the trainer's global ``w^k`` (d values), takes its
own dual step ``gamma_i^k = gamma_i^{k-1} - rho (s_i^k - w^k)`` on its last
release ``s_i^k`` (Algorithms 1-2, line 8; Algorithm 3, (3d): the trainer
takes the same one, on the same values, for its average), computes its
local step and releases ``d`` values back (the only message it sends):

- Algorithms 1 and 2 (line 4): the exact argmin of
  ``f_i(w) - <gamma_i, w - w^k> + rho/2 ||w - w^k||^2``, released as it is
  (Algorithm 1) or as ``w_i + N(0, sigma^2 I)`` (Algorithm 2, line 5);
- Algorithm 3: the closed form (3a) of the approximate augmented Lagrangian
  (2) linearized at its own last release ``w~_i^k``, released as
  ``w~_i^{k+1} = w_i^{k+1} + N(0, sigma_{k+1}^2 I_d)`` (3b).

:class:`ProviderGroup` is that side for a contiguous group of providers,
vectorized over them (arrays ``(n, m, d)``: no loop over providers or
samples); each solver subclasses it with its local step
(:mod:`.exact`, :mod:`.dp_admm`). :data:`PROVIDERS_PROTOCOL`
declares the iteration once (:mod:`vfl.core.protocol`), its side
:class:`ProvidersSide` holding a group: all N providers in the trainer's
process, or a group per worker elsewhere. Every batched operation works
provider by provider (batched products, eigenvalues and solves; the exact
local solves freeze each provider once it has converged, :mod:`vfl.admm.local_solvers`;
a seeded stream's whole ``(N, d)`` draw of which a group keeps its rows), so
the same rows give the same numbers to the bit however the providers are
grouped, and the iterations (:mod:`vfl.admm.consensus`) have no branch on where they
run: :class:`Providers` is their seam.

A lost group is rebuilt by its journal: every completed iteration handled
again (its exact solves' warm starts with them), its releases checked equal
(replayable noise) or taken as recorded (a deployment's, never drawn again).

Beyond the protocol, the runner's diagnostics ask the providers for values
no provider sends (:meth:`Providers.diagnose`, :meth:`Providers.models`,
:meth:`Providers.residuals`): training margins and losses at ``w^k``, the
local objectives at the ergodic averages (Sec. VI's metrics), the clean
local models, the exact local solves' KKT residuals.
"""

from __future__ import annotations

import numpy as np

from vfl.core.protocol import (
    DIAGNOSTIC,
    Call,
    Empty,
    Placement,
    Protocol,
    ProtocolError,
    Side,
    array,
    handles,
    message,
    scalar,
    values,
)

from ..local_solvers import _softplus
from .batched import local_objectives
from .data import enforce_row_bound

__all__ = ["PROVIDERS_PROTOCOL", "ProviderGroup", "ProviderSpec", "Providers", "ProvidersSide", "check_provider_rows"]


@message
class ProviderSpec:
    """What every provider group needs besides its rows: public options of the run.

    ``group``: the solver's :class:`ProviderGroup` subclass (its local step), by its name in
    :attr:`ProviderGroup.KINDS`; a private run enforces ``||a|| <= 1`` on the rows
    (``row_bound``: check or clip); ``name``: the solver's, for error messages;
    ``settings``: the local step's own public options (the exact solves' method and
    tolerance).
    """

    group = scalar(str)
    rho = scalar(float)
    lam_per_provider = scalar(float)
    regularizer = scalar(str)
    private = scalar(bool)
    row_bound = scalar(str, optional=True)
    name = scalar(str)
    settings = values()


@message
class Iterate:
    """What the trainer sends a group in iteration k: ``w^k``, the iteration's public values
    of the local step (Algorithm 3's ``eta``) and the release's noise (its mechanism and each
    provider's scale and enforced sensitivity), or none."""

    w = array("f8", "d")
    public = values()
    mechanism = scalar(str, optional=True)
    scale = array("f8", "n", optional=True)
    sensitivity = array("f8", "n", optional=True, finite=False)


@message
class Released:
    """The group's releases ``(n, d)`` and its local steps' statistics (per-provider arrays)."""

    shared = array("f8", "n", "d")
    stats = values()


@message
class Average:
    w = array("f8", "d")
    W_bar = array("f8", "n", "d", optional=True)


@message
class Diagnosis:
    margins = array("f8", "n", "m", finite=False)
    losses = array("f8", "n", finite=False)
    f = array("f8", "n", optional=True, finite=False)


@message
class Models:
    W = array("f8", "n", "d", finite=False)


@message
class Residuals:
    r = array("f8", "n", finite=False)


@message
class Clipped:
    """Rows the group scaled onto the unit ball (a private run's ``row_bound``)."""

    rows = scalar(int)


def check_provider_rows(A, b, *, name: str, private: bool, row_bound: str | None):
    """The providers' rows ``A`` ``(n, m, d)`` and labels ``b`` ``(n, m)``, checked (and, in a
    private run, ``||a|| <= 1`` enforced): returns ``(A, b, rows scaled)``; ``ValueError``
    otherwise. Run where the rows are (the trainer in-process, each worker on Dask)."""
    try:
        A = np.asarray(A, dtype=float)
        b = np.asarray(b, dtype=float)
    except ValueError:  # ragged: providers with different m
        raise ValueError("providers must hold equal numbers of samples: A (N, m, d), b (N, m)") from None
    if A.ndim != 3 or b.shape != A.shape[:2]:
        raise ValueError(
            f"providers' data must be A (N, m, d) and b (N, m) with equal m; got A {A.shape} and b {b.shape}"
        )
    if min(A.shape) < 1:
        raise ValueError(f"need N, m, d >= 1, got A of shape {A.shape}")
    if not np.all(np.isfinite(A)):
        raise ValueError("provider rows must be finite")
    if not np.all(np.abs(b) == 1.0):
        raise ValueError("labels must be -1 or +1 (|b| = 1 is part of S1 = 1)")
    clipped = 0
    if private:
        A, clipped = enforce_row_bound(A, row_bound)
    return np.ascontiguousarray(A), b, clipped


class ProviderGroup:
    """Providers ``start .. start + n - 1`` of N: their rows, duals, releases and models.

    ``update(w, public, publish)`` is one iteration of the group's providers:
    the dual step with the ``w^k`` just received, the local step (a subclass
    per solver, :meth:`local_step`, with the iteration's ``public`` values),
    then ``publish(W)``, which turns the clean local models ``(n, d)`` into what
    they release (noise drawn where the rows are; the identity without noise).
    """

    #: every subclass by name: the spec names the group its side builds (a closed table)
    KINDS: dict[str, type] = {}

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        ProviderGroup.KINDS[f"{cls.__module__}.{cls.__qualname__}"] = cls

    @classmethod
    def kind(cls) -> str:
        """This group's name in :attr:`KINDS` (what the spec sends)."""
        return f"{cls.__module__}.{cls.__qualname__}"

    def __init__(self, A, b, *, start: int, spec: ProviderSpec):
        self.A, self.b = A, b
        self.start = int(start)
        n, _, d = A.shape
        self.rows = slice(self.start, self.start + n)
        self.spec = spec
        self.rho, self.lam_per_provider, self.regularizer = (spec.rho, spec.lam_per_provider, spec.regularizer)
        self.gamma = np.zeros((n, d))  # gamma_i^k
        self.shared = np.zeros((n, d))  # the last release
        self.W = np.zeros((n, d))  # the clean w_i^k (never sent)
        self.rounds = 0

    def local_step(self, w: np.ndarray, public: dict) -> tuple[np.ndarray, dict]:
        """The providers' clean ``w_i^{k+1}`` ``(n, d)`` from ``w^k`` and their state, and
        the step's statistics (per-provider arrays ``(n,)``)."""
        raise NotImplementedError

    def update(self, w: np.ndarray, public: dict, publish) -> tuple[np.ndarray, dict]:
        """One iteration for the group, given the trainer's ``w^k``: the dual step, the local
        step, the release; returns the releases ``(n, d)`` and the step's statistics."""
        if self.rounds:  # the dual step of the last iteration, with the w it has just received
            self.gamma = self.gamma - self.rho * (self.shared - w[..., None, :])
        W, stats = self.local_step(w, public)
        self.W = W
        self.shared = publish(W)
        self.rounds += 1
        return self.shared, stats

    def diagnose(self, w: np.ndarray, W_bar: np.ndarray | None):
        """Training margins ``A_i w`` ``(n, m)``, losses ``(1/m) sum_j l`` ``(n,)`` and, after
        an iteration, the local objectives ``f_i(W_bar_i)`` ``(n,)`` (Sec. VI's metrics)."""
        margins = self.A @ w
        losses = _softplus(-self.b * margins).mean(axis=1)
        f = (
            None
            if W_bar is None
            else local_objectives(
                self.A, self.b, W_bar, lam_per_provider=self.lam_per_provider, regularizer=self.regularizer
            )
        )
        return margins, losses, f

    def residuals(self) -> np.ndarray:
        """The KKT residuals of the last exact local solves ``(n,)`` (Algorithms 1-2)."""
        raise NotImplementedError


class ProvidersSide(Side):
    """Providers ``first .. stop - 1`` wherever they are: their checked rows, their group."""

    def __init__(self, data, spec: ProviderSpec, env):
        super().__init__(data, spec, env)
        kind = ProviderGroup.KINDS.get(spec.group)
        if kind is None:
            raise ProtocolError(f"no provider group {spec.group!r}")
        A, b = data.blocks
        A, b, self.clipped = check_provider_rows(A, b, name=spec.name, private=spec.private, row_bound=spec.row_bound)
        self.group = kind(A, b, start=data.first, spec=spec)
        self.rng = env.noise()  # the run's stream of the releases of all N at once
        n, m, d = A.shape
        self.dims = {"n": n, "m": m, "d": d}

    def opened(self) -> Clipped:
        return Clipped(rows=int(self.clipped))

    def _publish(self, req: Iterate):
        if req.scale is None:
            return lambda W: W
        data = self.data
        return lambda W: self.env.release(
            W,
            units=np.arange(data.first, data.stop),
            scale=req.scale,
            sensitivity=req.sensitivity,
            rng=self.rng,
            mechanism=req.mechanism,
            size=W.shape[-1],
            rows=data.rows,
            total=data.total,
        )

    @handles("update")
    def update(self, req: Iterate) -> Released:
        """One iteration of the group's providers (:meth:`ProviderGroup.update`)."""
        shared, stats = self.group.update(req.w, req.public, self._publish(req))
        return Released(shared=shared, stats=stats)

    def install(self, call, req: Iterate, reply: Released) -> None:
        """A deployment's iteration, whose releases the trainer holds: the same step, its
        release the recorded one (never drawn again)."""
        self.group.update(req.w, req.public, lambda W: np.array(reply.shared, copy=True))

    @handles("diagnose")
    def diagnose(self, req: Average) -> Diagnosis:
        margins, losses, f = self.group.diagnose(req.w, req.W_bar)
        return Diagnosis(margins=margins, losses=losses, f=f)

    @handles("models")
    def models(self, _: Empty) -> Models:
        return Models(W=self.group.W)

    @handles("residuals")
    def residuals(self, _: Empty) -> Residuals:
        return Residuals(r=self.group.residuals())


PROVIDERS_PROTOCOL = Protocol(
    "huang_providers",
    1,
    spec=ProviderSpec,
    side=ProvidersSide,
    opened=Clipped,
    iteration="update",
    calls=(
        Call("update", Iterate, Released, releases=True),
        Call("diagnose", Average, Diagnosis, DIAGNOSTIC),
        Call("models", Empty, Models, DIAGNOSTIC),
        Call("residuals", Empty, Residuals, DIAGNOSTIC),
    ),
    placement=Placement("provider", "providers", grouped=True, own_worker=False, iteration="iteration"),
)


class Providers:
    """The N providers as the trainer sees them, over a session of
    :data:`PROVIDERS_PROTOCOL`.

    ``record(units=, scale=, sensitivity=, size=)`` records an iteration's release event in
    the trainer (:meth:`~vfl.core.solver.Solver.record_release`) and returns it, where the
    providers draw their own noise; ``shape``: ``(N, m, d)``.
    """

    def __init__(self, session, record, shape):
        self.session, self.record = session, record
        self.n_providers, self.m, self.d = (int(v) for v in shape)
        #: rows scaled onto the unit ball (a private run's ``row_bound``), over all providers
        self.rows_clipped = int(sum(o.rows for o in session.opened))
        self.ranges = [(a, b) for a, b in session.hosts]
        for k, (a, b) in enumerate(self.ranges):
            session.bind(k, n=b - a, m=self.m, d=self.d)

    @property
    def group(self) -> ProviderGroup:
        """All N providers' group, where it is in this process."""
        (side,) = self.session.sides
        return side.group

    @property
    def A(self) -> np.ndarray:
        return self.group.A

    @property
    def b(self) -> np.ndarray:
        return self.group.b

    def update(self, w: np.ndarray, public: dict, noise) -> tuple[np.ndarray, dict]:
        """Every provider's iteration from ``w^k`` (:meth:`ProviderGroup.update`); returns
        the releases ``(N, d)`` and the local steps' statistics, per-provider arrays ``(N,)``.

        ``public`` holds the iteration's public values of the local step (Algorithm 3's
        ``eta``); ``noise`` is None (no noise) or ``(units, scale, sensitivity)`` of the
        Gaussian release: the iteration's :class:`~vfl.core.releases.Release`.
        """
        N = self.n_providers
        mechanism = scale = sens = None
        if noise is not None:
            units, scale, sens = noise
            mechanism = "gaussian"
            scale = np.broadcast_to(np.asarray(scale, dtype=float), (N,)).copy()
            sens = np.broadcast_to(np.asarray(sens, dtype=float), (N,)).copy()
            if not self.session.records:  # they draw where they are: the event recorded here
                event = self.record(units=units, scale=scale, sensitivity=sens, size=self.d)
                mechanism, scale = event.mechanism, event.scale
        replies = self.session.round(
            "update",
            {
                k: Iterate(
                    w=w,
                    public=dict(public),
                    mechanism=mechanism,
                    scale=None if scale is None else scale[a:b],
                    sensitivity=None if sens is None else sens[a:b],
                )
                for k, (a, b) in enumerate(self.ranges)
            },
        )
        parts = [replies[k] for k in range(len(self.ranges))]
        shared = np.concatenate([p.shared for p in parts])
        stats = {key: np.concatenate([p.stats[key] for p in parts]) for key in parts[0].stats}
        return shared, stats

    def diagnose(self, w: np.ndarray, W_bar: np.ndarray | None):
        """:meth:`ProviderGroup.diagnose` over all providers (diagnostics: nothing is sent)."""
        parts = self.session.ask(
            "diagnose",
            each=lambda k: Average(w=w, W_bar=None if W_bar is None else W_bar[self.ranges[k][0] : self.ranges[k][1]]),
        )
        margins = np.concatenate([p.margins for p in parts])
        losses = np.concatenate([p.losses for p in parts])
        f = None if W_bar is None else np.concatenate([p.f for p in parts])
        return margins, losses, f

    def models(self) -> np.ndarray:
        """The clean local models ``w_i^k`` ``(N, d)`` (diagnostics)."""
        return np.concatenate([p.W for p in self.session.ask("models")])

    def residuals(self) -> np.ndarray:
        """:meth:`ProviderGroup.residuals` over all providers (Algorithms 1-2's diagnostic)."""
        return np.concatenate([p.r for p in self.session.ask("residuals")])
