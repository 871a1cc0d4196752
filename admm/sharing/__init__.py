"""ADMM sharing over vertically partitioned features (Hu et al. 2019, Algorithm 1),
its differentially private variant (updates (10)), and faster variants of it.

Problem (3)-(4): minimize ``l(z) + lam * sum_m ||x_m||^2`` subject to
``sum_m D_m x_m = z``. One epoch of Algorithm 1 is a Jacobi sweep:

- (6) every party m, in parallel, using the other parties' shares from the
  previous epoch::

      x_m <- argmin lam ||x_m||^2 + <y, D_m x_m>
                    + rho/2 || sum_{k != m} D_k x_k + D_m x_m - z ||^2

  then pushes its share ``s_m = D_m x_m`` (one value per sample);
- (7) the central node: ``z <- argmin l(z) - <y, z> + rho/2 ||sum_m s_m - z||^2``,
  N independent scalar problems;
- (8) ``y <- y + rho (sum_m s_m - z)``.

With the l2 regularizer, (6) is the linear system
``(2 lam I + rho D_m^T D_m) x_m = D_m^T (rho v - y)`` with
``v = z - sum_{k != m} s_k``; its matrix never changes, so it is factored
once per party (:class:`BlockSolver`) and every epoch costs two passes over
``D_m`` plus a triangular solve.

Variants (options of :class:`ADMMSharing`; the defaults are Algorithm 1 and
replay it bit for bit). Every one exchanges the same messages (one value per
sample per party per epoch) and changes only what is done with public values
(the published shares, ``z`` and ``y``), so each epoch releases exactly what
Algorithm 1 releases. Each option is resolved once, when the solver is built,
into a strategy object of one of these modules:

- :mod:`.forms`: ``form`` (Hu's Jacobi update, or the sharing ADMM of Boyd et
  al. 2011, section 7.3, convergent for any ``rho > 0``), ``order`` (Jacobi or
  Gauss-Seidel), ``z_update`` (safeguarded or plain Newton on (7)) and the
  feasible set ``X_m`` (the ``b1`` ball of Assumption 2.1, projected or exact);
- :mod:`.acceleration`: ``relaxation`` (Eckstein and Bertsekas 1992),
  ``acceleration = "nesterov_restart"`` (Goldstein et al. 2014, Algorithm 8)
  and ``"anderson"`` (Zhang, O'Donoghue and Boyd 2020);
- :mod:`.penalty`: ``rho_schedule`` (fixed, or the spectral penalty of Xu,
  Figueiredo and Goldstein, AISTATS 2017);
- :mod:`.noise`: the noise form of the perturbed shares (updates (10)).

``blas_threads=k`` limits BLAS to k threads inside each epoch (threadpoolctl),
restored afterwards.

The registered solver (:class:`ADMMSharingSolver`, :mod:`.admm_sharing`) adds
accounting mode: the neighbouring relations (:mod:`.relations`) and the
privacy plan (:mod:`.accounting`). All of it is pure computation: no files,
no printing, no global state (``blas_threads`` changes the BLAS thread count
only inside an epoch).
"""

from .accounting import CALIBRATIONS
from .admm_sharing import ADMMSharingSolver
from .block import BlockSolver
from .iteration import (
    ACCELERATIONS,
    FORMS,
    ORDERS,
    RHO_SCHEDULES,
    Z_UPDATES,
    ADMMSharing,
    check_variant,
)
from .noise import NOISE_FORMS

__all__ = [
    "ACCELERATIONS",
    "ADMMSharing",
    "ADMMSharingSolver",
    "BlockSolver",
    "CALIBRATIONS",
    "FORMS",
    "NOISE_FORMS",
    "ORDERS",
    "RHO_SCHEDULES",
    "Z_UPDATES",
    "check_variant",
]
