"""A seeded stand-in built the way gisette was built, for when gisette is absent.

GISETTE (Guyon et al., NIPS 2003 feature selection challenge) separates
handwritten 4s from 9s. Its documented construction, which this generator
follows step by step:

1. pixels of the digit images (sparse, non-negative intensities);
2. real features are products of pairs of pixels, which plunges the task into
   a higher-dimensional space of correlated, mostly-zero columns;
3. as many *probes* as real features, drawn from the real features'
   distribution but with no predictive power (here: a real column whose
   entries are shuffled across samples);
4. values quantized to integers 0..999, about 13% of them non-zero;
5. the order of features randomized;
6. LIBSVM's copy (the one the ADMM-sharing paper used) scales each feature
   linearly onto [-1, 1] with the training min/max, so every zero becomes -1:
   the data are dense, far from centred, and rows have norm about 70.

Step 6 is what governs how first-order and ADMM methods behave on gisette
(a large common component and per-sample Lipschitz constants in the
thousands), which is why the stand-in copies it rather than using centred
Gaussian features. Images are replaced by a class prototype plus a few
shared deformation modes and pixel noise, thresholded at zero; the
``separation`` default puts a regularized linear model at about 0.97 test
accuracy, where linear models sit on the real gisette.
"""

from __future__ import annotations

import numpy as np
from scipy.special import ndtri

from vfl.core.errors import DataError
from vfl.datasets._generator_checks import integer, real
from vfl.datasets.dataset import Dataset
from vfl.datasets.svm_scale import apply_minmax, fit_minmax

__all__ = ["make_gisette_like"]

_LEVELS = 999  # gisette's integer feature values run from 0 to 999


def _integer(name: str, value, minimum: int) -> int:
    return integer("gisette-like", name, value, minimum)


def _real(name: str, value, low: float, high: float | None = None, *, open_low=False) -> float:
    return real("gisette-like", name, value, low, high, open_low=open_low)


