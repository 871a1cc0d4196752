"""Additive secret sharing of the exchanged sums (Xiao et al., Theorem 2.1, Algorithm 3).

Consensus ADMM and GD on a complete graph need only the network sum
``S = sum_i x_i`` of the agents' vectors (agent i then uses ``S - x_i``).
Algorithm 3 computes it without revealing any single ``x_i`` to a coalition
of at most ``N - 2`` semi-honest agents:

1. agent i encodes ``x_i`` as an element ``q_i`` of the ring ``Z_p`` and splits
   it into ``N`` shares ``s_ij``, uniform on ``Z_p`` subject to
   ``sum_j s_ij = q_i (mod p)``; it sends ``s_ij`` to agent j over a secure
   pairwise channel and keeps ``s_ii``;
2. agent j broadcasts its partial sum ``s^_j = sum_i s_ij (mod p)``;
3. everyone decodes ``S = sum_j s^_j (mod p)`` (eq. (15)).

Reals are fixed-point encoded, ``q = round(x 2^f)``, and signed values are
mapped to ``Z_p`` by two's complement, so ``p`` must exceed twice the largest
encoded aggregate (Xiao et al. 2019, App. A, ask only for ``p > ||S||_inf``,
which is not enough for signed fixed-point values). Here ``p = 2^bits``
(additive sharing needs a ring, not a field; ``bits = 64`` is native
``uint64`` wrap-around arithmetic), and every agent refuses to encode a value
whose magnitude exceeds ``capacity`` = ``(2^(bits-1) - 1) / (N 2^f)``: a check
each agent can make locally, and which guarantees that no aggregate of ``N``
accepted values can wrap.

Uniform shares over ``Z_p`` make any ``N - 1`` of one agent's shares jointly
uniform and independent of its value; real-valued random splits do not
(their sum with the value is not uniform), which is why the encoding matters.
The pairwise channels are simulated in memory: ``shares[i, j]`` is the
message from agent i to agent j.
"""

from __future__ import annotations

import numpy as np

__all__ = ["AdditiveSecretSharing", "SecretSharingOverflowError"]


class SecretSharingOverflowError(ValueError):
    """A value too large for the fixed-point ring: its aggregate could wrap around."""


