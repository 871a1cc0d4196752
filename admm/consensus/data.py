"""The providers' data: the split of Sec. VI and the row bound the guarantees assume."""

from __future__ import annotations

import numpy as np

from vfl.core.layouts import HorizontalData

from .schedules import ROW_TOLERANCE


def split_providers(
    X,
    y,
    *,
    providers: int,
    samples_per_provider: int,
    public: int = 0,
    test: int | None = None,
    rng: np.random.Generator,
):
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
    for name, v, low in (
        ("providers", providers, 1),
        ("public", public, 0),
        ("samples_per_provider", samples_per_provider, 1),
    ):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < low:
            raise ValueError(f"{name} must be an integer >= {low}, got {v!r}")
    if test is not None and (isinstance(test, bool) or not isinstance(test, (int, np.integer)) or test < 0):
        raise ValueError(f"test must be an integer >= 0 or None, got {test!r}")
    if not isinstance(rng, np.random.Generator):
        raise ValueError("rng must be a numpy Generator")
    n, d = X.shape
    n_train = providers * samples_per_provider
    need = public + n_train + (test or 0)
    if need > n:
        raise ValueError(
            f"{public} public + {providers} x {samples_per_provider} provider"
            f"{'' if test is None else f' + {test} test'} rows = {need} > {n} rows"
        )
    perm = rng.permutation(n)
    pub, train = perm[:public], perm[public : public + n_train]
    rest = perm[public + n_train :]
    held = rest if test is None else rest[:test]
    data = HorizontalData(
        A=X[train].reshape(providers, samples_per_provider, d),
        b=y[train].reshape(providers, samples_per_provider),
        public=(X[pub], y[pub]) if public else None,
    )
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
    if not np.all(np.isfinite(norms)):  # NaN passes no bound (NaN > 1 is False)
        raise ValueError(
            "a provider row holds a value that is not a finite number (NaN or inf); the sensitivity needs ||a|| <= 1"
        )
    worst = float(norms.max(initial=0.0))
    if mode == "check" and not worst <= 1.0 + ROW_TOLERANCE:
        raise ValueError(
            f"a provider row has l2 norm {worst:.6g} > 1; the sensitivity needs "
            "||a|| <= 1: normalize the rows (adult: row_norm = 'unit' or 'max') "
            "or clip them: preprocessing.row_clip = 1.0"
        )
    over = norms > 1.0
    if over.any():
        A = A.copy()
        A[over] *= ((1.0 - 4.0 * np.finfo(float).eps) / norms[over])[:, None]
    return A, int(over.sum())