def make_gisette_like(
    n_train: int = 6000,
    n_test: int = 1000,
    n_features: int = 5000,
    *,
    probe_fraction: float = 0.5,
    n_pixels: int = 400,
    n_modes: int = 10,
    separation: float = 0.2,
    deformation: float = 1.5,
    pixel_noise: float = 0.5,
    pixel_on: float = 0.36,
    seed: int = 0,
) -> Dataset:
    """Generate gisette-like data: pixel products plus probes, scaled like LIBSVM's copy.

    Parameters
    ----------
    n_train, n_test, n_features : int
        Sizes; gisette's are 6000 / 1000 / 5000.
    probe_fraction : float in [0, 1)
        Share of the columns that are probes (gisette: one half).
    n_pixels : int
        Pixels of the latent image the real features multiply in pairs.
    n_modes : int
        Deformation modes shared by both classes (writing style).
    separation : float > 0
        Scale of the class prototypes; larger is easier.
    deformation, pixel_noise : float >= 0
        Scale of the shared deformations and of independent pixel noise.
    pixel_on : float in (0, 1)
        Probability that a pixel is lit; products of two pixels are then
        non-zero about ``pixel_on**2`` of the time (0.36 gives gisette's 13%).
    seed : int
        Seed of the one ``numpy.random.Generator`` behind every draw.

    Returns
    -------
    Dataset
        Dense float64 arrays scaled to [-1, 1] with training ranges; labels
        balanced +-1 in a random order. ``provenance`` records the parameters,
        the measured share of non-zeros before scaling and the mean row norm.
    """
    n_train = _integer("n_train", n_train, 1)
    n_test = _integer("n_test", n_test, 1)
    n_features = _integer("n_features", n_features, 1)
    probe_fraction = _real("probe_fraction", probe_fraction, 0.0, 1.0)
    n_pixels = _integer("n_pixels", n_pixels, 2)
    n_modes = _integer("n_modes", n_modes, 1)
    separation = _real("separation", separation, 0.0, open_low=True)
    deformation = _real("deformation", deformation, 0.0)
    pixel_noise = _real("pixel_noise", pixel_noise, 0.0)
    pixel_on = _real("pixel_on", pixel_on, 0.0, 1.0, open_low=True)
    seed = _integer("seed", seed, 0)
    n_probes = round(probe_fraction * n_features)
    n_real = n_features - n_probes
    if n_real < 1:
        raise DataError(f"gisette-like: probe_fraction {probe_fraction:g} leaves no real feature among {n_features}")

    rng = np.random.default_rng(seed)
    n = n_train + n_test
    y = np.where(rng.permutation(n) < n // 2, 1.0, -1.0)

    # 1. Images: prototype of the class + shared deformations + noise,
    # thresholded so that a pixel is lit with probability pixel_on.
    prototypes = rng.standard_normal((2, n_pixels))
    modes = rng.standard_normal((n_modes, n_pixels)) * (deformation / np.sqrt(n_modes))
    field = separation * prototypes[(y > 0).astype(int)]
    field += rng.standard_normal((n, n_modes)) @ modes
    field += pixel_noise * rng.standard_normal((n, n_pixels))
    spread = np.sqrt(separation**2 + deformation**2 + pixel_noise**2)
    pixels = np.asfortranarray(np.maximum(field - spread * ndtri(1.0 - pixel_on), 0.0))
    del field

    # 2-3. Real features are products of pixel pairs; probes are real columns
    # shuffled across samples (same distribution, no signal). 5. Random order.
    order = rng.permutation(n_features)
    real_cols, probe_cols = order[:n_real], order[n_real:]
    X = np.empty((n, n_features), order="F")  # column-wise work below; values are layout-free
    first = rng.integers(0, n_pixels, n_real)
    second = (first + rng.integers(1, n_pixels, n_real)) % n_pixels  # a distinct pixel
    X[:, real_cols] = pixels[:, first] * pixels[:, second]
    del pixels
    for col, source in zip(probe_cols, rng.choice(real_cols, n_probes)):
        X[:, col] = X[rng.permutation(n), source]

    # 4. Quantize to 0..999 by each column's training maximum.
    top = X[:n_train].max(axis=0)
    X *= _LEVELS / np.where(top > 0, top, 1.0)
    np.floor(X, out=X)
    np.minimum(X, _LEVELS, out=X)
    nonzero = float(np.count_nonzero(X[:n_train]) / X[:n_train].size)

    # 6. LIBSVM's scaling to [-1, 1] with training ranges.
    X_train, X_test = X[:n_train].copy(), X[n_train:].copy()
    del X
    lo, hi = fit_minmax(X_train)
    apply_minmax(X_train, lo, hi, -1.0, 1.0)
    apply_minmax(X_test, lo, hi, -1.0, 1.0)

    params = {
        "n_train": n_train,
        "n_test": n_test,
        "n_features": n_features,
        "probe_fraction": probe_fraction,
        "n_pixels": n_pixels,
        "n_modes": n_modes,
        "separation": separation,
        "deformation": deformation,
        "pixel_noise": pixel_noise,
        "pixel_on": pixel_on,
        "seed": seed,
    }
    return Dataset(
        name="synthetic",
        X_train=X_train,
        y_train=y[:n_train],
        X_test=X_test,
        y_test=y[n_train:],
        description=(
            f"gisette-like synthetic data ({n_train}/{n_test} x {n_features}, {n_probes} probes, seed {seed})"
        ),
        is_stand_in=False,
        checksums={},
        provenance={
            "source": "generated",
            "generator": "vfl.datasets.make_gisette_like",
            "params": params,
            "n_informative": n_real,
            "nonzero_fraction_before_scaling": round(nonzero, 4),
            "mean_row_norm": round(float(np.linalg.norm(X_train, axis=1).mean()), 2),
            "scaling": "quantized to 0..999, then min/max per feature to [-1, 1] (train ranges)",
        },
    )
