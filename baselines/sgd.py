"""FDML-style SGD over distributed features, the baseline of Hu et al., Section 5.

Hu et al. ("Learning Privately over Distributed Features: An ADMM Sharing
Approach", Section 5, Figs 1-2) compare ADMM sharing with "an SGD based
algorithm proposed in (Hu et al. 2019)", i.e. FDML (Hu, Niu, Yang and Zhou,
"FDML: A Collaborative Machine Learning Framework for Distributed Features",
KDD 2019). With linear local models FDML is mini-batch SGD on problem (1):

    F(x) = w * sum_i l_i( sum_m D_m^i x_m ) + lam * sum_m ||x_m||^2.

For every mini-batch each party m sends its local outputs ``D_m[batch] x_m``
(one value per sample), the active party adds them up, evaluates the loss
derivative ``l'(u_i; b_i)`` per sample and sends it back, and every party
takes a gradient step on its own weights only. Features and weights never
leave their party; only the outputs and the derivatives are exchanged.

:class:`~.fdml_party.SGDParty` is party m's side of that exchange (its block,
its model and its output noise), declared once as a protocol
(:data:`~.fdml_party.FDML_PROTOCOL`); :class:`~.fdml_party.SGDParties` is
what the iteration talks to, one mini-batch at a time, over the one unit
transport wherever the parties run (this process, Dask workers), so the
iteration has no branch on where the parties run.
The registered solver ``fdml_sgd`` around this iteration is
:class:`~vfl.baselines.fdml_sgd.FDMLSGDSolver`.

This module is pure computation: no files, no printing, no global state;
every random draw comes from a ``numpy.random.Generator`` passed in.
"""

from __future__ import annotations

import math
import numbers
from time import perf_counter

import numpy as np

from vfl.core.host import LocalEnv
from vfl.core.inprocess import InProcessUnits
from vfl.core.metrics import EpochStats
from vfl.core.objective import Objective

from .fdml_party import FDML_PROTOCOL, SGDParties, SGDParty, SGDSpec, initial_models, output_noise

__all__ = ["FDMLSGD", "LR_SCHEDULES", "SGDParties", "SGDParty", "SGDSpec", "initial_models", "output_noise"]

LR_SCHEDULES = ("constant", "inv_sqrt", "step")


def _check_generator(rng, name: str) -> None:
    if not isinstance(rng, np.random.Generator):
        raise ValueError(
            f"{name} must be a numpy.random.Generator (e.g. np.random.default_rng(seed)), got {type(rng).__name__}"
        )


def _check_positive(value, name: str, *, allow_zero: bool = False) -> float:
    bound = ">= 0" if allow_zero else "> 0"
    ok = isinstance(value, numbers.Real) and math.isfinite(value) and (value >= 0 if allow_zero else value > 0)
    if not ok:
        raise ValueError(f"{name} must be a finite number {bound}, got {value!r}")
    return float(value)


