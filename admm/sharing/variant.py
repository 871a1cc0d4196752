"""The variant options of :class:`~vfl.admm.sharing.iteration.ADMMSharing`: their choices
and the check of their combinations, before anything is built; how rho follows the number
of parties, and the BLAS threads the blocks' storage calls for."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .acceleration import ACCELERATION
from .forms import ORDER, SHARING, Z_UPDATE
from .penalty import RHO_SCHEDULE

__all__ = [
    "ACCELERATIONS",
    "FORMS",
    "ORDERS",
    "RHO_PARTIES",
    "RHO_SCHEDULES",
    "Z_UPDATES",
    "blas_threads_for",
    "check_variant",
    "scaled_rho",
]

FORMS = tuple(SHARING)
ORDERS = tuple(ORDER)
RHO_SCHEDULES = tuple(RHO_SCHEDULE)
ACCELERATIONS = tuple(ACCELERATION)
Z_UPDATES = tuple(Z_UPDATE)


def _check_option(name, value, choices):
    if value not in choices:
        raise ValueError(f"{name} must be one of {choices}, got {value!r}")


def _positive_or_none(name, value):
    if value is not None and not (isinstance(value, (int, float)) and np.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")


def check_variant(
    *,
    form="hu",
    order="jacobi",
    relaxation=1.0,
    rho_schedule="fixed",
    rho_min=None,
    rho_max=None,
    rho_every=2,
    rho_change=10.0,
    acceleration="none",
    anderson_memory=5,
    z_update="safeguarded",
    blas_threads=None,
    rho=None,
) -> None:
    """Validate the variant options of :class:`ADMMSharing` (``ValueError`` on bad ones).

    Forbidden combinations: Gauss-Seidel order in the Boyd form (the Boyd form
    is the Jacobi ADMM of a two-block problem; in turn, it is neither);
    acceleration with an adaptive penalty (both change the map the other one
    relies on); ``rho_min``/``rho_max``/``rho_every`` without the spectral
    schedule (they would be silently ignored); Nesterov momentum in Hu's
    Jacobi form (a two-block method; measured on a9a it restarts all the time
    and is slower than no acceleration: rho = 1 not at 1e-4 after 400 epochs,
    Algorithm 1 needs 257).
    """
    _check_option("form", form, FORMS)
    _check_option("order", order, ORDERS)
    _check_option("rho_schedule", rho_schedule, RHO_SCHEDULES)
    _check_option("acceleration", acceleration, ACCELERATIONS)
    _check_option("z_update", z_update, Z_UPDATES)
    if not (isinstance(relaxation, (int, float)) and 0.0 < relaxation < 2.0):
        raise ValueError(f"relaxation must be in (0, 2) (over-relaxation needs alpha < 2), got {relaxation!r}")
    _positive_or_none("rho_min", rho_min)
    _positive_or_none("rho_max", rho_max)
    if not (isinstance(rho_every, (int, np.integer)) and rho_every >= 1):
        raise ValueError(f"rho_every must be an integer >= 1, got {rho_every!r}")
    if not (isinstance(rho_change, (int, float)) and np.isfinite(rho_change) and rho_change > 1):
        raise ValueError(f"rho_change must be a finite number > 1, got {rho_change!r}")
    if not (isinstance(anderson_memory, (int, np.integer)) and anderson_memory >= 1):
        raise ValueError(f"anderson_memory must be an integer >= 1, got {anderson_memory!r}")
    if blas_threads is not None and not (isinstance(blas_threads, (int, np.integer)) and blas_threads >= 1):
        raise ValueError(f"blas_threads must be an integer >= 1, got {blas_threads!r}")
    if order == "gauss_seidel" and form == "boyd":
        raise ValueError(
            "order = 'gauss_seidel' needs form = 'hu': the Boyd form is the Jacobi update of a two-block ADMM"
        )
    if rho_schedule == "fixed":
        for name, value, default in (
            ("rho_min", rho_min, None),
            ("rho_max", rho_max, None),
            ("rho_every", rho_every, 2),
            ("rho_change", rho_change, 10.0),
        ):
            if value != default:
                raise ValueError(f"{name} applies to rho_schedule = 'spectral' only")
    if rho_min is not None and rho_max is not None and rho_min > rho_max:
        raise ValueError(f"rho_min = {rho_min:g} exceeds rho_max = {rho_max:g}")
    if rho is not None and rho_schedule == "spectral":
        if rho_min is not None and rho < rho_min or rho_max is not None and rho > rho_max:
            raise ValueError(f"the initial rho = {rho:g} is outside [rho_min, rho_max]")
    if acceleration != "none" and rho_schedule != "fixed":
        raise ValueError(
            f"acceleration = {acceleration!r} needs rho_schedule = 'fixed' "
            "(momentum and Anderson extrapolate one fixed map)"
        )
    if acceleration == "nesterov_restart" and form != "boyd":
        raise ValueError(
            "acceleration = 'nesterov_restart' needs form = 'boyd' (Goldstein et "
            "al.'s fast ADMM is a two-block method; on Hu's Jacobi form it is "
            "slower than no acceleration)"
        )
    if acceleration != "anderson" and anderson_memory != 5:
        raise ValueError("anderson_memory applies to acceleration = 'anderson' only")


#: ``solver.rho_parties``: how rho follows the number of parties
RHO_PARTIES = ("fixed", "scaled")
#: the exponent of the scaled rule, rho(M) = rho (2/M)^0.6, fitted on a9a (Boyd form,
#: relaxation 1.8): epochs to 1e-4 at M = 2/4/8/16 are 15/34/52/58 (fixed rho: 15/47/96/171);
#: a 1/M rule over-shrinks (100 at M = 16) and 1/sqrt(M) is 62
RHO_PARTIES_EXPONENT = 0.6


def scaled_rho(rho: float, parties: int, rule: str) -> float:
    """The penalty a run of ``parties`` parties uses under ``solver.rho_parties = rule``;
    M = 2 is ``rho`` exactly."""
    return rho * (2.0 / parties) ** RHO_PARTIES_EXPONENT if rule == "scaled" else rho


def blas_threads_for(blocks, asked: int | None) -> int | None:
    """``solver.blas_threads``, or when unset the count the blocks' storage calls for.

    Sparse blocks: 1. scipy's sparse products use no BLAS, so extra BLAS threads
    only spin on the epoch's N-vector work (bit-identical either way: a9a's runs
    agree to the bit at 1 and 2 threads). Dense blocks: untouched, because their
    products are BLAS GEMV and GEMM (a gisette-shaped epoch costs 0.91x its memory
    floor at 2 threads, 1.70x at one). Blocks on Dask workers (``None`` here) run
    as their worker's process is set up.
    """
    if asked is not None or blocks is None:
        return asked
    return 1 if all(sp.issparse(D) for D in blocks) else None