class AdditiveSecretSharing:
    """Additive ``N``-out-of-``N`` secret sharing over ``Z_{2^bits}`` with fixed-point reals.

    Parameters
    ----------
    parties : int, >= 3
        ``N``; Theorem 2.1 tolerates ``N - 2`` colluders, hence ``N >= 3``.
    bits : int in [4, 64]
        ``p = 2^bits``.
    fractional_bits : int in [0, bits - 2]
        ``f``: values are rounded to multiples of ``2^-f`` (the encoding
        precision; a decoded sum of ``N`` values is within ``N 2^-(f+1)`` of
        the exact one).
    """

    def __init__(self, parties: int, *, bits: int = 64, fractional_bits: int = 32):
        for name, v in (("parties", parties), ("bits", bits), ("fractional_bits", fractional_bits)):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
                raise ValueError(f"{name} must be an integer, got {v!r}")
        if parties < 3:
            raise ValueError(f"secret sharing needs parties >= 3 (Theorem 2.1), got {parties}")
        if not 4 <= bits <= 64:
            raise ValueError(f"bits must be in [4, 64], got {bits}")
        if not 0 <= fractional_bits <= bits - 2:
            raise ValueError(f"fractional_bits must be in [0, bits - 2 = {bits - 2}], got {fractional_bits}")
        self.parties = int(parties)
        self.bits = int(bits)
        self.fractional_bits = int(fractional_bits)
        self._mask = np.uint64((1 << bits) - 1) if bits < 64 else np.uint64(0xFFFFFFFFFFFFFFFF)
        # Largest |q| per agent so that |sum of N| <= 2^(bits-1) - 1.
        self._qmax = ((1 << (bits - 1)) - 1) // self.parties

    @property
    def modulus(self) -> int:
        """``p = 2^bits``."""
        return 1 << self.bits

    @property
    def resolution(self) -> float:
        """``2^-f``: the encoding step."""
        return 2.0**-self.fractional_bits

    @property
    def capacity(self) -> float:
        """Largest ``|x|`` an agent may encode: ``floor((2^(bits-1) - 1) / N) 2^-f``.

        (Rounded down to a float that still encodes within the bound.)
        """
        c = float(self._qmax)
        if int(c) > self._qmax:
            c = float(np.nextafter(c, 0.0))
        return float(np.ldexp(c, -self.fractional_bits))

    # -- encoding ---------------------------------------------------------
    def encode(self, values) -> np.ndarray:
        """``round(x 2^f) mod p`` as ``uint64``; refuses values beyond :attr:`capacity`."""
        v = np.asarray(values, dtype=float)
        if not np.all(np.isfinite(v)):
            raise SecretSharingOverflowError("secret sharing: cannot encode non-finite values")
        q = np.rint(np.ldexp(v, self.fractional_bits))
        # compare as integers: a float qmax can round up past the true bound
        fits = np.abs(q) < 2.0**62
        qi = np.where(fits, q, 0.0).astype(np.int64)
        if not fits.all() or np.any(np.abs(qi) > self._qmax):
            worst = float(np.max(np.abs(v)))
            raise SecretSharingOverflowError(
                f"secret sharing: |value| = {worst:.6g} exceeds the capacity "
                f"{self.capacity:.6g} of Z_(2^{self.bits}) with {self.fractional_bits} fractional "
                f"bits for {self.parties} agents (the aggregate could wrap around); use fewer "
                "fractional bits"
            )
        return qi.astype(np.uint64) & self._mask

    def decode(self, q) -> np.ndarray:
        """The signed real of ring elements (two's complement, then ``/ 2^f``)."""
        q = np.asarray(q, dtype=np.uint64) & self._mask
        if self.bits == 64:
            signed = q.view(np.int64)
        else:
            signed = q.astype(np.int64)
            signed = np.where(signed >= (1 << (self.bits - 1)), signed - (1 << self.bits), signed)
        return np.ldexp(signed.astype(float), -self.fractional_bits)

    # -- the protocol -----------------------------------------------------
    def _uniform(self, shape, rng: np.random.Generator) -> np.ndarray:
        return rng.integers(0, 1 << self.bits, size=shape, dtype=np.uint64, endpoint=False)

    def share(self, values, rng: np.random.Generator) -> np.ndarray:
        """Step 1: ``shares[i, j]`` is agent i's share for agent j, shape ``(N, N, ...)``.

        Each agent's ``N - 1`` outgoing shares are uniform on ``Z_p``; the one it
        keeps, ``shares[i, i]``, completes the sum to its encoded value.
        """
        if np.ndim(values) < 1 or np.shape(values)[0] != self.parties:
            raise ValueError(f"values must have one row per agent ({self.parties}), got shape {np.shape(values)}")
        return self.share_rows(values, rng, slice(0, self.parties))

    def share_rows(self, values, rng: np.random.Generator, rows: slice) -> np.ndarray:
        """Step 1 for agents ``rows`` only (where their values are): their shares
        ``(n, N, ...)``. The stream draws the whole network's shares and keeps these rows, so
        a group of agents sends what :meth:`share` gives them to the bit."""
        q = self.encode(values)
        n = self.parties
        shares = self._uniform((n, n) + q.shape[1:], rng)[rows]
        i = np.arange(q.shape[0])
        j = i + rows.start
        shares[i, j] = 0
        shares[i, j] = (q - shares.sum(axis=1, dtype=np.uint64)) & self._mask
        return shares

    def partial_sums(self, shares) -> np.ndarray:
        """Step 2: ``s^_j = sum_i shares[i, j] (mod p)``, what agent j broadcasts."""
        # shares[:, j] is agent j's inbox: one message per pairwise channel i -> j.
        return shares.sum(axis=0, dtype=np.uint64) & self._mask

    def reconstruct(self, partials) -> np.ndarray:
        """Step 3: ``S = sum_j s^_j (mod p)``, decoded (eq. (15))."""
        return self.decode(np.asarray(partials, dtype=np.uint64).sum(axis=0, dtype=np.uint64))

    def secure_sum(self, values, rng: np.random.Generator) -> np.ndarray:
        """``sum_i values[i]`` computed through the three steps (exact to the encoding)."""
        return self.reconstruct(self.partial_sums(self.share(values, rng)))

    def coalition_view(self, shares, coalition) -> dict:
        """Everything a set of colluding agents sees in one run of the protocol.

        ``received[c]``: the shares sent to each member (from every agent,
        including its own kept share); ``sent[c]``: the shares each member
        generated; ``broadcast``: every agent's partial sum.
        """
        c = np.asarray(coalition, dtype=int)
        return {"received": shares[:, c].swapaxes(0, 1), "sent": shares[c], "broadcast": self.partial_sums(shares)}

    def describe(self) -> dict:
        return {
            "scheme": "additive N-out-of-N over Z_p, uniform shares",
            "p": f"2^{self.bits}",
            "fractional_bits": self.fractional_bits,
            "capacity": self.capacity,
            "tolerates": f"{self.parties - 2} colluding semi-honest agents",
        }