def _check_int(value, name: str, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


class FDMLSGD:
    r"""FDML-style SGD over distributed features (Hu et al. 2019), the baseline of Hu et al.'s Figs 1-2.

    Each party m keeps a linear local model ``x_m``. For each mini-batch,
    every party sends its local outputs ``D_m[batch] x_m`` (one value per
    sample; optionally plus ``N(0, output_sigma^2)`` noise, FDML's DP
    variant, drawn from that party's own noise Generator), the active party
    sums them, computes the per-sample loss derivative with respect to the
    sum and returns it; every party takes an SGD step on its own weights
    with the same l2 term. All parties step at once (synchronously), from
    the outputs of the same models.

    Gradient scaling
    ----------------
    The step of party m is ``x_m <- x_m - eta_t g_m`` with::

        g_m = (1/B) sum_{i in batch} l'(u_i; b_i) D_m^i + (2 lam / (w N)) x_m,

    an unbiased estimate of ``grad_{x_m} F(x) / (w N)``, where ``F`` is
    ``objective`` and ``w = objective.weight(N)``. Hence ``lr`` means the
    same thing for ``reduction="sum"`` and ``"mean"`` (the two F differ by the
    factor N only), and, with a decaying learning rate and no noise, the
    iterates approach the minimizer of F, the same point ADMM sharing and
    :func:`~vfl.baselines.central_optimum` find.

    Parameters
    ----------
    blocks : list of (N, d_m) arrays or sparse matrices, or None
        The parties' feature blocks ``D_1, ..., D_M`` (same rows), held in
        this process; None with ``parties``. The
        active party (the coordinator here) holds the labels.
    b : (N,) array of labels (+-1 for the logistic loss).
    objective : Objective
        Loss, reduction and ``lam`` of problem (1).
    batch_size : int, >= 1
        Mini-batch size B (the authors use 100). One epoch is one pass over
        the N samples in an order drawn from ``batch_rng``; the last batch
        holds the remaining ``N mod B`` samples when B does not divide N.
    lr : float, > 0
        Base learning rate ``eta``.
    lr_schedule : {"constant", "inv_sqrt", "step"}
        ``eta_t`` for the 1-based epoch t: ``lr``; ``lr / sqrt(t)``;
        ``lr * lr_gamma ** floor((t - 1) / lr_step_epochs)``.
    lr_step_epochs : int, >= 1
        Epochs between decays of the ``"step"`` schedule.
    lr_gamma : float in (0, 1]
        Decay factor of the ``"step"`` schedule.
    init_scale : float, >= 0
        ``x_m`` starts as i.i.d. ``N(0, init_scale^2)`` from ``init_rng``
        (Hu et al. initialize the SGD baseline randomly); 0 gives zeros
        without drawing.
    output_sigma : float, >= 0
        Standard deviation of the Gaussian noise each party adds to every
        output it sends. The derivative is computed from the perturbed sum
        (that is the protocol); the reported objective and margins are exact.
    init_rng, batch_rng : numpy.random.Generator
        Sources of the initial models and of each epoch's sample order.
    noise_rngs : list of M numpy.random.Generator, optional
        One per party, in party order; required when ``output_sigma > 0`` and
        never drawn from otherwise.
    parties : :class:`~vfl.core.units.Units` with ``n_parties`` and ``widths``, optional
        Where the parties run when not in this process (another backend: the
        blocks are not here; each party draws its initial model, its copy of
        the sample order and its noise from the same streams there). Default:
        the blocks, here.

    Attributes
    ----------
    x : list of (d_m,) arrays, the local models (held by the parties).
    parties : :class:`SGDParties`, where each party's side of a batch runs.
    epoch : int, number of completed epochs.
    messages : (M,) int array, cumulative number of scalar values each party
        has sent (its outputs: one per sample per epoch). The derivatives the
        active party returns (one per sample per epoch, to every party) are
        not included.
    """

    def __init__(
        self,
        blocks,
        b,
        objective: Objective,
        *,
        batch_size: int = 100,
        lr: float = 0.1,
        lr_schedule: str = "constant",
        lr_step_epochs: int = 100,
        lr_gamma: float = 0.1,
        init_scale: float = 0.01,
        output_sigma: float = 0.0,
        init_rng: np.random.Generator,
        batch_rng: np.random.Generator,
        noise_rngs=None,
        parties=None,
    ):
        if parties is None and not blocks:
            raise ValueError("at least one feature block is required")
        b = np.asarray(b, dtype=float)
        if b.ndim != 1 or b.size == 0:
            raise ValueError(f"b must be a non-empty 1-d array of labels, got shape {b.shape}")
        n = b.size
        for m, D in enumerate(blocks if parties is None else (), start=1):
            if D.ndim != 2 or D.shape[0] != n:
                raise ValueError(f"party {m}: block of shape {D.shape} does not have {n} rows")
            if D.shape[1] == 0:
                raise ValueError(f"party {m}: block has no columns")
        M = len(blocks) if parties is None else parties.n_parties
        if not isinstance(objective, Objective):
            raise ValueError(f"objective must be a vfl.admm.Objective, got {type(objective).__name__}")
        self.batch_size = _check_int(batch_size, "batch_size")
        self.lr = _check_positive(lr, "lr")
        if lr_schedule not in LR_SCHEDULES:
            raise ValueError(f"unknown lr_schedule {lr_schedule!r}; expected one of {LR_SCHEDULES}")
        self.lr_schedule = lr_schedule
        self.lr_step_epochs = _check_int(lr_step_epochs, "lr_step_epochs")
        self.lr_gamma = _check_positive(lr_gamma, "lr_gamma")
        if self.lr_gamma > 1:
            raise ValueError(f"lr_gamma must be in (0, 1] (a decay factor), got {lr_gamma!r}")
        self.init_scale = _check_positive(init_scale, "init_scale", allow_zero=True)
        self.output_sigma = _check_positive(output_sigma, "output_sigma", allow_zero=True)
        _check_generator(init_rng, "init_rng")
        _check_generator(batch_rng, "batch_rng")
        if noise_rngs is None:
            if self.output_sigma > 0:
                raise ValueError(f"output_sigma = {output_sigma!r} > 0 needs noise_rngs, one Generator per party")
        else:
            noise_rngs = list(noise_rngs)
            if len(noise_rngs) != M:
                raise ValueError(f"noise_rngs must hold one Generator per party: got {len(noise_rngs)} for {M} parties")
            for m, r in enumerate(noise_rngs, start=1):
                _check_generator(r, f"noise_rngs[{m - 1}] (party {m})")

        self.objective = objective
        self.b = b
        self.batch_rng = batch_rng
        self.noise_rngs = noise_rngs
        self._loss = objective.loss_fn
        # The l2 term of g_m: grad of lam ||x_m||^2, divided by w N (see class docstring).
        self._reg = 2.0 * objective.lam / (objective.weight(n) * n)
        widths = [D.shape[1] for D in blocks] if parties is None else parties.widths
        spec = SGDSpec(
            batch_size=self.batch_size,
            reg=float(self._reg),
            init_scale=self.init_scale,
            output_sigma=self.output_sigma,
            widths=np.asarray(widths, dtype=np.int64),
        )
        if parties is None:  # each party draws its initial model and its order as elsewhere,
            # from its copy of the public streams; its outputs go through self.publish
            parties = InProcessUnits.blocks(
                blocks,
                LocalEnv(
                    release=lambda mean, *, units, batch, **_: self.publish(units, batch, mean),
                    streams={"init": init_rng, "batch": batch_rng},
                ),
            )
        self.parties = SGDParties(parties.open(FDML_PROTOCOL, spec), n)
        self.epoch = 0
        self.messages = np.zeros(M, dtype=np.int64)
        self._margins = None

    @property
    def n_parties(self) -> int:
        return self.parties.n_parties

    @property
    def x(self) -> list[np.ndarray]:
        """The parties' local models ``x_m`` (a diagnostic: no party sends its model)."""
        return self.parties.models()

    @property
    def n_samples(self) -> int:
        return self.b.size

    def learning_rate(self, epoch: int) -> float:
        """``eta_t`` used throughout the (1-based) epoch ``t = epoch``."""
        t = _check_int(epoch, "epoch")
        if self.lr_schedule == "constant":
            return self.lr
        if self.lr_schedule == "inv_sqrt":
            return self.lr / math.sqrt(t)
        return self.lr * self.lr_gamma ** ((t - 1) // self.lr_step_epochs)

    # -- the protocol ----------------------------------------------------------
    def publish(self, m: int, rows: np.ndarray, outputs: np.ndarray) -> np.ndarray:
        """The values party ``m`` (0-based, in this process) sends for the batch ``rows``.

        ``outputs`` are its exact local outputs ``D_m[rows] x_m``. FDML's DP
        variant adds ``N(0, output_sigma^2)`` noise from the party's own
        Generator (:func:`output_noise`); subclasses may override this to
        record or alter messages.
        """
        return output_noise(outputs, self.output_sigma, None if self.noise_rngs is None else self.noise_rngs[m])

    def derivatives(self, d: np.ndarray, start: int) -> np.ndarray:
        """What the active party sends for a batch's loss derivatives ``d`` (before the 1/B):
        ``d`` itself here (label DP: :class:`FDMLSGDSolver`)."""
        return d

    def step(self, diagnostics: bool = True) -> EpochStats:
        """Run one epoch (one shuffled pass over the N samples) and return its statistics.

        ``objective`` is F(x) at the end of the epoch, from the exact margins
        (NaN with ``diagnostics=False``). Residuals are not defined for SGD and
        are NaN; all the epoch's work is timed as ``x_seconds``.
        """
        t0 = perf_counter()
        self._margins = None  # the models are about to change
        n, bs = self.n_samples, self.batch_size
        eta = self.learning_rate(self.epoch + 1)
        perm = self.batch_rng.permutation(n)
        b_perm = self.b[perm]
        self.parties.begin_epoch(perm)
        for start in range(0, n, bs):
            stop = min(start + bs, n)
            # Every party sends its outputs of the current models ...
            u = 0.0
            for m, sent in enumerate(self.parties.outputs(start, stop)):
                self.messages[m] += sent.size
                u = u + sent
            # ... the active party returns dl/du per sample, scaled by 1/B, and each party
            # steps on its own weights
            d = self.derivatives(self._loss.grad(u, b_perm[start:stop]), start)
            self.parties.step(d / (stop - start), eta)
        t1 = perf_counter()
        self.epoch += 1
        nan = float("nan")
        return EpochStats(
            epoch=self.epoch,
            objective=self.objective_value() if diagnostics else nan,
            primal_residual=nan,
            dual_residual=nan,
            x_seconds=t1 - t0,
            z_seconds=0.0,
            y_seconds=0.0,
            extra={"learning_rate": eta},
        )

    # -- diagnostics -----------------------------------------------------------
    def margins(self) -> np.ndarray:
        """``sum_m D_m x_m`` on the training rows (exact, unperturbed)."""
        if self._margins is None:
            self._margins = np.sum(self.parties.margins(), axis=0)
        return self._margins

    def objective_value(self) -> float:
        """F(x) of problem (1) at the current ``x``."""
        return self.objective.value_from_margins(self.margins(), self.b, self.x)

    def coef(self) -> np.ndarray:
        """All parties' models concatenated (only for evaluation, never shared)."""
        return np.concatenate(self.x)
