"""Generic privacy accounting: compose the releases a solver reports, per protected unit.

Every iteration a solver lists its noisy releases as
:class:`~vfl.core.releases.Release` events (mechanism, units, enforced
sensitivity, noise scale). A :class:`PrivacyLedger` composes them
adaptively per unit (party, provider, agent) and reports the worst unit's
epsilon at the run's delta:

- Gaussian releases only: ``T`` Gaussians compose exactly to one Gaussian
  with noise multiplier ``(sum_k (Delta_k / sigma_k)^2)^(-1/2)``, whose exact
  epsilon (Balle and Wang 2018) is what dp-accounting's PLD approaches from
  above; ``accountant = "rdp"`` gives the looser RDP bound instead;
- any Laplace release: Renyi DP (Mironov 2017, Prop. 6, exact per order, at
  the l1 sensitivity) summed over the releases and converted by
  dp-accounting; the pure epsilon ``sum_k Delta_k / b_k`` (basic
  composition) is kept beside it. A release that also states an enforced l2
  bound ``Delta_2`` (:attr:`~vfl.core.releases.Release.l2_sensitivity`) is
  charged ``min(that, alpha Delta_2^2 / (2 b^2))`` per order: each coordinate
  is ``|shift_j| / b``-DP, hence ``(|shift_j| / b)^2 / 2``-zCDP (Bun and
  Steinke 2016, Prop. 3.3), and the coordinates' noises are independent. The
  l1 bound alone treats the shift as if it sat on one coordinate; a shift of
  d equal coordinates has d times less RDP.

A release whose sensitivity is NaN (nothing enforced) makes the ledger
unsound: its epsilon is NaN, never a number that looks like a guarantee.
"""

from __future__ import annotations

import copy

import numpy as np
import numpy.typing as npt

from vfl.core import gaussian
from vfl.core.arrays import FloatArray
from vfl.core.releases import Release

__all__ = ["PrivacyLedger", "compose"]


