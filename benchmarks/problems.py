"""The benchmarks' settings (``--quick`` or full) and the problems they run on: a9a (or
its synthetic stand-in) and a gisette-shaped set, each split among parties."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np
import scipy.sparse as sp

from vfl.core.errors import DataError
from vfl.core.objective import Objective
from vfl.core.preprocessing import RowSteps
from vfl.datasets import load_dataset, make_synthetic
from vfl.experiments.partition import Partition

OBJECTIVE = Objective("logistic", 1e-3, "sum")


@dataclass(frozen=True)
class Settings:
    quick: bool
    epoch_repeats: int  # epochs timed (after warm-up) for the per-epoch medians
    floor_repeats: int
    proto_epochs: int
    proto_z_samples: int  # samples solved by minimize_scalar per prototype epoch
    subopt_target: float
    subopt_cap: int
    rho_grid: tuple
    time_repeats: int  # repeats of the time-to-target runs (median)
    sklearn_tols: tuple
    scaling_d: tuple
    scaling_n: tuple
    scaling_fixed_n: int
    scaling_fixed_d: int
    scaling_n_test: int
    scaling_lam: float
    scaling_margin: float
    admm_cap: int
    sgd_cap: int
    sgd: dict = field(default_factory=lambda: {"batch_size": 100, "lr": 0.3, "lr_schedule": "inv_sqrt"})
    # the variants of issue 13 (benchmarks.variants)
    variant_cap: int = 400  # epochs, per a9a variant
    gisette_cap: int = 800
    noise_sigmas: tuple = (0.1, 1.0)
    noise_seeds: int = 3
    noise_epochs: int = 100
    epsilon_sigmas: tuple = (1.0, 2.0, 4.0, 8.0)
    epsilon_epochs: int = 60
    epsilon_margin: float = 0.02
    data_dir: str | None = None

    @classmethod
    def make(cls, quick: bool) -> Settings:
        common = dict(
            subopt_target=1e-4,
            rho_grid=(0.1, 0.3, 1.0, 3.0),
            sklearn_tols=(1e-4, 3e-5, 1e-5, 3e-6, 1e-6, 3e-7, 1e-7, 1e-8),
            scaling_lam=10.0,
            scaling_margin=0.01,
        )
        if quick:
            return cls(
                quick=True,
                epoch_repeats=5,
                floor_repeats=5,
                proto_epochs=3,
                proto_z_samples=300,
                subopt_cap=1000,
                time_repeats=1,
                scaling_d=(20, 200),
                scaling_n=(300, 1500),
                scaling_fixed_n=400,
                scaling_fixed_d=20,
                scaling_n_test=300,
                admm_cap=50,
                sgd_cap=20,
                variant_cap=150,
                gisette_cap=40,
                noise_seeds=1,
                noise_epochs=20,
                epsilon_sigmas=(2.0,),
                epsilon_epochs=10,
                **common,
            )
        return cls(
            quick=False,
            epoch_repeats=30,
            floor_repeats=30,
            proto_epochs=3,
            proto_z_samples=2000,
            subopt_cap=2000,
            time_repeats=3,
            scaling_d=(100, 1000, 5000, 20000),
            scaling_n=(1000, 10000, 100000),
            scaling_fixed_n=2000,
            scaling_fixed_d=100,
            scaling_n_test=1000,
            admm_cap=100,
            sgd_cap=100,
            **common,
        )

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass
class Problem:
    name: str
    note: str
    blocks: list
    y: np.ndarray
    test_blocks: list
    y_test: np.ndarray
    partition: Partition

    def describe(self) -> dict:
        return {
            "name": self.name,
            "note": self.note,
            "n_train": int(len(self.y)),
            "n_test": int(len(self.y_test)),
            "block_shapes": [list(D.shape) for D in self.blocks],
            "sparse": bool(sp.issparse(self.blocks[0])),
        }

    def joined(self, test=False):
        blocks = self.test_blocks if test else self.blocks
        return sp.hstack(blocks, format="csr") if sp.issparse(blocks[0]) else np.hstack(blocks)


@dataclass
class Data:
    a9a: Problem
    gisette: Problem

    def describe(self) -> dict:
        return {"a9a": self.a9a.describe(), "gisette": self.gisette.describe()}


def _problem(ds, counts, name, note) -> Problem:
    edges = np.cumsum([0, *counts])
    part = Partition(
        parties=tuple(np.arange(a, b) for a, b in zip(edges[:-1], edges[1:])),
        n_features=ds.X_train.shape[1],
        rows=RowSteps(intercept=True),
    )
    return Problem(name, note, part.split(ds.X_train), ds.y_train, part.split(ds.X_test), ds.y_test, part)


def load_data(cfg: Settings) -> Data:
    a9a_note = None
    ds = None
    if cfg.quick:
        a9a_note = "--quick: small synthetic sparse stand-in (3000/1000 x 123, density 0.1), NOT a9a"
    else:
        try:
            ds = load_dataset("a9a")
        except DataError as exc:
            a9a_note = f"a9a unavailable ({exc}); small synthetic sparse stand-in used, NOT a9a"
    if ds is None:
        ds = make_synthetic(3000, 1000, 123, sparse=True, density=0.1, seed=0)
        a9a = _problem(ds, [66, 57], "synthetic-sparse (a9a stand-in)", a9a_note)
    else:
        a9a = _problem(ds, [66, 57], "a9a", "real a9a, parties 66 / 57 columns + intercept on party 1")
    if cfg.quick:
        g = make_synthetic(600, 200, 500, n_latent=20, logit_scale=40.0, noise=0.5, seed=0)
        gis = _problem(
            g,
            [200, 200, 100],
            "synthetic dense 600x500 (gisette-shaped stand-in, --quick)",
            "--quick: small dense synthetic, NOT the gisette-shaped preset",
        )
    else:
        g = load_dataset("synthetic", options={"preset": "gisette-shaped"})
        gis = _problem(
            g,
            [2000, 2000, 1000],
            "synthetic:gisette-shaped",
            "gisette-shaped synthetic stand-in 6000 x 5000 (not real gisette); "
            "parties 2000 / 2000 / 1000 + intercept on party 1",
        )
    return Data(a9a, gis)
