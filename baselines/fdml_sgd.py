"""FDML-style SGD as the registered solver ``fdml_sgd``: its keys, its build, the runner's protocol.

:class:`FDMLSGDSolver` declares the ``[solver]`` and ``[privacy]`` keys, builds the iteration
(:class:`~vfl.baselines.sgd.FDMLSGD`, Hu et al.'s Section 5 baseline) and answers the runner
(metrics, the simulation's output noise, the label-DP option's claims and neighbours).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from vfl.core.layouts import PartyBlocks
from vfl.core.neighbours import label_neighbours
from vfl.core.params import Param
from vfl.core.releases import add_noise
from vfl.core.solver import Reference, Setting, Solver
from vfl.core.typed_records import PrivacyInfo
from vfl.core.wire import Wire

from . import fdml_party
from .fdml_party import FDML_PROTOCOL
from .sgd import FDMLSGD, LR_SCHEDULES


class FDMLSGDSolver(PartyBlocks, FDMLSGD, Solver):
    """FDML-style SGD as a registered solver (``solver.name = "fdml_sgd"``).

    Defaults: the authors' batch size 100; ``lr = 0.3`` with ``inv_sqrt``
    decay, measured on a9a and the gisette-shaped stand-in
    (``papers/hu/configs/fig1-*-sgd.toml``). ``privacy.sigma`` adds Gaussian noise to
    every output a party sends (FDML's DP variant) as a simulation: nothing
    is accounted, so no guarantee is claimed.
    """

    name = "fdml_sgd"
    title = "FDML SGD"
    setting = Setting.VERTICAL
    iteration_name = "epoch"
    backends = ("inprocess", "dask", "services")
    protocol = FDML_PROTOCOL
    attacks = ("label-norm", "label-direction", "model-completion", "feature-reconstruction")
    label_view = staticmethod(fdml_party.derivatives)
    share_view = staticmethod(fdml_party.outputs)
    reference = Reference(
        "Hu, Niu, Yang, Zhou: FDML, feature-distributed machine learning (2019); "
        "the SGD baseline of Hu et al., Section 5",
        "synchronous mini-batch SGD",
    )
    regularizers = ("l2sq",)
    params = (
        Param("batch_size", int, 100, "mini-batch size B", low=1),
        Param("lr", float, 0.3, "base learning rate eta", low=0, low_open=True),
        Param("lr_schedule", str, "inv_sqrt", "eta_t: constant, lr / sqrt(t), or step decay", choices=LR_SCHEDULES),
        Param("lr_step_epochs", int, 100, "epochs between decays of the step schedule", low=1),
        Param("lr_gamma", float, 0.1, "decay factor of the step schedule", low=0, high=1, low_open=True),
        Param("init_scale", float, 0.01, "x_m starts as N(0, init_scale^2)", low=0),
    )
    privacy_params = (
        Param("sigma", float, 0.0, "std of the Gaussian noise on every output sent (simulation: no accounting)", low=0),
        Param("form", str, "output", "noise on the local outputs (FDML's DP variant)", choices=("output",)),
        Param(
            "label_epsilon",
            float,
            None,
            "label DP towards the passive parties: Gaussian "
            "noise on the clipped loss derivatives, calibrated over the epochs",
            low=0,
            low_open=True,
        ),
        Param("label_delta", float, 1e-5, "delta of the label guarantee", low=0, high=1, low_open=True, high_open=True),
        Param(
            "label_clip",
            float,
            1.0,
            "L: each loss derivative clipped to [-L, L] before the noise (the logistic loss's are already)",
            low=0,
            low_open=True,
        ),
    )

    @classmethod
    def claims_guarantee(cls, privacy) -> bool:
        return cls.typed_privacy(privacy).label_epsilon is not None

    columns = ("objective", "primal_residual", "dual_residual", "x_time_s", "z_time_s", "y_time_s", "learning_rate")

    @classmethod
    def build(cls, data, *, objective, params, privacy, streams, iterations):
        M = len(data.blocks) if data.units is None else data.units.n_parties
        params, privacy = cls.typed_params(params), cls.typed_privacy(privacy)
        # (the outputs' noise streams only where there is output noise: a run that claims
        # label DP alone draws its label noise exactly, from the label holder's stream)
        solver = cls(
            data.blocks,
            data.y,
            objective,
            **params.values_dict(),
            output_sigma=privacy.sigma,
            init_rng=streams.get("init"),
            batch_rng=streams.get("batch"),
            noise_rngs=[streams.noise(m) for m in range(M)] if privacy.sigma > 0 else None,
            parties=data.units,
        )
        solver.wire = Wire(M)
        solver.label_sigma = None
        if privacy.label_epsilon is not None:
            from vfl.privacy.labels import label_sigma  # lazy: start-up (it loads dp-accounting, 0.6 s)

            solver.label_epsilon, solver.label_delta = privacy.label_epsilon, privacy.label_delta
            solver.label_clip, solver.label_rng = privacy.label_clip, streams.noise(0, 1)
            # exact noise (a deployment) is accounted by RDP: calibrated by it too
            solver.label_sigma = label_sigma(
                solver.label_epsilon,
                solver.label_delta,
                iterations,
                solver.label_clip,
                "rdp" if streams.exact_noise else "pld",
            )
        return solver

    def derivatives(self, d, start):
        """Label DP: each epoch, one Gaussian release of the clipped derivatives (a sample is
        in one batch per epoch, so the epoch's batches are one release of sensitivity 2 L)."""
        if self.label_sigma is None:
            return d
        if start == 0:  # the epoch's charge, recorded once
            self._label_event = self.record_release(
                units=0,
                scale=self.label_sigma,
                sensitivity=2.0 * self.label_clip,
                rng=self.label_rng,
                size=self.n_samples,
                relation="labels",
            )
        d = np.clip(d, -self.label_clip, self.label_clip)
        if self.observer is not None:  # the audit watches each batch's part of the release
            return self.observer(self, replace(self._label_event, size=d.size), d, self.label_rng)
        return add_noise("gaussian", d, self._label_event.scale[0], self.label_rng)

    def step(self, diagnostics: bool = False) -> dict:
        self.begin_releases()
        stats = FDMLSGD.step(self, diagnostics=False)
        # per mini-batch, every party sends its B outputs and receives the B loss derivatives
        batches = -(-self.n_samples // self.batch_size)
        self.wire.gather(self.n_samples, messages=batches)
        self.wire.scatter(self.n_samples, messages=batches)
        return {
            "x_time_s": stats.x_seconds,
            "z_time_s": 0.0,
            "y_time_s": 0.0,
            "learning_rate": stats.extra["learning_rate"],
        }

    @classmethod
    def neighbours(cls, data, privacy, rng):
        """Label DP only: one label flipped (:func:`~vfl.core.solver.label_neighbours`)."""
        if cls.typed_privacy(privacy).label_epsilon is None:
            raise NotImplementedError(
                f"{cls.name} states no neighbouring relation to audit "
                "(set privacy.label_epsilon for its label relation)"
            )
        return label_neighbours(data, rng)

    def evaluate(self) -> dict:
        nan = float("nan")  # residuals are ADMM's; SGD has none
        return {"objective": self.objective_value(), "primal_residual": nan, "dual_residual": nan}

    initial_metrics = evaluate

    def divergence_hint(self) -> str:
        return f"lower solver.lr (now {self.lr:g})"

    def describe(self) -> dict:
        return {
            "algorithm": (
                "FDML-style SGD: parties send local outputs per mini-batch, the active "
                "party returns the loss derivative; step on grad F / (w N)"
            ),
            "init": f"x_m ~ N(0, {self.init_scale:g}^2), SeedSequence(seed, spawn_key=(1,))",
            "batching": "reshuffled every epoch, SeedSequence(seed, spawn_key=(2,))",
        }

    def privacy_info(self) -> PrivacyInfo | None:
        label = None
        if self.label_sigma is not None:
            from vfl.privacy.labels import label_guarantee  # lazy: start-up (it loads dp-accounting, 0.6 s)

            label = label_guarantee(
                self.label_epsilon,
                self.label_delta,
                (
                    f"Gaussian noise N(0, {self.label_sigma:.4g}^2) on every loss derivative the "
                    "parties receive, each clipped to [-L, L]; a sample is in one batch per epoch "
                    "(sensitivity 2 L per epoch), composed over the epochs"
                ),
                {"derivative_clip_L": self.label_clip, "one_batch_per_epoch": True},
            )
        if self.output_sigma == 0 and label is None:
            return None
        out = {
            "mode": "simulation",
            "dp_guarantee": False,
            "form": "output",
            "sigma": self.output_sigma,
            "note": "noise on every output with no accounting: sigma alone is no guarantee"
            if self.output_sigma
            else "no noise on the outputs: the features are not protected",
        }
        return PrivacyInfo(
            **out, **({"label_guarantee": label, "labels": "label DP: see label_guarantee"} if label else {})
        )