class PrivacyLedger:
    """``relation``: the ledger composes the releases of that relation only (``"features"``,
    ``"labels"``: :attr:`~vfl.core.releases.Release.relation`); randomized response (pure
    epsilon-DP, ``sensitivity / scale = epsilon``) is composed as a pure-DP release."""

    def __init__(self, delta: float, accountant: str = "pld", relation: str = "features"):
        from dp_accounting.rdp import rdp_privacy_accountant  # lazy: start-up (dp_accounting, 0.3 s)

        self.relation = relation
        self.delta = float(delta)
        self.accountant = accountant
        self._orders: FloatArray = np.asarray(rdp_privacy_accountant.DEFAULT_RDP_ORDERS, dtype=float)
        self._gauss = np.zeros(0)  # sum (Delta / sigma)^2 per unit
        self._lap_rdp = np.zeros((0, self._orders.size))
        self._lap_pure = np.zeros(0)
        self._lap_l2 = np.zeros(0)  # sum (Delta_2 / b)^2 per unit (inf: some release had no l2)
        self.unsound = False
        self.laplace = False
        self.exact = False  # some release drawn by the exact discrete sampler
        #: RDP spent before the run on every record, per order: private tuning's
        #: (:meth:`add_rdp`); composed by RDP
        self._extra = np.zeros(self._orders.size)

    def add_rdp(self, curve: npt.ArrayLike) -> None:
        """Charge every unit an RDP curve (at dp-accounting's default orders) spent outside
        the releases, e.g. private hyper-parameter tuning before the run."""
        curve = np.asarray(curve, dtype=float)
        if curve.shape != self._orders.shape or not np.all(np.isfinite(curve)):
            raise ValueError("an RDP curve needs one finite value per default order")
        self._extra = self._extra + curve

    @property
    def orders(self) -> np.ndarray:
        return self._orders

    def _rdp(self) -> np.ndarray:
        """Each unit's RDP per order: its releases and what was spent before the run."""
        return self._lap_rdp + self._gauss[:, None] * self._orders[None, :] / 2.0 + self._extra[None, :]

    def _distinct_rdp(self) -> np.ndarray:
        """The distinct rows of :meth:`_rdp`: units that spent alike (a thousand agents) are
        converted to epsilon or delta once, and the worst unit is the worst of these."""
        return np.unique(self._rdp(), axis=0)

    def _grow(self, n: int) -> None:
        if n > self._gauss.size:
            pad = n - self._gauss.size
            self._gauss = np.r_[self._gauss, np.zeros(pad)]
            self._lap_pure = np.r_[self._lap_pure, np.zeros(pad)]
            self._lap_l2 = np.r_[self._lap_l2, np.zeros(pad)]
            self._lap_rdp = np.vstack([self._lap_rdp, np.zeros((pad, self._orders.size))])

    def add(self, releases: list[Release]) -> None:
        for r in releases:
            if r.units.size == 0 or r.relation != self.relation:
                continue
            if not np.all(np.isfinite(r.sensitivity)) or np.any(r.sensitivity <= 0):
                self.unsound = True
                continue
            self._grow(int(r.units.max()) + 1)
            ratio = r.sensitivity / r.scale  # 1/z (Gaussian) or pure epsilon (Laplace)
            self.exact |= r.exact
            if r.mechanism == "gaussian":
                # the discrete Gaussian has the continuous one's RDP (Canonne et al. 2020)
                np.add.at(self._gauss, r.units, ratio**2)
            elif r.mechanism == "laplace":
                self.laplace = True
                np.add.at(self._lap_pure, r.units, ratio)
                orders = self._orders[None, :]
                # the discrete Laplace: only what every eps-DP mechanism has, min(eps, a eps^2/2)
                rdp = (
                    np.minimum(ratio[:, None], orders * ratio[:, None] ** 2 / 2)
                    if r.exact
                    else _laplace_rdp(ratio[:, None], orders)
                )
                l2 = (
                    np.full(ratio.shape, np.inf)
                    if r.l2_sensitivity is None
                    else np.where(
                        np.isfinite(r.l2_sensitivity) & (r.l2_sensitivity > 0), r.l2_sensitivity / r.scale, np.inf
                    )
                )
                rdp = np.minimum(rdp, orders * l2[:, None] ** 2 / 2)
                np.add.at(self._lap_l2, r.units, l2**2)
                np.add.at(self._lap_rdp, r.units, rdp)
            elif r.mechanism == "randomized_response":
                # pure epsilon-DP (Warner 1965): every eps-DP mechanism's min(eps, a eps^2 / 2)
                self.laplace = True
                np.add.at(self._lap_pure, r.units, ratio)
                np.add.at(self._lap_l2, r.units, np.inf)
                np.add.at(
                    self._lap_rdp, r.units, np.minimum(ratio[:, None], self._orders[None, :] * ratio[:, None] ** 2 / 2)
                )
            else:
                self.unsound = True  # a mechanism this ledger cannot compose

    def with_releases(self, releases: list[Release]) -> PrivacyLedger:
        """A copy with ``releases`` added (to look one iteration ahead)."""
        other = copy.deepcopy(self)
        other.add(releases)
        return other

    @property
    def gaussian_only(self) -> bool:
        return not self.laplace and not self.unsound

    def gaussian_mu(self) -> float:
        """The worst unit's GDP parameter ``mu = sqrt(sum (Delta/sigma)^2)`` (Gaussian only)."""
        return float(np.sqrt(self._gauss.max())) if self._gauss.size else 0.0

    @property
    def method(self) -> str:
        tuned = " with the tuning's RDP" if self._extra.any() else ""
        if self.exact:
            return f"rdp (exact discrete noise){tuned}"
        if self.laplace or self.accountant == "rdp" or tuned:
            return f"rdp{tuned}"
        return "exact Gaussian composition (= the PLD limit)"

    def _exact_gaussian(self) -> bool:
        return not self.laplace and self.accountant != "rdp" and not self.exact and not self._extra.any()

    def epsilon(self) -> float:
        """The worst unit's epsilon at :attr:`delta` (NaN if unsound, 0 before any release)."""
        if self.unsound:
            return float("nan")
        if self._gauss.size == 0 and not self._extra.any():
            return 0.0
        if self.delta == 0 and not np.any(self._gauss > 0) and not self._extra.any():
            return self.pure_epsilon()  # pure releases alone, at delta 0
        if self._exact_gaussian():
            worst = float(self._gauss.max())  # the worst unit's sum of z_k^-2
            # (z_eff as the accountants compute it, so the numbers are theirs to the bit)
            z = float(np.sum(np.array([worst**-0.5]) ** -2.0)) ** -0.5
            return 0.0 if worst == 0 else gaussian.epsilon(z, self.delta)
        from dp_accounting.rdp import rdp_privacy_accountant  # lazy: start-up (dp_accounting, 0.3 s)

        self._grow(1)
        rdp = self._distinct_rdp()
        eps = float(max(rdp_privacy_accountant.compute_epsilon(self._orders, row, self.delta)[0] for row in rdp))
        # Laplace only: basic composition is (eps, 0)-DP too, and sometimes smaller
        return min(eps, self.pure_epsilon()) if not np.any(self._gauss > 0) and not self._extra.any() else eps

    def laplace_mu(self) -> float:
        """The worst unit's ``sqrt(sum (Delta_2 / b)^2)`` over its Laplace releases: the
        zCDP-equivalent GDP scale of the l2 charge (inf when some release stated no l2
        bound; 0 before any)."""
        return float(np.sqrt(self._lap_l2.max())) if self._lap_l2.size else 0.0

    def delta_at(self, epsilon: npt.ArrayLike) -> np.ndarray:
        """The claimed profile: the worst unit's ``delta(epsilon)`` for each epsilon.

        Gaussian only: the exact composed Gaussian's; otherwise RDP converted by
        dp-accounting (and 0 at or above the pure epsilon of a Laplace-only
        ledger). NaN if unsound.
        """
        eps = np.atleast_1d(np.asarray(epsilon, dtype=float))
        if self.unsound:
            return np.full(eps.shape, np.nan)
        if self._gauss.size == 0 and not self._extra.any():
            return np.zeros(eps.shape)
        if self._exact_gaussian():
            worst = float(self._gauss.max())
            if worst == 0:
                return np.zeros(eps.shape)
            z = 1.0 / float(np.sqrt(np.sum(np.array([worst**-0.5]) ** -2.0)))  # 1 / mu
            return np.exp([gaussian.log_delta(float(e), z) for e in eps])
        from dp_accounting.rdp import rdp_privacy_accountant  # lazy: start-up (dp_accounting, 0.3 s)

        self._grow(1)
        rdp = self._distinct_rdp()
        out = np.array(
            [max(rdp_privacy_accountant.compute_delta(self._orders, row, float(e))[0] for row in rdp) for e in eps]
        )
        if not np.any(self._gauss > 0) and not self._extra.any():
            out = np.where(eps >= self.pure_epsilon(), 0.0, out)
        return out

    def pure_epsilon(self) -> float:
        """Basic composition of the Laplace releases (delta = 0); NaN with Gaussians."""
        if self.unsound or np.any(self._gauss > 0):
            return float("nan")
        return float(self._lap_pure.max()) if self._lap_pure.size else 0.0


def compose(ledgers: list[PrivacyLedger], *, same_units: bool) -> PrivacyLedger:
    """One ledger for independent runs on the same records, in sequence (a run's repeats).

    ``same_units``: unit ``u`` holds the same records in every run (a vertical
    run's parties), so the runs' charges add per unit. Otherwise the rows are
    dealt afresh in each run (providers, agents), so a record may sit at any
    unit of each: every run adds its worst unit's charge, accumulator by
    accumulator (the Gaussian sum, the Laplace RDP per order, the pure and l2
    sums), into one unit. That bounds every record's composed RDP (each
    unit's curve lies under the per-order maxima), and is exact for Gaussian
    releases of equal weight.
    """
    if not ledgers:
        raise ValueError("compose needs at least one ledger")
    first = ledgers[0]
    if any(x.delta != first.delta or x.accountant != first.accountant for x in ledgers):
        raise ValueError("ledgers of different delta or accountant do not compose into one")
    out = PrivacyLedger(first.delta, first.accountant)
    n = max(x._gauss.size for x in ledgers) if same_units else min(1, max(x._gauss.size for x in ledgers))
    out._grow(n)
    for x in ledgers:
        out.unsound |= x.unsound
        out.laplace |= x.laplace
        out.exact |= x.exact
        out._extra = np.maximum(out._extra, x._extra)  # spent once before the runs
        if x._gauss.size == 0:
            continue
        if same_units:
            k = x._gauss.size
            out._gauss[:k] += x._gauss
            out._lap_pure[:k] += x._lap_pure
            out._lap_l2[:k] += x._lap_l2
            out._lap_rdp[:k] += x._lap_rdp
        else:
            out._gauss += x._gauss.max()
            out._lap_pure += x._lap_pure.max()
            out._lap_l2 += x._lap_l2.max()
            out._lap_rdp += x._lap_rdp.max(axis=0)
    return out


def _laplace_rdp(eps: FloatArray, a: FloatArray) -> FloatArray:
    """RDP of order ``a > 1`` of the Laplace mechanism with pure epsilon ``eps`` (Mironov, Prop. 6).

    Vectorized; the orders used (dp-accounting's defaults) are >= 1.1, where
    the closed form is stable.
    """
    return eps + np.log1p((a - 1) * np.expm1(eps * (1 - 2 * a)) / (2 * a - 1)) / (a - 1)
